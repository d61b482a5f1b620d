"""report/document.py says the shape of every document driftwatch writes: the documents the CLI really
writes on the examples (compare, a fleet report with "since" from a store and a shard, a history with a
baseline) hold every key their TypedDict requires and no key it does not name, all the way down. A
builder that adds a key without declaring it (or a type that names a key nobody writes) fails here."""
from __future__ import annotations

import json
import re
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner

from driftwatch.cli import cli
from driftwatch.notify.state import mark_changes
from driftwatch.report import document

ROOT = Path(__file__).resolve().parents[2]
UNITS = [ROOT / "examples" / name for name in ("sglang-qwen-40toks.service", "sglang-qwen-70toks.service",
                                               "vllm-qwen-mtp1-eager.service")]
TYPED = {name: value for name, value in vars(document).items()
         if isinstance(value, type) and typing.is_typeddict(value)}


def _annotation_text(annotation) -> str:
    """The annotation as written (the module's are strings, PEP 563; the functional EpisodeDoc's are types)."""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, typing.ForwardRef):
        return annotation.__forward_arg__
    return re.sub(r"\b[\w.]+\.(\w+)\b", r"\1", repr(annotation)).replace("typing.", "")


def _fields(td: type) -> tuple[dict[str, str], set[str]]:
    """{key: annotation text} and the keys that must be there (NotRequired read from the text: at run
    time only the checker knows it)."""
    fields = {}
    for klass in reversed(td.__mro__):
        fields.update({k: _annotation_text(v) for k, v in getattr(klass, "__annotations__", {}).items()})
    return fields, {k for k, text in fields.items() if not text.startswith("NotRequired[")}


def shape_errors(value, td: type, where: str = "$") -> list[str]:
    """Where `value` does not fit the TypedDict `td` (keys missing or unknown, nested ones too)."""
    if not isinstance(value, dict):
        return [f"{where}: not an object but {type(value).__name__}"]
    fields, required = _fields(td)
    errors = [f"{where}: missing {k!r}" for k in sorted(required - set(value))]
    errors += [f"{where}: {k!r} not in {td.__name__}" for k in sorted(set(value) - set(fields))]
    for key in set(value) & set(fields):
        nested = [TYPED[n] for n in re.findall(r"\b([A-Z]\w+)\b", fields[key]) if n in TYPED]
        if len(nested) != 1 or value[key] is None:
            continue
        many = isinstance(value[key], list) and "list[" in fields[key]
        for i, item in enumerate(value[key] if many else [value[key]]):
            errors += shape_errors(item, nested[0], f"{where}.{key}" + (f"[{i}]" if many else ""))
    return errors


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The documents the CLI writes on the examples, in-process: compare, a report (a shard, an unused
    ignore, "since" from a store holding two snapshots) and a history against 70toks."""
    tmp = tmp_path_factory.mktemp("docs")
    store = tmp / "store"
    run = CliRunner()

    def dw(*args: str) -> str:
        result = run.invoke(cli, [*args], catch_exceptions=False)
        assert result.exit_code in (0, 1), result.output
        return result.output

    for unit in UNITS[1::-1]:  # the good one first: the 40 tok/s drift comes later
        dw("snapshot", "--unit-file", str(unit), "--store", str(store))
    baselines = ["--baseline", "70toks", "--baselines-dir", str(ROOT / "baselines")]
    report = tmp / "report.json"
    dw("report", *[w for u in UNITS for w in ("--unit-file", str(u))], *baselines, "--format", "json",
       "--store", str(store), "--shard", "0/2", "--ignore", "no-such-flag", "-o", str(report))
    return {
        "compare": json.loads(dw("compare", "--unit-file", str(UNITS[0]), *baselines, "--format", "json")),
        "report": json.loads(report.read_text()),
        "history": json.loads(dw("history", "--store", str(store), *baselines, "--format", "json")),
    }


def test_the_written_documents_fit_their_types(written):
    report = written["report"]
    # the optional parts this test means to cover are really there
    assert report["shard"] == "0/2" and report["warnings"] and "history" in report
    findings = [f for h in report["hosts"] if h["comparison"] for f in h["comparison"]["findings"]]
    assert any("since" in f for f in findings) and any("secret" not in f for f in findings)
    assert any("file" in h for h in report["hosts"]) and report["drift_groups"]
    assert written["history"]["units"] and any(u.get("findings") for u in written["history"]["units"])
    assert shape_errors(written["compare"], document.ComparisonDoc) == []
    assert shape_errors(report, document.FleetReportDoc) == []
    assert shape_errors(written["history"], document.HistoryDoc) == []


def test_marking_the_last_run_keeps_the_report_in_its_type(written):
    """notify/state.py writes `last_run` into each finding before the mail is rendered."""
    report = json.loads(json.dumps(written["report"]))
    counts = mark_changes(report, {"findings": []})
    assert counts["new"] > 0
    assert shape_errors(report, document.FleetReportDoc) == []


def test_a_key_the_types_do_not_name_is_caught(written):
    report = json.loads(json.dumps(written["report"]))
    entry = next(h for h in report["hosts"] if h["comparison"])
    entry["comparison"]["findings"][0]["surprise"] = 1
    del entry["status"]
    errors = shape_errors(report, document.FleetReportDoc)
    assert any("'surprise' not in FindingDoc" in e for e in errors)
    assert any(e.endswith("missing 'status'") for e in errors)


def test_no_command_pays_for_the_types_at_start_up():
    """The package imports report/document.py for the checker only: building its TypedDicts costs a
    few milliseconds that compare and report (every format) would otherwise pay on each run."""
    import subprocess
    import sys
    code = ("import sys\n"
            "from click.testing import CliRunner\n"
            "from driftwatch.cli import cli\n"
            f"base = ['--baseline', '70toks', '--baselines-dir', {str(ROOT / 'baselines')!r}]\n"
            f"unit = ['--unit-file', {str(UNITS[0])!r}]\n"
            "for fmt in ('text', 'json', 'markdown', 'html', 'prometheus'):\n"
            "    assert CliRunner().invoke(cli, ['report', *unit, *base, '--format', fmt]).exit_code == 1\n"
            "assert CliRunner().invoke(cli, ['compare', *unit, *base, '--format', 'json']).exit_code == 1\n"
            "print('driftwatch.report.document' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "False"
