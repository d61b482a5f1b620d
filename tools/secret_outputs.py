"""Every output driftwatch writes for one unit, for the planted-secret harnesses: the corpus of
docs/secrets.md (tests/secrets/secrets_corpus.py) and the benchmark (benchmarks/plant_secrets.py).

One place, so that both look at the same outputs and a new output is added once. A leak is an output
where the planted secret, or any 8-character piece of it, appears (`leaked`).

- `cli_outputs`: through the CLI in-process (click's CliRunner: stdout and stderr): `show` (text,
  JSON --all), `check` (text, JSON), `compare` with the unit as the current side (every format) and as
  the baseline (text, JSON), `report` (text, JSON, HTML) and the mail built from that report (every
  part and the subject), `snapshot` into a store (its database rows, its `store export` files, every
  file written under it), `history` (text, JSON), `baseline save` (the YAML) and `baseline show`;
- `api_outputs`: for what only a live host supplies (EnvironmentFile= contents, the running process,
  start-up lines, probe answers): the snapshot built through the API, then its YAML, `show`, `compare`
  both ways in every format and a baseline file;
- `refused_outputs`: a unit systemd refuses: the one error line of each command.

An output that cannot be produced raises (the harness would otherwise check an error message and
call it clean); a unit driftwatch refuses is an error message, which is an output too.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

FORMATS = ("text", "json", "markdown", "html")


def leaked(text: str, secret: str) -> bool:
    """The secret, or any 8-character piece of it, appears in `text`; a secret shorter than 8 characters
    (``hunter2``) leaks where it appears as a word of its own (not inside a longer word)."""
    if len(secret) < 8:
        return re.search(r"(?<![A-Za-z0-9])" + re.escape(secret) + r"(?![A-Za-z0-9])", text) is not None
    return any(secret[j:j + 8] in text for j in range(len(secret) - 7))


def invoke(args: list, cwd: Path) -> str:
    """stdout and stderr of one CLI command run in-process in `cwd` (an exception's text too)."""
    from click.testing import CliRunner

    from driftwatch.cli import cli
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=True)
    finally:
        os.chdir(old)
    out = result.stdout + result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        out += f"\n{type(result.exception).__name__}: {result.exception}"
    return out


def mail_text(unit: Path, clean: Path) -> str:
    """Every part and the subject of the mail `report` sends for `unit` judged against `clean`."""
    from driftwatch.findings.judging import Judging
    from driftwatch.findings.rulebook import load_rules
    from driftwatch.notify.email import build_message
    from driftwatch.report.data import build_report
    from driftwatch.run.fleet import Judge
    from driftwatch.run.reading import snapshot_from_unit_file
    from driftwatch.snapshots.baseline import Baseline
    base = Baseline(name="clean", snapshot=snapshot_from_unit_file(str(clean)))
    doc = build_report(base, [Judge(base, Judging(load_rules(None))).unit_file(str(unit))])
    msg = build_message(doc, "dw@example.com", ["oncall@example.com"])
    return "\n".join(part.get_content() for part in msg.walk() if not part.is_multipart()) + str(msg["Subject"])


def store_rows(store: Path) -> str:
    """Every row of every table of a snapshot store's database (snapshots, the changes kept at save
    time, runs…), each column as text and each compressed document decompressed."""
    import sqlite3

    from driftwatch.snapshots.store_sql import _unpack
    db = sqlite3.connect(store / "store.db")
    try:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = [(table, row) for table in tables for row in db.execute(f'SELECT * FROM "{table}"')]
    finally:
        db.close()
    if not any(table == "snapshots" for table, _ in rows):
        raise AssertionError(f"no snapshot row in {store / 'store.db'}")
    return "\n".join(table + ": " + " ".join(json.dumps(_unpack(v)) if isinstance(v, bytes) else str(v) for v in row)
                     for table, row in rows)


def cli_outputs(unit: Path, clean: Path, work: Path) -> dict[str, str]:
    """Every CLI output for `unit` (the planted one), with `clean` as the other side."""
    out: dict[str, str] = {}
    out["show text"] = invoke(["show", "--unit-file", unit, "--all"], work)
    out["show json"] = invoke(["show", "--unit-file", unit, "--all", "--format", "json"], work)
    out["check text"] = invoke(["check", "--unit-file", unit], work)
    out["check json"] = invoke(["check", "--unit-file", unit, "--format", "json"], work)
    for fmt in FORMATS:
        out[f"compare (current) {fmt}"] = invoke(["compare", "--baseline", clean, "--unit-file", unit,
                                                  "--format", fmt], work)
    for fmt in ("text", "json"):
        out[f"compare (baseline) {fmt}"] = invoke(["compare", "--baseline", unit, "--unit-file", clean,
                                                   "--format", fmt], work)
    for fmt in ("text", "json", "html"):
        out[f"report {fmt}"] = invoke(["report", "--baseline", clean, "--unit-file", unit, "--format", fmt], work)
    out["mail"] = mail_text(unit, clean)
    store = work / "store"
    out["snapshot stdout"] = invoke(["snapshot", "--unit-file", clean, "--store", store], work)
    out["snapshot stdout"] += invoke(["snapshot", "--unit-file", unit, "--store", store], work)
    out["store files"] = "\n".join(p.read_text(errors="replace") for p in sorted(store.rglob("*")) if p.is_file())
    out["store rows"] = store_rows(store)
    exported = work / "exported"  # what the database holds, written out as YAML files
    out["snapshot stdout"] += invoke(["store", "export", "--store", store, "-o", exported], work)
    files = [p for p in sorted(exported.rglob("*.yaml")) if p.is_file()]
    if not files:
        raise AssertionError(f"store export wrote no snapshot file: {out['snapshot stdout']}")
    out["store file snapshot"] = "\n".join(p.read_text(errors="replace") for p in files)
    for fmt in ("text", "json"):
        out[f"history {fmt}"] = invoke(["history", "--store", store, "--format", fmt], work)
    baselines = work / "bl"
    out["baseline save"] = invoke(["baseline", "save", "p", "--unit-file", unit, "--baselines-dir", baselines], work)
    out["baseline file"] = (baselines / "p.yaml").read_text()
    out["baseline show text"] = invoke(["baseline", "show", "p", "--baselines-dir", baselines], work)
    out["baseline show json"] = invoke(["baseline", "show", "p", "--baselines-dir", baselines, "--format", "json"],
                                       work)
    return out


def refused_outputs(unit: Path, clean: Path, work: Path) -> dict[str, str]:
    """The error of each command on a unit systemd refuses (the message must not echo a secret)."""
    return {
        "show error": invoke(["show", "--unit-file", unit], work),
        "check error": invoke(["check", "--unit-file", unit], work),
        "compare error": invoke(["compare", "--baseline", clean, "--unit-file", unit], work),
        "report error": invoke(["report", "--baseline", clean, "--unit-file", unit, "--format", "json"], work),
        "snapshot error": invoke(["snapshot", "--unit-file", unit, "--store", work / "store"], work),
    }


def api_outputs(raw_fields: dict, text: str, clean_text: str, secret: str) -> dict[str, str]:
    """The outputs of a unit with what only a live host supplies (`raw_fields`: RawUnit fields, "{S}"
    replaced by `secret`; `probe` answers as text): its snapshot built through the API, then rendered."""
    from driftwatch.collect.raw import RawUnit
    from driftwatch.fileio import dump_yaml
    from driftwatch.findings.compare import compare
    from driftwatch.findings.rulebook import load_rules
    from driftwatch.report import get_format
    from driftwatch.report.data import comparison_to_dict
    from driftwatch.report.show import render_show
    from driftwatch.snapshots.baseline import Baseline, baseline_to_dict
    from driftwatch.snapshots.snapshot import build_snapshot, snapshot_to_dict

    extra = json.loads(json.dumps(raw_fields).replace("{S}", secret))
    if "probe" in extra:
        extra["probe"] = {k: v.encode() for k, v in extra["probe"].items()}
    raw = RawUnit(host="h1", unit="planted.service", text=text, source="systemctl cat", **extra)
    try:
        snap = build_snapshot(raw)
    except Exception as exc:  # noqa: BLE001 - an error message is an output too
        return {"api build_snapshot error": f"{type(exc).__name__}: {exc}"}
    out = {"store file snapshot": dump_yaml(snapshot_to_dict(snap)),
           "show text": render_show(snap, "text", True), "show json": render_show(snap, "json", True)}
    clean = build_snapshot(RawUnit(host="h0", unit="planted.service", text=clean_text, source="file"))
    rules = load_rules(None)
    for label, base, cur in (("current", clean, snap), ("baseline", snap, clean)):
        doc = comparison_to_dict(compare(Baseline(name="b", snapshot=base), cur, rules))
        for fmt in FORMATS:
            out[f"compare ({label}) {fmt}"] = get_format(fmt).render_comparison(doc)
    out["baseline file"] = dump_yaml(baseline_to_dict(Baseline(name="b", snapshot=snap)))
    return out
