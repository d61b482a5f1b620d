"""Name resolution counts against the connect deadline (issue 21, item 5), with a real resolver.

A network namespace made here (``ip netns add``) whose /etc/netns/NS/resolv.conf points at
127.0.0.1 inside it, where a UDP socket of this test takes every DNS query and never answers.
glibc's resolver then waits resolv.conf's ``timeout`` x ``attempts`` (20 s here), outside any
socket timeout; driftwatch, run in the namespace with ``ip netns exec``, must end within its
connect timeout plus start-up, and say that resolution timed out. The namespace, the resolv.conf
and the DNS process are removed even when a test fails. Nothing leaves the namespace: it has
only its loopback.
"""
from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).parent / "driftwatch"
TIMEOUT = 2  # --connect-timeout / smtp timeout, seconds
MARGIN = 7  # interpreter start-up and imports on a loaded 2-core machine; the resolver alone takes 20 s

# a DNS "server" that reads every query, prints the name asked, and never answers
BLACK_HOLE = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
print("ready", flush=True)
while True:
    data, _ = s.recvfrom(4096)
    labels, i = [], 12
    while i < len(data) and data[i]:
        n = data[i]
        labels.append(data[i + 1:i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    print("query " + ".".join(labels), flush=True)
"""


def _netns_ok() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None


@pytest.fixture
def silent_dns(tmp_path):
    """(namespace name, DNS process): a namespace whose resolver is a server that never answers."""
    if not _netns_ok():
        pytest.skip("needs root and `ip` (iproute2) to create a network namespace")
    ns = f"dwdns-{secrets.token_hex(3)}"
    etc = Path("/etc/netns") / ns
    made_parent = not etc.parent.exists()
    proc = None
    added = subprocess.run(["ip", "netns", "add", ns], capture_output=True, text=True)
    if added.returncode != 0:
        pytest.skip(f"cannot create a network namespace: {added.stderr.strip()}")
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        etc.mkdir(parents=True)
        (etc / "resolv.conf").write_text("nameserver 127.0.0.1\noptions timeout:10 attempts:2\n")
        proc = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", BLACK_HOLE],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        yield ns, proc
    finally:
        if proc is not None:
            proc.kill()
            proc.wait(10)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(etc, ignore_errors=True)
        if made_parent:
            try:
                etc.parent.rmdir()  # only if no one else's namespace config is in it
            except OSError:
                pass


def _in_namespace(ns: str, home: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_") and k != "SSH_AUTH_SOCK"}
    env["HOME"] = str(home)
    start = time.monotonic()
    r = subprocess.run(["ip", "netns", "exec", ns, str(DW), *args], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    return r, time.monotonic() - start


def _queries(proc) -> list[str]:
    proc.kill()
    out, _ = proc.communicate(timeout=10)
    return [ln.split(" ", 1)[1] for ln in out.splitlines() if ln.startswith("query ")]


def test_ssh_host_whose_name_never_resolves_times_out_within_the_connect_timeout(silent_dns, tmp_path):
    ns, dns = silent_dns
    home = tmp_path / "home"
    home.mkdir()
    r, elapsed = _in_namespace(ns, home, "snapshot", "root@gpu-box.dwtest", "--unit", "sglang-qwen.service",
                               "--store", str(tmp_path / "store"), "--known-hosts", str(tmp_path / "kh"),
                               "--connect-timeout", str(TIMEOUT), "--command-timeout", "3")
    assert "gpu-box.dwtest" in _queries(dns)  # the name really went to the silent server
    assert elapsed < TIMEOUT + MARGIN, (elapsed, r.stderr)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    row = [ln.split("\t") for ln in r.stdout.splitlines() if ln.startswith("gpu-box.dwtest")]
    assert row and row[0][2] == "timeout", r.stdout
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"name resolution timed out after {TIMEOUT}s" in lines[0], r.stderr


def test_smtp_server_whose_name_never_resolves_ends_the_report_with_exit_2(silent_dns, tmp_path):
    ns, dns = silent_dns
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "report.txt"
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"baselines_dir: {ROOT / 'baselines'}\nsmtp:\n  timeout: {TIMEOUT}\n")
    r, elapsed = _in_namespace(ns, home, "report", "--unit-file", "examples/sglang-qwen-40toks.service",
                               "--baseline", "70toks", "--email", "ops@example.test", "--from", "dw@example.test",
                               "--smtp-host", "mail.dwtest", "--smtp-port", "25", "--smtp-plain",
                               "--config", str(cfg), "--output", str(out), "--quiet")
    assert "mail.dwtest" in _queries(dns)
    assert elapsed < TIMEOUT + MARGIN, (elapsed, r.stderr)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert f"name resolution of mail.dwtest timed out after {TIMEOUT}s" in r.stderr, r.stderr
    assert out.read_text().strip()  # the report is still written
