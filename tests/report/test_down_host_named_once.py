"""A down host is named once in every report line (issue 34 item 8): "h6 vllm-qwen.service:
unreachable (127.0.0.1:PORT): cannot connect: …", not "h6 vllm-qwen.service: h6: vllm-qwen.service:
unreachable: h6 (…)". The error comes from a real refused connection (a free loopback port), through
the console script; stderr keeps the full self-standing line and the JSON the error as collected."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from driftwatch.report.unreadable import reason

REPO = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).parent / "driftwatch"
UNIT = "vllm-qwen.service"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def down(tmp_path_factory):
    """(run, port): run(format) runs `driftwatch report` on h6, a name for a closed loopback port."""
    home = tmp_path_factory.mktemp("home")
    port = _free_port()
    (home / "ssh_config").write_text(f"Host h6\n  HostName 127.0.0.1\n  Port {port}\n")

    def run(fmt: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DRIFTWATCH_", "SSH_"))}
        env.update(HOME=str(home), COLUMNS="200", NO_COLOR="1")
        return subprocess.run([str(DW), "report", "--host", "h6", "--unit", UNIT, "--baseline",
                               str(REPO / "baselines" / "70toks.yaml"), "--ssh-config", str(home / "ssh_config"),
                               "--no-store", "--format", fmt], capture_output=True, text=True, env=env,
                              timeout=60, cwd=home)
    return run, port


def _unreadable_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if "cannot connect" in ln and "unreachable" in ln
             and not ln.startswith("h6 ")]  # the host table row starts with the host column
    assert len(lines) == 1, text
    return lines[0]


def test_text_names_the_host_once(down):
    run, port = down
    r = run("text")
    assert r.returncode == 2, r.stdout + r.stderr
    line = _unreadable_line(r.stdout)
    assert re.fullmatch(rf"\s*h6 {re.escape(UNIT)}: unreachable \(127\.0\.0\.1:{port}\): cannot connect: .+", line), line
    assert len(re.findall(r"\bh6\b", line)) == 1 and line.count(UNIT) == 1, line
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("h6 "))
    assert len(re.findall(r"\bh6\b", row)) == 1 and row.count(UNIT) == 1, row
    # stderr stands alone: it still says which host and unit
    assert r.stderr.strip().startswith(f"driftwatch: h6: {UNIT}: unreachable"), r.stderr


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_markdown_and_html_name_the_host_once(down, fmt):
    run, port = down
    r = run(fmt)
    line = next(ln for ln in r.stdout.splitlines() if f"(127.0.0.1:{port}): cannot connect" in ln
                and "<td" not in ln and "|" not in ln)
    plain = re.sub(r"<[^>]+>|\*\*|\\", "", line)
    assert len(re.findall(r"\bh6\b", plain)) == 1 and plain.count(UNIT) == 1, line


def test_json_keeps_the_error_as_collected(down):
    run, port = down
    doc = json.loads(run("json").stdout)
    (h,) = doc["hosts"]
    assert h["error"].startswith(f"h6: {UNIT}: unreachable: h6 (127.0.0.1:{port}): cannot connect")


@pytest.mark.parametrize("error, said", [
    ("h6: vllm.service: unreachable: h6 (10.0.0.6:22): cannot connect: refused",
     "unreachable (10.0.0.6:22): cannot connect: refused"),
    ("h6: vllm.service: timeout: h6: connect timed out after 5s", "timeout: connect timed out after 5s"),
    ("h6: vllm.service: error: h6: vllm.service: the unit is larger than the limit",
     "error: the unit is larger than the limit"),
    ("h6: vllm.service: auth failed: h6: authentication failed for root: no key",
     "auth failed: authentication failed for root: no key"),
    ("h6: vllm.service: unit not found", "unit not found"),
    ("gpu-h6.example: cannot connect", "gpu-h6.example: cannot connect"),  # another name is not this host
    ("h6 (10.0.0.6:22): cannot connect", "(10.0.0.6:22): cannot connect"),
    ("", ""),
])
def test_reason_drops_only_the_repeated_names(error, said):
    assert reason("h6", "vllm.service", error) == said
