"""Issue 21, item 5: one overall deadline per SMTP delivery. A server that trickles a line every
half second never trips a per-read timeout; the delivery still ends at DEADLINE_FACTOR x timeout, and
a `report` run ends with exit 2, its report written. The server is real (a TCP server on loopback)."""
from __future__ import annotations

import os
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from driftwatch.errors import NotifyError
from driftwatch.notify.email import DEADLINE_FACTOR, SMTPSettings, send_message

ROOT = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).parent / "driftwatch"


@pytest.fixture
def trickling_server():
    """Greets with an endless multi-line 220 reply, a line every half second (or, with where="ehlo",
    greets and then answers EHLO that way), until the client goes away."""
    state: dict = {"where": "greeting"}

    class Trickle(socketserver.BaseRequestHandler):
        def handle(self):
            try:
                if state["where"] == "ehlo":
                    self.request.sendall(b"220 trickle.test ESMTP\r\n")
                    self.request.recv(1024)
                line = b"220-still here\r\n" if state["where"] == "greeting" else b"250-still here\r\n"
                while True:
                    self.request.sendall(line)
                    time.sleep(0.5)
            except OSError:
                pass

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads = True
    state["port"] = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.mark.slow  # waits for a timeout on purpose (seconds of wall time, no CPU)
@pytest.mark.parametrize("where", ["greeting", "ehlo"])
def test_a_trickling_server_is_stopped_by_the_overall_deadline(trickling_server, where):
    trickling_server["where"] = where
    settings = SMTPSettings(host="127.0.0.1", port=trickling_server["port"], timeout=1, security="plain")
    start = time.monotonic()
    with pytest.raises(NotifyError) as exc:
        send_message(build_message_or_plain(), settings)
    elapsed = time.monotonic() - start
    assert DEADLINE_FACTOR * 1 - 0.5 < elapsed < DEADLINE_FACTOR * 1 + 3, elapsed
    assert "overall deadline of 3 s" in str(exc.value) and "\n" not in str(exc.value)


def build_message_or_plain():
    from email.message import EmailMessage
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "dw@example.test", "ops@example.test", "drift"
    msg.set_content("drift")
    return msg


@pytest.mark.slow  # waits for a timeout on purpose (seconds of wall time, no CPU)
def test_report_run_ends_with_exit_2_and_its_report_written(trickling_server, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "report.txt"
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"baselines_dir: {ROOT / 'baselines'}\nsmtp:\n  timeout: 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}
    env["HOME"] = str(home)
    args = ["report", "--unit-file", "examples/sglang-qwen-40toks.service", "--baseline", "70toks",
            "--email", "ops@example.test", "--from", "dw@example.test", "--smtp-host", "127.0.0.1",
            "--smtp-port", str(trickling_server["port"]), "--smtp-plain", "--config", str(cfg),
            "--output", str(out), "--quiet"]
    start = time.monotonic()
    r = subprocess.run([str(DW), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 20
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "overall deadline" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert out.exists() and out.read_text().strip()
