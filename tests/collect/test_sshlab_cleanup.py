"""The SSH lab leaves nothing behind: a run stopped with SIGTERM closes its labs on the way out, and
what a run killed with SIGKILL left (sshd, namespace, veth, bridge, temp dir) is reaped by the next
lab, while a lab whose run is alive is never touched."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import dw_sshlab
import pytest

pytestmark = pytest.mark.skipif(not (dw_sshlab.is_root() and dw_sshlab.have_sshd() and dw_sshlab.have_netns()),
                                reason="needs root, /usr/sbin/sshd and ip netns")

CHILD = """
import sys, time
sys.path.insert(0, {here!r})
import dw_sshlab
lab = dw_sshlab.Lab()
server = lab.netns_host("h0")
print(lab.id, lab.tmp, server.netns, flush=True)
time.sleep(120)
"""


def _leftovers(lab_id: str, lab_dir: str) -> list[str]:
    found = []
    if any(ns.startswith(f"dwtest-{lab_id}-") for ns in
           subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()):
        found.append("namespace")
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    if f"dwb{lab_id}" in links or f"dw{lab_id}a" in links:
        found.append("link")
    if dw_sshlab._pids_naming(lab_dir + "/"):
        found.append("process")
    if os.path.exists(lab_dir):
        found.append("dir")
    return found


def _start_child(tmp_path) -> tuple[subprocess.Popen, str, str]:
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", CHILD.format(here=os.path.dirname(dw_sshlab.__file__))],
                            stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline().split()
    if len(line) != 3:
        proc.kill()
        pytest.fail("the child lab did not start")
    return proc, line[0], line[1]


def test_sigterm_closes_the_lab(tmp_path):
    proc, lab_id, lab_dir = _start_child(tmp_path)
    assert set(_leftovers(lab_id, lab_dir)) == {"namespace", "link", "process", "dir"}
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert _leftovers(lab_id, lab_dir) == []


def test_sigkilled_lab_is_reaped_and_a_live_one_kept(tmp_path):
    dead, dead_id, dead_dir = _start_child(tmp_path)
    alive, alive_id, alive_dir = _start_child(tmp_path)
    try:
        dead.kill()
        dead.wait(timeout=10)
        assert set(_leftovers(dead_id, dead_dir)) == {"namespace", "link", "process", "dir"}
        assert dw_sshlab.reap_stale_labs(str(tmp_path)) == [dead_id]
        assert _leftovers(dead_id, dead_dir) == []
        assert set(_leftovers(alive_id, alive_dir)) == {"namespace", "link", "process", "dir"}
    finally:
        for proc in (dead, alive):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
        dw_sshlab.reap_stale_labs(str(tmp_path))
    assert _leftovers(alive_id, alive_dir) == []
