"""Mail through a real SMTP server (aiosmtpd, STARTTLS, auth): each finding is "new since last run"
or "still present" against the state file, and carries "since" from the snapshot store."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).parent / "driftwatch"
U40 = ROOT / "examples" / "sglang-qwen-40toks.service"

pytestmark = pytest.mark.skipif(os.path.exists("/etc/driftwatch/config.yaml"),
                                reason="/etc/driftwatch/config.yaml exists and would be read by every run")


def dw(*args, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}
    env.update(HOME=str(home), DRIFTWATCH_SMTP_PASSWORD="s3cret-smtp-pass")
    return subprocess.run([str(DW), *map(str, args)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_second_mail_marks_new_and_still_present(smtp_server, tls_files, tmp_path):
    home, store, state = tmp_path / "home", tmp_path / "store", tmp_path / "state.json"
    home.mkdir()
    other = tmp_path / "ct130" / "sglang-qwen.service"
    other.parent.mkdir()
    shutil.copy(U40, other)
    r = dw("snapshot", "--unit-file", U40, "--store", store, home=home)
    assert r.returncode == 0, r.stderr
    snapshot = Path(r.stdout.split("\t")[3].strip())
    mail = ["--baseline", "70toks", "--email", "ops@example.com", "--from", "dw@example.com",
            "--smtp-host", "127.0.0.1", "--smtp-port", smtp_server.port, "--smtp-user", "alerts",
            "--smtp-ca-file", tls_files.ca_file, "--state", state, "--store", store, "-q"]
    first = dw("report", "--unit-file", U40, *mail, home=home)
    assert first.returncode == 1, first.stderr
    second = dw("report", "--unit-file", U40, "--unit-file", other, *mail, home=home)
    assert second.returncode == 1, second.stderr
    assert len(smtp_server.received) == 2
    text1 = smtp_server.received[0].message.get_body(preferencelist=("plain",)).get_content()
    assert "new since last run" not in text1 and "still present" not in text1  # no last run to compare with
    text = " ".join(smtp_server.received[1].message.get_body(preferencelist=("plain",)).get_content().split())
    html = smtp_server.received[1].message.get_body(preferencelist=("html",)).get_content()
    assert "still present; since " in text and f"first seen in snapshot {snapshot.name}" in text
    assert "new since last run" in text and "new since last run" in html
    sections = {part.split(" ", 1)[0]: part for part in text.split("== ")[1:]}  # one per host, findings listed
    assert "still present" in sections[str(U40)]
    assert "new since last run" in sections[str(other)] and "still present" not in sections[str(other)]
