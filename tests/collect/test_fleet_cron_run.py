"""Issue 22's "done when": a mixed fleet of real sshd hosts in one cron run.

Six real OpenSSH servers on loopback (the lab of conftest.py, removed even on failure): three
SGLang hosts judged against `sg-a` (group baseline), two vLLM hosts whose unit names its own
baseline `vl-b` (``units: {unit: NAME}``), one host with no baseline anywhere. Two SGLang and two
vLLM hosts carry the same drift from the same drop-in (override.conf). The command `cron-example`
generates is run once, as cron would (sh -c, HOME and the config file for SMTP): one mail to a real
aiosmtpd server on loopback, one Prometheus file that a real node_exporter's textfile collector
reads without a scrape error, the snapshot store fed, the groups right, exit 1.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from dw_sshlab import plain_unit
from mail_lab import smtp  # noqa: F401 - the fixture
from node_exporter_lab import NODE_EXPORTER, node_exporter

SG = "sglang-qwen.service"
VL = "vllm-qwen.service"
DW = os.path.join(os.path.dirname(sys.executable), "driftwatch")


def vllm_unit(extra: str = "") -> str:
    return ("[Unit]\nDescription=vLLM test server\n\n[Service]\n"
            f"ExecStart=/root/ml-env/bin/vllm serve /root/models/m --port 8000 --max-num-seqs 64{extra}\n")


def _dropin(server, unit: str, execstart: str) -> None:
    server.write(f"/etc/systemd/system/{unit}.d/override.conf", f"[Service]\nExecStart=\nExecStart={execstart}\n")


@pytest.fixture
def textfiles(tmp_path):
    """(textfile directory, scrape) with a real node_exporter reading it; scrape is None where
    prometheus-node-exporter is not installed (the file is still checked, the scrape is skipped)."""
    directory = tmp_path / "textfile"
    directory.mkdir()
    if not NODE_EXPORTER:
        yield directory, None
        return
    with node_exporter(directory) as scrape:
        yield directory, scrape


@pytest.fixture(scope="module")
def mixed_fleet(lab):
    """{name: SSHServer}: sg1, sg2 drifted alike; sg3 clean; vl1, vl2 drifted alike; nb without a baseline."""
    hosts = {}
    for name in ("sg1", "sg2", "sg3", "vl1", "vl2", "nb"):
        hosts[name] = lab.start_sshd(f"f22-{name}")
    for name in ("sg1", "sg2", "sg3", "nb"):
        s = hosts[name]
        s.write(f"/etc/systemd/system/{SG}", plain_unit(30000))
        s.write("/root/ml-env/lib/python3.11/site-packages/sglang-0.5.23.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.23\n")
    for name in ("vl1", "vl2"):
        s = hosts[name]
        s.write(f"/etc/systemd/system/{VL}", vllm_unit())
        s.write("/root/ml-env/lib/python3.11/site-packages/vllm-0.11.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: vllm\nVersion: 0.11.0\n")
    for name in ("sg1", "sg2"):  # the same drop-in on two SGLang hosts
        _dropin(hosts[name], SG, "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/m "
                                 "--port 30000 --mem-fraction-static 0.7")
    for name in ("vl1", "vl2"):  # and on two vLLM hosts
        _dropin(hosts[name], VL, "/root/ml-env/bin/vllm serve /root/models/m --port 8000 --max-num-seqs 16")
    return hosts


def _run(argv, env, cwd, **kw):
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300, **kw)


def test_one_cron_run_checks_a_mixed_fleet(mixed_fleet, lab, tmp_path, smtp, textfiles):  # noqa: F811 (fixture)
    smtp_port, box = smtp
    textfile_dir, scrape = textfiles
    home, state, bl = tmp_path / "home", tmp_path / "state", tmp_path / "baselines"
    for d in (home / ".ssh", home / ".config/driftwatch", state, bl):
        d.mkdir(parents=True)
    (home / ".ssh/known_hosts").write_text("".join(s.known_hosts_line() for s in mixed_fleet.values()))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}
    (home / ".config/driftwatch/config.yaml").write_text(
        f"from: driftwatch@test.invalid\nsmtp:\n  host: 127.0.0.1\n  port: {smtp_port}\n  security: plain\n")
    # the two baselines, saved from known-good unit files
    (tmp_path / "sg.service").write_text(plain_unit(30000))
    (tmp_path / "vl.service").write_text(vllm_unit())
    for name, unit, path, version in (("sg-a", SG, "sg.service", "0.5.23"), ("vl-b", VL, "vl.service", "0.11.0")):
        r = _run([DW, "baseline", "save", name, "--unit-file", str(tmp_path / path), "--unit", unit,
                  "--host-name", f"ref-{name}", "--engine-version", version, "--baselines-dir", str(bl)], env, tmp_path)
        assert r.returncode == 0, r.stderr
    inv = tmp_path / "fleet.yaml"
    hosts = "\n".join(f"  {n}: {{port: {s.port}}}" for n, s in mixed_fleet.items())
    inv.write_text(f"""\
defaults: {{address: 127.0.0.1, user: root, identity: {lab.client_key}}}
groups:
  sglang: {{hosts: [sg1, sg2, sg3], units: [{SG}], baseline: sg-a}}
  vllm: {{hosts: [vl1, vl2], units: {{{VL}: vl-b}}}}
  nobase: {{hosts: [nb], units: [{SG}]}}
hosts:
{hosts}
""")
    prom = textfile_dir / "driftwatch.prom"
    r = _run([DW, "cron-example", "--inventory", str(inv), "--baselines-dir", str(bl), "--email", "ops@example.com",
              "--user", "root", "--state-dir", str(state), "--prometheus", str(prom), "--driftwatch", DW],
             env, tmp_path)
    assert r.returncode == 0, r.stderr
    cron = r.stdout.split("# ---- examples/cron/driftwatch\n", 1)[1].split("# ----", 1)[0]
    [job] = [line for line in cron.splitlines() if line and not line.startswith("#") and "=" not in line.split()[0]]
    command = job.split(None, 6)[6]  # m h dom mon dow user command
    assert "--baseline " not in command and "--store" in command and "--prometheus" in command
    command = command.split(" >/dev/null", 1)[0]  # keep the exit code (cron's line discards stdout)
    run = _run(["sh", "-c", command], env, str(state))
    assert run.returncode == 1, (run.stdout, run.stderr)  # drift reported, nothing in trouble
    assert run.stdout == "" and "Traceback" not in run.stderr

    # one mail, with the groups first
    assert len(box.messages) == 1
    mail = box.messages[0]
    body = mail.get_body(("plain",)).get_content()
    assert mail["Subject"].startswith("[driftwatch] 4 of 6 hosts drifted from their baselines (sg-a, vl-b)")
    assert mail["Subject"].endswith(", 1 without a baseline")
    assert body.index("Drift shared by several units") < body.index("\n== 2 units with the same findings")

    # the report kept by --output: the groups right
    report = (state / "last-report.txt").read_text()
    assert "2 hosts: --mem-fraction-static" in report and "2 hosts: --max-num-seqs 64 → 16" in report
    assert "hosts: 6, drifted: 4, clean: 1, unreadable: 0, no baseline: 1" in report
    assert "(group 1, told once above)" in report  # per-host detail points to the group, not repeated

    # the store fed: one snapshot per (host, unit) read, the no-baseline host too
    from driftwatch.snapshots.store import SnapshotStore  # a database: its rows, as the store lists them
    stored = {(r.host, r.unit) for r in SnapshotStore(state / "store").records()}
    assert {(n, SG) for n in ("sg1", "sg2", "sg3", "nb")} | {(n, VL) for n in ("vl1", "vl2")} <= stored

    # one Prometheus file, read by node_exporter without a scrape error
    text = prom.read_text()
    assert 'driftwatch_drift{report="driftwatch",host="sg1",unit="sglang-qwen.service",baseline="sg-a"} 1' in text
    assert 'driftwatch_drift{report="driftwatch",host="vl2",unit="vllm-qwen.service",baseline="vl-b"} 1' in text
    assert 'driftwatch_host_read{report="driftwatch",host="nb",unit="sglang-qwen.service",baseline="none",status="ok"} 1' in text
    if scrape is not None:
        metrics = scrape()
        assert 'node_textfile_scrape_error 0' in metrics
        assert 'driftwatch_drift{baseline="sg-a",host="sg3",report="driftwatch",unit="sglang-qwen.service"} 0' in metrics
        # a second shard's file in the same directory: no collision, still no scrape error
        (textfile_dir / "tmp").write_text(text.replace('report="driftwatch"', 'report="driftwatch-shard2"'))
        os.replace(textfile_dir / "tmp", textfile_dir / "driftwatch-shard2.prom")
        metrics = scrape()
        assert 'node_textfile_scrape_error 0' in metrics
        assert 'driftwatch_hosts{report="driftwatch-shard2",status="drifted"} 4' in metrics

    # the JSON document: drift_groups and every host's baseline
    r = _run([DW, "report", "--inventory", str(inv), "--baselines-dir", str(bl), "--format", "json", "--no-store"],
             env, str(state))
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    shared = [g for g in doc["drift_groups"] if len(g["hosts"]) > 1]
    by_key = {g["key"]: g for g in shared}
    assert by_key["max_num_seqs"]["hosts"] == [{"host": "vl1", "unit": VL}, {"host": "vl2", "unit": VL}]
    assert by_key["max_num_seqs"]["baseline_name"] == "vl-b" and by_key["max_num_seqs"]["origin"] == "override.conf"
    assert by_key["mem_fraction_static"]["hosts"] == [{"host": "sg1", "unit": SG}, {"host": "sg2", "unit": SG}]
    names = {(h["host"], (h["comparison"] or {}).get("baseline", {}).get("name")) for h in doc["hosts"]}
    assert names == {("sg1", "sg-a"), ("sg2", "sg-a"), ("sg3", "sg-a"), ("vl1", "vl-b"), ("vl2", "vl-b"), ("nb", None)}
    assert doc["summary"]["no_baseline"] == 1 and doc["summary"]["drifted"] == 4 and doc["baseline"] is None
    assert [h["status"] for h in doc["hosts"] if h["host"] == "nb"] == ["no_baseline"]

    # --limit: Ansible patterns over the inventory's groups and names
    r = _run([DW, "report", "--inventory", str(inv), "--baselines-dir", str(bl), "--format", "json", "--no-store",
              "--limit", "sglang:vllm:!sg*:&vl1"], env, str(state))
    assert sorted(h["host"] for h in json.loads(r.stdout)["hosts"]) == ["vl1"]

    # the next cron run: the store the first one fed says since when each finding is there
    (state / "last-report.txt").unlink()
    again = _run(["sh", "-c", command], env, str(state))
    assert again.returncode == 1, again.stderr
    second = (state / "last-report.txt").read_text()
    first_seen = [line for line in second.splitlines() if "since " in line and "first seen in snapshot" in line]
    # sg1, sg2, vl1, vl2: each finding dated by the first run's snapshot (alike units share a section)
    sections = second.split("\n== ")[2:]
    dated = [sec for sec in sections if "since " in sec and "first seen in snapshot" in sec]
    assert len(first_seen) >= 2 and {h for sec in dated for h in ("sg1", "sg2", "vl1", "vl2") if h in sec} == \
        {"sg1", "sg2", "vl1", "vl2"}, second
