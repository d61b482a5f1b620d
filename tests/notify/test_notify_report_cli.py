"""End to end: `driftwatch report` run as cron would run it (a subprocess of the installed console
script), mailing through the real aiosmtpd servers of conftest.py on 127.0.0.1.

Every run gets HOME set to a temporary directory (no user config is read), no inherited
DRIFTWATCH_* / XDG_CONFIG_HOME / SSL_CERT_* variables, and cwd = the repository root (so
`--baseline 70toks` is `baselines/70toks.yaml`). `driftwatch/cli/` has no `__main__` guard, so
`python -m driftwatch.cli` would do nothing: the console script next to sys.executable is used.
"""

from __future__ import annotations

import base64
import binascii
import os
import quopri
import re
import subprocess
import sys
import time
from email import message_from_bytes, policy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).parent / "driftwatch"
DRIFT_UNIT = "examples/sglang-qwen-40toks.service"
CLEAN_UNIT = "examples/sglang-qwen-70toks.service"
TO, FROM = "ops@example.com", "dw@example.com"
SMTP_USER = "alerts"               # must match the authenticator in conftest.py
SMTP_PASSWORD = "s3cret-smtp-pass"

pytestmark = [
    pytest.mark.skipif(not DW.exists(), reason=f"console script {DW} not installed"),
    pytest.mark.skipif(os.path.exists("/etc/driftwatch/config.yaml"),
                       reason="/etc/driftwatch/config.yaml exists and would be read by every run"),
]

_DROP_ENV = ("XDG_CONFIG_HOME", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    return h


def run_dw(args, home, *, password=SMTP_PASSWORD, timeout=30):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_") and k not in _DROP_ENV}
    env["HOME"] = str(home)
    if password is not None:
        env["DRIFTWATCH_SMTP_PASSWORD"] = password
    return subprocess.run([str(DW), *map(str, args)], cwd=ROOT, env=env, capture_output=True, text=True, check=False,
                          timeout=timeout)


def report_args(unit_file, port, *, ca_file=None, baseline="70toks", extra=()):
    args = ["report", "--unit-file", unit_file, "--baseline", baseline, "--email", TO, "--from", FROM,
            "--smtp-host", "127.0.0.1", "--smtp-port", port, "--smtp-user", SMTP_USER]
    if ca_file:
        args += ["--smtp-ca-file", ca_file]
    return args + list(extra)


def assert_one_clean_error_line(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith("driftwatch:"), line
    assert "Traceback" not in r.stderr and "Error:" not in line.split(":", 1)[0]
    low = line.lower()
    for n in needles:
        if isinstance(n, tuple):
            assert any(x.lower() in low for x in n), (n, line)
        else:
            assert n.lower() in low, (n, line)
    return line


# --------------------------------------------------------------------------- 1. the cron-style run


def test_cron_style_run_mails_the_seed_regression(smtp_server, tls_files, home, tmp_path):
    out = tmp_path / "last-report.txt"
    r = run_dw(report_args(DRIFT_UNIT, smtp_server.port, ca_file=tls_files.ca_file,
                           extra=["--output", out, "--quiet"]), home)
    assert r.returncode == 1, r.stderr
    assert r.stdout == "" and r.stderr == ""       # a quiet cron run: cron mails nothing of its own

    assert len(smtp_server.received) == 1
    got = smtp_server.received[0]
    assert got.tls and got.authenticated
    assert got.mail_from == FROM and got.rcpt_tos == [TO]
    m = got.message
    assert m.get_content_type() == "multipart/alternative"
    assert [p.get_content_type() for p in m.iter_parts()] == ["text/plain", "text/html"]
    # .strip(): for a subject of 79-80 characters CPython's email folder emits "Subject:\n [driftwatch] ..."
    # (legal folding white space, but the parsed value keeps the leading blank)
    subject = str(m["Subject"]).strip()
    assert "drifted from 70toks" in subject and re.search(r"predicted \d+(\.\d)? tok/s", subject), subject
    assert subject.startswith("[driftwatch] ")
    assert m["From"] == FROM and m["To"] == TO
    assert m["Date"] is not None and m["Date"].datetime is not None
    mid = str(m["Message-ID"]).strip()
    assert re.fullmatch(r"<[^<>@\s]+@example\.com>", mid), mid
    text = m.get_body(preferencelist=("plain",)).get_content()
    html = m.get_body(preferencelist=("html",)).get_content()
    assert "--speculative-num-steps" in text and "3 \u2192 1" in text
    assert "--speculative-num-steps" in html and "<table" in html.lower()
    assert "<script" not in html.lower() and not re.search(r"""(src|href)\s*=\s*["']?https?:""", html, re.IGNORECASE)

    assert out.exists()
    saved = out.read_text()
    assert "drifted from 70toks" in saved and "--speculative-num-steps: 3 \u2192 1" in saved
    assert saved.strip() == text.replace("\r\n", "\n").strip()   # the file holds the mailed report (CRLF on the wire)


# --------------------------------------------------------------------------- 2. clean run


def test_clean_run_sends_nothing(smtp_server, tls_files, home):
    r = run_dw(report_args(CLEAN_UNIT, smtp_server.port, ca_file=tls_files.ca_file, extra=["--quiet"]), home)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""
    assert smtp_server.received == []


def test_clean_run_not_quiet_says_why_no_mail(smtp_server, tls_files, home):
    r = run_dw(report_args(CLEAN_UNIT, smtp_server.port, ca_file=tls_files.ca_file), home)
    assert r.returncode == 0, r.stderr
    assert "no mail sent" in r.stderr and "Traceback" not in r.stderr
    assert "70toks" in r.stdout
    assert smtp_server.received == []


# --------------------------------------------------------------------------- 3. --only-changes


def test_only_changes_mails_once_per_distinct_drift(smtp_server, tls_files, home, tmp_path):
    state = tmp_path / "state" / "state.json"
    extra = ["--state", state, "--only-changes", "--quiet"]

    def step(unit):
        return run_dw(report_args(unit, smtp_server.port, ca_file=tls_files.ca_file, extra=extra), home)

    r = step(DRIFT_UNIT)
    assert (r.returncode, r.stderr, len(smtp_server.received)) == (1, "", 1)
    assert state.exists()
    first_state = state.read_text()

    r = step(DRIFT_UNIT)                       # same findings: no new mail, still exit 1
    assert (r.returncode, r.stderr, len(smtp_server.received)) == (1, "", 1)

    r = step(CLEAN_UNIT)                       # fixed: one "resolved" mail
    assert (r.returncode, r.stderr, len(smtp_server.received)) == (0, "", 2)
    assert str(smtp_server.received[1].message["Subject"]).strip().startswith("[driftwatch] resolved: ")
    assert state.read_text() != first_state
    r = step(CLEAN_UNIT)                       # still clean: nothing more
    assert (r.returncode, r.stderr, len(smtp_server.received)) == (0, "", 2)

    r = step(DRIFT_UNIT)                       # the same drift is back: mailed again
    assert (r.returncode, r.stderr, len(smtp_server.received)) == (1, "", 3)
    assert "drifted from 70toks" in str(smtp_server.received[2].message["Subject"])
    assert smtp_server.received[2].message["Message-ID"] != smtp_server.received[0].message["Message-ID"]
    leftovers = [p.name for p in state.parent.iterdir() if p.name != "state.json"]
    assert leftovers == []                     # atomic writes leave no temp files behind


def test_only_changes_without_state_is_a_usage_error(smtp_server, tls_files, home):
    r = run_dw(report_args(DRIFT_UNIT, smtp_server.port, ca_file=tls_files.ca_file,
                           extra=["--only-changes", "--quiet"]), home)
    assert_one_clean_error_line(r, "--state")
    assert smtp_server.received == []


def test_failed_delivery_does_not_settle_the_state(tls_files, home, tmp_path, smtp_server):
    """A mail that could not be delivered must be retried next run, even with --only-changes."""
    state = tmp_path / "state.json"
    extra = ["--state", state, "--only-changes", "--quiet"]
    r = run_dw(report_args(DRIFT_UNIT, smtp_server.port, ca_file=tls_files.ca_file, extra=extra), home,
               password="wrong")
    assert r.returncode == 2 and smtp_server.received == []
    r = run_dw(report_args(DRIFT_UNIT, smtp_server.port, ca_file=tls_files.ca_file, extra=extra), home)
    assert (r.returncode, r.stderr, len(smtp_server.received)) == (1, "", 1)


# --------------------------------------------------------------------------- 4. loud failures


def test_wrong_password_is_one_loud_line_and_output_still_written(smtp_server, tls_files, home, tmp_path):
    out = tmp_path / "last-report.txt"
    r = run_dw(report_args(DRIFT_UNIT, smtp_server.port, ca_file=tls_files.ca_file,
                           extra=["--output", out, "--quiet"]), home, password="not-the-password")
    line = assert_one_clean_error_line(r, f"127.0.0.1:{smtp_server.port}", "authentication")
    assert "not-the-password" not in line and SMTP_PASSWORD not in line
    assert r.stdout == ""
    assert smtp_server.received == []
    assert "--speculative-num-steps" in out.read_text()


def test_closed_port_is_refused(closed_port, tls_files, home, tmp_path):
    out = tmp_path / "out.txt"
    r = run_dw(report_args(DRIFT_UNIT, closed_port, ca_file=tls_files.ca_file, extra=["--output", out, "--quiet"]),
               home)
    assert_one_clean_error_line(r, f"127.0.0.1:{closed_port}", "refused")
    assert out.exists()


@pytest.mark.slow  # waits for a timeout on purpose (seconds of wall time, no CPU)
def test_hung_server_times_out_from_config(hung_server, tls_files, home, tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"baselines_dir: {ROOT / 'baselines'}\nsmtp:\n  timeout: 2\n")  # names: not ./baselines
    _, port = hung_server
    t0 = time.monotonic()
    r = run_dw(report_args(DRIFT_UNIT, port, ca_file=tls_files.ca_file, extra=["--config", cfg, "--quiet"]),
               home, timeout=20)
    elapsed = time.monotonic() - t0
    assert_one_clean_error_line(r, f"127.0.0.1:{port}", ("timed out", "timeout"))
    assert elapsed < 10, elapsed


def test_untrusted_certificate_fails_verification(smtp_server, home):
    r = run_dw(report_args(DRIFT_UNIT, smtp_server.port, extra=["--quiet"]), home)   # no --smtp-ca-file
    assert_one_clean_error_line(r, f"127.0.0.1:{smtp_server.port}", "certificate")
    assert smtp_server.received == []


def test_rejected_recipient_is_trouble(smtp_server, tls_files, home):
    args = report_args(DRIFT_UNIT, smtp_server.port, ca_file=tls_files.ca_file, extra=["--quiet"])
    args[args.index(TO)] = "nobody@reject.invalid"
    r = run_dw(args, home)
    assert_one_clean_error_line(r, f"127.0.0.1:{smtp_server.port}", "nobody@reject.invalid", "refused")
    assert smtp_server.received == []


# --------------------------------------------------------------------------- 5. secrets


PLANTED = ("sk-PLANTED-1", "hf_PLANTED_2")
BASE_SECRETS = ("sk-BASELINE-9", "hf_BASELINE_8")


def _unit_with_secrets(src: Path, api_key: str, hf_token: str) -> str:
    text = src.read_text()
    text = text.replace("[Service]\n", f"[Service]\nEnvironment=HF_TOKEN={hf_token}\n", 1)
    text = text.replace("  --port 30000 \\\n", f"  --port 30000 \\\n  --api-key {api_key} \\\n", 1)
    assert api_key in text and hf_token in text
    return text


def _decoded_views(raw: bytes) -> list[bytes]:
    """The raw bytes, plus every way a secret could hide in them: QP/base64 bodies, encoded headers,
    and any long base64-looking run."""
    views = [raw, quopri.decodestring(raw)]
    m = message_from_bytes(raw, policy=policy.default)
    for k, v in m.items():
        views.append(f"{k}: {v}".encode())
    for part in m.walk():
        if not part.is_multipart():
            views.append(part.get_payload(decode=True) or b"")
    for run in re.findall(rb"[A-Za-z0-9+/]{12,}={0,2}", raw.replace(b"\r\n", b"").replace(b"\n", b"")):
        for cut in range(4):
            chunk = run[cut:]
            chunk = chunk[: len(chunk) - len(chunk) % 4]
            try:
                views.append(base64.b64decode(chunk, validate=True))
            except (binascii.Error, ValueError):
                pass
    return views


def test_secrets_never_reach_the_mail(smtp_server, tls_files, home, tmp_path):
    base = tmp_path / "baseline.service"
    cur = tmp_path / "current.service"
    base.write_text(_unit_with_secrets(ROOT / CLEAN_UNIT, *BASE_SECRETS))
    cur.write_text(_unit_with_secrets(ROOT / DRIFT_UNIT, *PLANTED))
    out = tmp_path / "out.txt"
    r = run_dw(report_args(cur, smtp_server.port, ca_file=tls_files.ca_file, baseline=base,
                           extra=["--output", out]), home)
    assert r.returncode == 1, r.stderr
    assert len(smtp_server.received) == 1
    raw = smtp_server.received[0].data
    for view in _decoded_views(raw):
        for secret in PLANTED + BASE_SECRETS:
            assert secret.encode() not in view
    m = smtp_server.received[0].message
    text = m.get_body(preferencelist=("plain",)).get_content()
    html = m.get_body(preferencelist=("html",)).get_content()
    assert "changed (redacted)" in text
    assert "changed (redacted)" in html or "changed (redacted)".replace("(", "&#40;") in html
    assert "--api-key" in text and "HF_TOKEN" in text
    for where in (r.stdout, r.stderr, out.read_text()):
        for secret in PLANTED + BASE_SECRETS:
            assert secret not in where


# --------------------------------------------------------------------------- 6. the password


@pytest.mark.parametrize("form", [["--smtp-password", "hunter2"], ["--smtp-password=hunter2"]])
def test_no_password_option_on_the_command_line(smtp_server, tls_files, home, form):
    r = run_dw(report_args(DRIFT_UNIT, smtp_server.port, ca_file=tls_files.ca_file,
                           extra=[*form, "--quiet"]), home, password=None)
    assert r.returncode == 2
    assert "--smtp-password" in r.stderr and "Traceback" not in r.stderr
    assert "hunter2" not in r.stderr and r.stdout == ""    # the would-be password is not echoed back
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("driftwatch:")
    assert smtp_server.received == []


def _password_file(tmp_path, mode):
    p = tmp_path / f"smtp-password-{mode:o}"
    p.write_text(SMTP_PASSWORD + "\n")
    os.chmod(p, mode)
    return p


def test_world_readable_password_file_is_refused(smtp_server, tls_files, home, tmp_path):
    pw = _password_file(tmp_path, 0o644)
    out = tmp_path / "out.txt"
    r = run_dw(report_args(DRIFT_UNIT, smtp_server.port, ca_file=tls_files.ca_file,
                           extra=["--smtp-password-file", pw, "--output", out, "--quiet"]), home, password=None)
    line = assert_one_clean_error_line(r, str(pw), "0644")
    assert SMTP_PASSWORD not in line
    assert smtp_server.received == []
    assert out.exists()


def test_private_password_file_works(smtp_server, tls_files, home, tmp_path):
    pw = _password_file(tmp_path, 0o600)
    r = run_dw(report_args(DRIFT_UNIT, smtp_server.port, ca_file=tls_files.ca_file,
                           extra=["--smtp-password-file", pw, "--quiet"]), home, password=None)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "")
    assert len(smtp_server.received) == 1 and smtp_server.received[0].authenticated


# --------------------------------------------------------------------------- 7. cron-example


def test_cron_example_prints_crontab_service_and_timer(home):
    r = run_dw(["cron-example"], home, password=None)
    assert r.returncode == 0, r.stderr
    # a venv under /tmp (as in CI) gets a warning: PrivateTmp=yes would hide it from the service
    assert all(ln.startswith("driftwatch: warning: driftwatch ") and " is under /tmp" in ln
               for ln in r.stderr.splitlines()), r.stderr
    assert (r.stderr != "") == str(os.path.realpath(DW)).startswith("/tmp/")
    out = r.stdout
    assert re.search(r"^MAILTO=gpu-oncall@example\.com$", out, re.MULTILINE)
    job = [ln for ln in out.splitlines() if re.match(r"^\S+ \S+ \S+ \S+ \S+ \S+ flock ", ln)]
    assert len(job) == 1, out
    assert " report " in job[0] and "--quiet" in job[0]
    # the one job: each unit against its own baseline from the inventory, the store fed by the report
    assert "--baseline " not in job[0] and "--store /var/lib/driftwatch/store" in job[0]
    assert str(DW) in job[0] or os.path.realpath(DW) in job[0]
    assert "password" not in job[0].lower()
    assert "[Service]" in out and "Type=oneshot" in out and "ProtectSystem=strict" in out
    assert "[Timer]" in out and "Persistent=true" in out
    assert "# ---- examples/cron/driftwatch" in out
    assert "driftwatch-report.service" in out and "driftwatch-report.timer" in out
