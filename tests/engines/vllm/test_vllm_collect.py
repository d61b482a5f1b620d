"""Collecting vLLM hosts (issue 10, items 5 and 6): the version from `vllm-*.dist-info` beside the
unit's interpreter (never executed), vLLM's journal lines per release, and a mixed SGLang + vLLM
report over real sshd hosts (tests/collect/dw_sshlab.py; skipped without root and sshd)."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import dw_sshlab
import pytest
from cli_helpers import run_in_process

from driftwatch.collect.commands import is_engine_argv, parse_journal
from driftwatch.engines.registry import engine_markers

REPO = Path(__file__).resolve().parents[3]

DW = Path(sys.executable).with_name("driftwatch")
EXAMPLES = REPO / "examples"


# ---------------------------------------------------------------- journal lines, per release

@pytest.mark.parametrize("lines, expected", [
    # 0.10 / 0.11 (V1 logger, one line per engine)
    (["INFO 07-24 10:00:01 [loggers.py:122] Engine 000: Avg prompt throughput: 12.0 tokens/s, Avg generation "
      "throughput: 61.4 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.4%, Prefix cache hit "
      "rate: 0.0%",
      "INFO 07-24 10:00:01 [metrics.py:96] SpecDecoding metrics: Draft acceptance rate: 63.1%, Mean acceptance "
      "length: 2.89, Accepted: 1200 tokens, Drafted: 1900 tokens, Per-position acceptance rate: 0.8, 0.6, 0.5"],
     {"throughput": 61.4, "accept_length": 2.89}),
    # 0.15 - 0.33
    (["(APIServer pid=1) INFO 11-30 10:00:11 [loggers.py:257] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
      "Avg generation throughput: 63.9 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.1%, "
      "Prefix cache hit rate: 0.0%",
      "(APIServer pid=1) INFO 11-30 10:00:11 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.91, "
      "Accepted throughput: 40.70 tokens/s, Drafted throughput: 63.90 tokens/s, Accepted: 407 tokens, Drafted: "
      "639 tokens, Per-position acceptance rate: 0.820, 0.640, 0.450, Avg Draft acceptance rate: 63.7%"],
     {"throughput": 63.9, "accept_length": 2.91}),
    # an idle interval says nothing about speed
    (["Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 58.0 tokens/s, Running: 1 reqs",
      "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs"],
     {"throughput": 58.0}),
    # 0.8.x V0: system efficiency is emitted / (k + 1) per step
    (["INFO 03-20 [metrics.py:467] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 44.2 tokens/s, "
      "Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.3%, CPU KV cache usage: 0.0%.",
      "INFO 03-20 [metrics.py:489] Speculative metrics: Draft acceptance rate: 0.650, System efficiency: 0.550, "
      "Number of speculative tokens: 3, Number of accepted tokens: 390, Number of draft tokens: 600, Number of "
      "emitted tokens: 440."],
     {"throughput": 44.2, "accept_length": 2.2}),
])
def test_vllm_journal_lines(lines, expected):
    assert parse_journal("\n".join(lines), engine_markers()) == pytest.approx(expected)


def test_sglang_journal_lines_unchanged():
    line = "accept len: 3.20, gen throughput (token/s): 70.1\n"
    assert parse_journal(line, engine_markers()) == {"accept_length": 3.2, "throughput": 70.1}


@pytest.mark.parametrize("argv, yes", [
    (["/opt/v/bin/vllm", "serve", "M"], True),
    (["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "M"], True),
    (["/usr/bin/python3", "-m", "vllm.entrypoints.cli.main", "serve", "M"], True),
    (["/usr/bin/vllm", "chat"], False),
    (["/usr/bin/vllm"], False),
])
def test_engine_processes_found_without_systemd(argv, yes):
    assert is_engine_argv(argv, engine_markers()) is yes


# ---------------------------------------------------------------- real sshd hosts

SGLANG_UNIT = "sglang-qwen.service"
VLLM_UNIT = "vllm-qwen.service"


@pytest.fixture(scope="module")
def hosts():
    if not (dw_sshlab.is_root() and dw_sshlab.have_sshd()):
        pytest.skip("needs root and /usr/sbin/sshd (apt-get install openssh-server)")
    lab = dw_sshlab.Lab()
    try:
        sg = lab.start_sshd("dwv-sglang")
        sg.write(f"/etc/systemd/system/{SGLANG_UNIT}", (EXAMPLES / "sglang-qwen-40toks.service").read_text())
        vl = lab.start_sshd("dwv-vllm")
        unit = (EXAMPLES / "vllm-qwen-mtp1-eager.service").read_text().replace("/opt/vllm/.venv/bin/vllm",
                                                                                "/root/vllm/bin/vllm")
        vl.write(f"/etc/systemd/system/{VLLM_UNIT}", unit)
        # The console script and its interpreter; the version comes from the metadata, never from running them.
        vl.write("/root/vllm/bin/vllm", "#!/root/vllm/bin/python3\nimport sys\n", 0o755)
        vl.write("/root/vllm/bin/python3", "#!/bin/sh\necho 9.9.9\n", 0o755)
        vl.write("/root/vllm/lib/python3.12/site-packages/vllm-0.15.0.dist-info/METADATA",
                 "Metadata-Version: 2.1\nName: vllm\nVersion: 0.15.0\n")
        yield lab, {"dwv-sglang": sg, "dwv-vllm": vl}
    finally:
        lab.close()


@pytest.fixture
def env(tmp_path, hosts):
    lab, servers = hosts
    cfg = tmp_path / "ssh_config"
    cfg.write_text("\n".join(f"Host {n}\n    HostName {s.address}\n    Port {s.port}\n    User root\n"
                             for n, s in servers.items()))
    kh = tmp_path / "known_hosts"
    kh.write_text("".join(s.known_hosts_line() for s in servers.values()))
    inv = tmp_path / "inventory.yaml"
    inv.write_text(textwrap.dedent(f"""\
        hosts:
          dwv-sglang:
            units: [{SGLANG_UNIT}]
          dwv-vllm:
            units: [{VLLM_UNIT}]
        """))
    home = tmp_path / "home"
    home.mkdir()

    def run(*args):
        e = {"SSH_AUTH_SOCK": None, "HOME": str(home)}
        ssh = ["--ssh-config", str(cfg), "-i", lab.client_key, "--known-hosts", str(kh),
               "--connect-timeout", "3", "--command-timeout", "15"]
        return run_in_process(*args, *ssh, env=e, cwd=REPO)

    return run, inv


def test_vllm_version_is_read_from_its_metadata(env):
    run, _ = env
    r = run("show", "--host", "dwv-vllm", "--unit", VLLM_UNIT, "--format", "json")
    assert r.returncode == 0, r.stderr
    import json
    data = json.loads(r.stdout)
    assert data["engine"]["name"] == "vllm"
    assert data["engine"]["version"] == "0.15.0"
    assert "9.9.9" not in r.stdout


def test_mixed_report_over_sshd_hosts(env):
    run, inv = env
    r = run("report", "--inventory", inv, "--baseline", "70toks", "--format", "json")
    assert r.returncode == 1, (r.stdout[-2000:], r.stderr)
    import json
    data = json.loads(r.stdout)
    hosts = {h["host"]: h for h in data["hosts"]}
    assert set(hosts) == {"dwv-sglang", "dwv-vllm"}
    assert all(h["status"] == "drift" for h in hosts.values()), hosts
    vllm_keys = {f["key"] for f in hosts["dwv-vllm"]["comparison"]["findings"]}
    assert "launcher.engine" in vllm_keys
    assert hosts["dwv-vllm"]["comparison"]["predicted_throughput"] is None  # another engine: no prediction
    assert hosts["dwv-sglang"]["comparison"]["predicted_throughput"] is not None
    # the vLLM host against the vLLM baseline: a prediction, under the collected release 0.15.0
    r = run("compare", "--baseline", "vllm-qwen-mtp3", "--host", "dwv-vllm", "--unit", VLLM_UNIT, "--format", "json")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["target"]["engine_version"] == "0.15.0"
    assert data["findings"][0]["rule"] == "DW101"
    assert data["predicted_throughput"] is not None
