"""`report --merge`: the fleet's report from its shards' JSON reports.

Real OpenSSH hosts on loopback (the lab, removed even on failure), read once unsharded and once as
two shards; the merged document must be the unsharded run's (but for its timestamp and the list of
shards merged), its mail goes to a real aiosmtpd, and its Prometheus file and the two shards' are
read together by a real node_exporter without a scrape error. The refusals use hand-made documents.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cli_helpers import run_in_process
from dw_sshlab import plain_unit
from mail_lab import smtp  # noqa: F401 - the fixture
from node_exporter_lab import NODE_EXPORTER, node_exporter

from driftwatch.run.shard import shard_of

SG = "sglang-qwen.service"
DW = os.path.join(os.path.dirname(sys.executable), "driftwatch")


def _names() -> dict[str, str]:
    """Host names by role, chosen so that the two hosts sharing one drift land in different slices of 2
    (their group must be found across shards) and each slice holds a clean host."""
    candidates = [f"gpu{i:02d}" for i in range(40)]
    zero = [n for n in candidates if shard_of(n, 2) == 0]
    one = [n for n in candidates if shard_of(n, 2) == 1]
    return {"same1": zero[0], "same2": one[0], "own": zero[1], "clean1": zero[2], "clean2": one[1], "nobase": one[2]}


@pytest.fixture(scope="module")
def fleet(lab):
    names = _names()
    hosts = {}
    for role, name in names.items():
        s = hosts[role] = lab.start_sshd(f"merge-{name}")
        s.write(f"/etc/systemd/system/{SG}", plain_unit(30000))
        s.write("/root/ml-env/lib/python3.11/site-packages/sglang-0.5.23.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.23\n")
    for role, extra in (("same1", " --mem-fraction-static 0.7"), ("same2", " --mem-fraction-static 0.7"),
                        ("own", " --max-running-requests 8")):
        hosts[role].write(f"/etc/systemd/system/{SG}.d/override.conf",
                          "[Service]\nExecStart=\nExecStart=/root/ml-env/bin/python3 -m sglang.launch_server "
                          f"--model-path /root/models/m --port 30000{extra}\n")
    return names, hosts


def _run(argv, env, cwd):
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def _comparable(doc: dict) -> dict:
    """The document but for what says when and from which runs it was made."""
    return {k: v for k, v in doc.items() if k not in ("generated_at", "merged")}


def test_two_shards_merge_into_the_unsharded_report(fleet, lab, tmp_path, smtp):  # noqa: F811 (fixture)
    names, hosts = fleet
    smtp_port, box = smtp
    home, bl, textfiles = tmp_path / "home", tmp_path / "baselines", tmp_path / "textfile"
    for d in (home / ".ssh", home / ".config/driftwatch", bl, textfiles):
        d.mkdir(parents=True)
    (home / ".ssh/known_hosts").write_text("".join(s.known_hosts_line() for s in hosts.values()))
    (home / ".config/driftwatch/config.yaml").write_text(
        f"from: driftwatch@test.invalid\nsmtp:\n  host: 127.0.0.1\n  port: {smtp_port}\n  security: plain\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}
    (tmp_path / "sg.service").write_text(plain_unit(30000))
    r = _run([DW, "baseline", "save", "sg-a", "--unit-file", str(tmp_path / "sg.service"), "--unit", SG,
              "--host-name", "ref", "--engine-version", "0.5.23", "--baselines-dir", str(bl)], env, tmp_path)
    assert r.returncode == 0, r.stderr
    lines = "\n".join(f"  {names[role]}: {{port: {s.port}}}" for role, s in hosts.items())
    inv = tmp_path / "fleet.yaml"
    inv.write_text(f"""\
defaults: {{address: 127.0.0.1, user: root, identity: {lab.client_key}, units: [{SG}]}}
groups:
  judged: {{hosts: [{', '.join(names[r] for r in names if r != 'nobase')}], baseline: sg-a}}
hosts:
{lines}
""")
    common = [DW, "report", "--inventory", str(inv), "--baselines-dir", str(bl), "--no-store", "--store",
              str(tmp_path / "store"), "--format", "json", "--quiet"]
    whole = _run(common + ["-o", str(tmp_path / "whole.json")], env, tmp_path)
    assert whole.returncode == 1, whole.stderr  # drift, nothing in trouble
    for i in (0, 1):
        r = _run(common + ["--shard", f"{i}/2", "-o", str(tmp_path / f"shard-{i}.json"),
                           "--prometheus", str(textfiles / f"driftwatch-shard-{i}.prom")], env, tmp_path)
        assert r.returncode == 1, r.stderr  # each slice holds one of the two hosts drifted alike
        assert json.loads((tmp_path / f"shard-{i}.json").read_text())["shard"] == f"{i}/2"
    shard0 = json.loads((tmp_path / "shard-0.json").read_text())
    assert not [g for g in shard0["drift_groups"] if len(g["hosts"]) > 1]  # alone in its slice: no shared group

    merged = _run([DW, "report", "--merge", str(tmp_path / "shard-1.json"), str(tmp_path / "shard-0.json"),
                   "--format", "json", "-o", str(tmp_path / "merged.json"), "--quiet",
                   "--prometheus", str(textfiles / "driftwatch.prom"), "--email", "ops@example.com"], env, tmp_path)
    assert merged.returncode == whole.returncode, merged.stderr
    assert merged.stdout == "" and "Traceback" not in merged.stderr
    doc = json.loads((tmp_path / "merged.json").read_text())
    expected = json.loads((tmp_path / "whole.json").read_text())
    assert _comparable(doc) == _comparable(expected)
    assert doc["merged"] == ["0/2", "1/2"] and "shard" not in doc
    [shared] = [g for g in doc["drift_groups"] if len(g["hosts"]) > 1]  # found across the two shards
    assert [h["host"] for h in shared["hosts"]] == sorted([names["same1"], names["same2"]],
                                                          key=lambda n: list(names.values()).index(n))

    # one mail for the fleet, as the unsharded run would send it
    assert len(box.messages) == 1
    subject = box.messages[0]["Subject"]
    assert subject.startswith("[driftwatch] 3 of 6 hosts drifted from sg-a"), subject

    # the merged textfile and both shards' in one directory: node_exporter reads all three
    shard_text = (textfiles / "driftwatch-shard-0.prom").read_text()
    assert 'driftwatch_hosts{report="driftwatch-shard-0",shard="0/2",status="drifted"}' in shard_text
    assert 'shard=' not in (textfiles / "driftwatch.prom").read_text()
    if not NODE_EXPORTER:
        pytest.skip("the textfiles are written; scraping them needs prometheus-node-exporter")
    with node_exporter(textfiles) as scrape:
        metrics = scrape()
    assert "node_textfile_scrape_error 0" in metrics
    assert 'driftwatch_hosts{report="driftwatch",status="drifted"} 3' in metrics
    assert 'driftwatch_hosts{report="driftwatch-shard-1",shard="1/2",status="drifted"} 1' in metrics
    assert 'driftwatch_last_run_timestamp_seconds{report="driftwatch-shard-0",shard="0/2"}' in metrics


# --------------------------------------------------------------------------- refusals (hand-made documents)

def _report(shard: str | None, hosts: list[str], status: str = "clean") -> dict:
    from driftwatch.report.data import assemble_report, host_entry
    doc = assemble_report(None, [], [host_entry(h, SG, status, error="down" if status == "error" else None)
                                     for h in hosts], None)
    if shard:
        doc["shard"] = shard
    return doc


def _merge(tmp_path, docs: dict[str, object], *extra: str):
    paths = []
    for name, doc in docs.items():
        path = tmp_path / name
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        paths.append(str(path))
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("DRIFTWATCH_")}
    env["HOME"] = str(tmp_path)
    return run_in_process("report", "--merge", *paths, "--format", "json", *extra, env=env, cwd=tmp_path)


@pytest.mark.parametrize("docs, says", [
    ({"a.json": "{not json", "b.json": _report("1/2", ["h2"])}, "not valid JSON"),
    ({"a.json": [1, 2], "b.json": _report("1/2", ["h2"])}, "not a driftwatch report"),
    ({"a.json": _report("0/2", ["h1"]), "b.json": {**_report("1/2", ["h2"]), "schema": "driftwatch.compare/v1"}},
     "driftwatch.compare/v1 document, not driftwatch.report/v1"),
    ({"a.json": _report("0/2", ["h1"]), "b.json": {**_report("1/2", ["h2"]), "schema": "driftwatch.report/v2"}},
     "driftwatch.report/v2 document"),
    ({"a.json": _report("0/2", ["h1"]), "b.json": {**_report("1/2", ["h2"]), "hosts": None}}, "hosts or summary"),
    ({"a.json": _report("0/2", ["h1"]), "b.json": _report(None, ["h2"])}, "made without --shard"),
    ({"a.json": _report("0/2", ["h1"]), "b.json": _report("  ", ["h2"])}, "made without --shard"),  # blank
    ({"a.json": _report("0/2", ["h1"]), "b.json": _report("1/3", ["h2"])}, "slices of different N overlap"),
    ({"a.json": _report("0/2", ["h1"]), "b.json": _report("0/2", ["h2"])}, "slice 0/2 again"),
    ({"a.json": _report("0/2", ["h1"]), "b.json": _report("1/2", ["h2", "h1"])}, "h1 sglang-qwen.service is also in"),
    ({"a.json": _report("0/2", ["h1"]), "b.json": _report("1/2x", ["h2"])}, "is not I/N"),
])
def test_what_cannot_be_merged_is_refused_in_one_line(tmp_path, docs, says):
    r = _merge(tmp_path, docs, "-o", str(tmp_path / "merged.json"))
    assert r.returncode == 2 and json.loads(r.stdout)["schema"] == "driftwatch.error/v1", (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "merged.json").exists()  # nothing written


def test_the_same_file_twice_overlaps_and_files_need_merge(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(_report("0/2", ["h1"])))
    env = {**{k: None for k in os.environ if k.startswith("DRIFTWATCH_")}, "HOME": str(tmp_path)}
    for argv, says in ((["--merge", "a.json", "./a.json"], "the same file as a.json"),
                       (["a.json"], "report --merge A.json B.json"),
                       (["--merge", "a.json", "--inventory", "x.yaml", "--shard", "0/2"], "drop --inventory, --shard"),
                       (["--merge", "missing.json"], "no such file")):
        r = run_in_process("report", *argv, env=env, cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and says in r.stderr, (argv, r.stderr)


def test_a_missing_slice_is_said_and_the_report_still_goes_out(tmp_path):
    r = _merge(tmp_path, {"a.json": _report("0/3", ["h1"], "error"), "c.json": _report("2/3", ["h3"])})
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert [h["host"] for h in doc["hosts"]] == ["h1", "h3"] and doc["summary"]["hosts"] == 2
    assert doc["summary"]["unreadable"] == 1 and doc["summary"]["clean"] == 1
    assert "merged 2 of 3 shards: 1/3 missing" in r.stderr and "merged 2 of 3 shards: 1/3 missing" in doc["warnings"][-1]
    assert doc["missing_shards"] == ["1/3"]
    r = _merge(tmp_path, {"a.json": _report("0/3", ["h1"]), "c.json": _report("2/3", ["h3"])}, "--format", "text")
    assert "warning: slices missing from this report: 1/3 (their hosts are not in it)" in r.stdout, r.stdout
    # complete and clean: exit 0, as one clean run
    r = _merge(tmp_path, {"a.json": _report("0/2", ["h1"]), "b.json": _report("1/2", ["h2"])})
    assert r.returncode == 0 and json.loads(r.stdout)["summary"]["clean"] == 2, r.stderr


def test_unused_ignores_are_those_no_shard_used(tmp_path):
    a, b = _report("0/2", ["h1"]), _report("1/2", ["h2"])
    a["warnings"] = ["--ignore DW1: matched nothing", "--ignore DW2: matched nothing"]
    b["warnings"] = ["--ignore DW2: matched nothing"]
    r = _merge(tmp_path, {"a.json": a, "b.json": b})
    assert r.returncode == 0 and json.loads(r.stdout)["warnings"] == ["--ignore DW2: matched nothing"], r.stderr


def test_two_shards_textfiles_in_one_directory_read_by_node_exporter(tmp_path):
    """Run-level series carry shard="I/N": two shards' files side by side, no scrape error."""
    from driftwatch.report.prometheus import render_textfile
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    for i, hosts in ((0, ["h1", "h3"]), (1, ["h2"])):
        text = render_textfile(_report(f"{i}/2", hosts), f"driftwatch-shard-{i}")
        assert f'driftwatch_hosts{{report="driftwatch-shard-{i}",shard="{i}/2",status="clean"}} {len(hosts)}' in text
        (textfiles / f"driftwatch-shard-{i}.prom").write_text(text)
    assert "shard=" not in render_textfile(_report(None, ["h1"]))  # an unsharded run's series as before
    if not NODE_EXPORTER:
        pytest.skip("the textfiles are checked; scraping them needs prometheus-node-exporter")
    with node_exporter(textfiles) as scrape:
        metrics = scrape()
    assert "node_textfile_scrape_error 0" in metrics
    assert 'driftwatch_hosts{report="driftwatch-shard-0",shard="0/2",status="clean"} 2' in metrics
    assert 'driftwatch_hosts{report="driftwatch-shard-1",shard="1/2",status="clean"} 1' in metrics
