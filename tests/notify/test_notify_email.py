"""Delivery through real SMTP servers on 127.0.0.1 (aiosmtpd), with STARTTLS, SMTPS and AUTH."""

from __future__ import annotations

import base64
import copy
import os
import quopri
import time

import pytest

from driftwatch.errors import InputError, NotifyError
from driftwatch.notify.email import SMTPSettings, build_message, load_password_file, send_message
from driftwatch.notify.state import load_state, save_state, should_send, state_for

SENDER = "driftwatch@gpu-admin.example.com"
SMTP_USER = "alerts"               # must match the authenticator in conftest.py
SMTP_PASSWORD = "s3cret-smtp-pass"
TO = ["ops@example.com"]


def settings_for(server, tls_files, **kw):
    base = dict(host=server.host, port=server.port, user=SMTP_USER, password=SMTP_PASSWORD,
                security="starttls", timeout=5, ca_file=tls_files.ca_file)
    base.update(kw)
    return SMTPSettings(**base)


def _parts(message):
    text = message.get_body(preferencelist=("plain",))
    html = message.get_body(preferencelist=("html",))
    return text, html


# --------------------------------------------------------------------------- happy paths


def test_mail_arrives_with_both_parts_and_findings(smtp_server, tls_files, report):
    msg = build_message(report, SENDER, TO)
    send_message(msg, settings_for(smtp_server, tls_files))

    assert len(smtp_server.received) == 1
    got = smtp_server.received[0]
    assert got.tls and got.authenticated          # STARTTLS was used, then AUTH
    assert got.mail_from == SENDER and got.rcpt_tos == TO
    m = got.message
    assert m.get_content_type() == "multipart/alternative"
    assert m["Subject"] == "[driftwatch] 2 of 14 hosts drifted from 70toks: ct129 predicted 42 tok/s, 1 unreadable"
    assert m["From"] == SENDER and m["To"] == "ops@example.com"
    mid = str(m["Message-ID"]).strip()  # folding is legal; the default policy keeps short ids on one line
    assert m["Date"] and mid.startswith("<") and mid.endswith("@gpu-admin.example.com>")
    assert m["Auto-Submitted"] == "auto-generated"
    text, html = _parts(m)
    assert text is not None and html is not None
    t, h = text.get_content(), html.get_content()
    for body in (t, h):
        assert "--speculative-num-steps" in body and "ct129" in body and "42 tok/s" in body
        assert "ct200" in body and "timeout after 10 s" in body
    assert "3 \u2192 1" in t
    assert h.lstrip().lower().startswith("<!doctype html>")


def test_smtps_implicit_tls(smtps_server, tls_files, report):
    send_message(build_message(report, SENDER, TO), settings_for(smtps_server, tls_files, security="ssl"))
    assert len(smtps_server.received) == 1 and smtps_server.received[0].tls


def test_starttls_used_without_auth_when_offered(smtp_server, tls_files, report):
    send_message(build_message(report, SENDER, TO),
                 settings_for(smtp_server, tls_files, user=None, password=None))
    assert smtp_server.received[0].tls and not smtp_server.received[0].authenticated


def test_several_recipients(smtp_server, tls_files, report):
    to = ["ops@example.com", "oncall@example.com"]
    send_message(build_message(report, SENDER, to), settings_for(smtp_server, tls_files))
    assert smtp_server.received[0].rcpt_tos == to
    assert smtp_server.received[0].message["To"] == "ops@example.com, oncall@example.com"


# --------------------------------------------------------------------------- failures, one clear line


def _one_line(err: NotifyError, server: str):
    text = str(err)
    assert "\n" not in text
    assert server in text, text
    return text


def test_wrong_password(smtp_server, tls_files, report):
    with pytest.raises(NotifyError) as e:
        send_message(build_message(report, SENDER, TO),
                     settings_for(smtp_server, tls_files, password="wrong"))
    text = _one_line(e.value, f"127.0.0.1:{smtp_server.port}")
    assert "authentication failed" in text and "alerts" in text and "535" in text
    assert "wrong" not in text
    assert smtp_server.received == []


def test_connection_refused(closed_port, report, tls_files):
    s = SMTPSettings(host="127.0.0.1", port=closed_port, timeout=2, ca_file=tls_files.ca_file)
    with pytest.raises(NotifyError) as e:
        send_message(build_message(report, SENDER, TO), s)
    assert "connection refused" in _one_line(e.value, f"127.0.0.1:{closed_port}")


@pytest.mark.slow  # waits for a timeout on purpose (seconds of wall time, no CPU)
@pytest.mark.parametrize("security", ["starttls", "ssl"])
def test_hung_server_times_out(hung_server, report, tls_files, security):
    host, port = hung_server
    s = SMTPSettings(host=host, port=port, timeout=1.5, security=security, ca_file=tls_files.ca_file)
    t0 = time.monotonic()
    with pytest.raises(NotifyError) as e:
        send_message(build_message(report, SENDER, TO), s)
    elapsed = time.monotonic() - t0
    assert elapsed < 5, elapsed
    assert "timed out after 1.5 s" in _one_line(e.value, f"{host}:{port}")


def test_untrusted_certificate(smtp_server, tls_files, report):
    """The server's cert is signed by a CA the client does not trust: no mail, no password sent."""
    with pytest.raises(NotifyError) as e:
        send_message(build_message(report, SENDER, TO),
                     settings_for(smtp_server, tls_files, ca_file=tls_files.other_ca_file))
    text = _one_line(e.value, f"127.0.0.1:{smtp_server.port}")
    assert "certificate verification failed" in text
    assert smtp_server.received == []


def test_untrusted_certificate_system_store(smtp_server, tls_files, report):
    """Without ca_file the system store is used: our private CA is not in it."""
    with pytest.raises(NotifyError, match="certificate verification failed"):
        send_message(build_message(report, SENDER, TO), settings_for(smtp_server, tls_files, ca_file=None))


def test_hostname_mismatch(wrong_name_server, tls_files, report):
    """A cert from the trusted CA, but for another name: verification fails, nothing is sent."""
    with pytest.raises(NotifyError) as e:
        send_message(build_message(report, SENDER, TO), settings_for(wrong_name_server, tls_files))
    text = _one_line(e.value, f"127.0.0.1:{wrong_name_server.port}")
    assert "certificate verification failed" in text and "mismatch" in text
    assert wrong_name_server.received == []


def test_no_starttls_but_auth_needed(plain_server, tls_files, report):
    """The server offers AUTH in clear text, no STARTTLS: the password is not sent."""
    with pytest.raises(NotifyError) as e:
        send_message(build_message(report, SENDER, TO), settings_for(plain_server, tls_files))
    text = _one_line(e.value, f"127.0.0.1:{plain_server.port}")
    assert "does not offer STARTTLS" in text and "clear text" in text
    assert plain_server.received == []


def test_auth_refused_before_tls_in_plain_mode(smtp_server, tls_files, report):
    """--smtp-plain against a server that only allows AUTH after TLS: clear error, not a crash."""
    with pytest.raises(NotifyError) as e:
        send_message(build_message(report, SENDER, TO), settings_for(smtp_server, tls_files, security="plain"))
    assert "AUTH" in _one_line(e.value, f"127.0.0.1:{smtp_server.port}")


def test_all_recipients_refused(smtp_server, tls_files, report):
    with pytest.raises(NotifyError) as e:
        send_message(build_message(report, SENDER, ["nobody@reject.invalid"]), settings_for(smtp_server, tls_files))
    text = _one_line(e.value, f"127.0.0.1:{smtp_server.port}")
    assert "recipients refused" in text and "nobody@reject.invalid" in text and "550" in text
    assert smtp_server.received == []


def test_some_recipients_refused(smtp_server, tls_files, report):
    to = ["ops@example.com", "gone@reject.invalid", "left@reject.invalid"]
    with pytest.raises(NotifyError) as e:
        send_message(build_message(report, SENDER, to), settings_for(smtp_server, tls_files))
    text = _one_line(e.value, f"127.0.0.1:{smtp_server.port}")
    assert "gone@reject.invalid" in text and "left@reject.invalid" in text and "ops@example.com" not in text
    assert smtp_server.received[0].rcpt_tos == ["ops@example.com"]


def test_user_without_password_is_input_error(report):
    with pytest.raises(InputError, match="DRIFTWATCH_SMTP_PASSWORD"):
        send_message(build_message(report, SENDER, TO), SMTPSettings(user="alerts"))


def test_bad_settings():
    with pytest.raises(InputError):
        SMTPSettings(security="tls")
    with pytest.raises(InputError):
        SMTPSettings(port=70000)
    with pytest.raises(InputError):
        SMTPSettings(timeout=0)
    assert SMTPSettings(security="ssl").effective_port == 465
    assert SMTPSettings(user="u").effective_port == 587
    assert SMTPSettings().effective_port == 25
    assert "pw" not in repr(SMTPSettings(user="u", password="pw"))


def test_bad_addresses(report):
    with pytest.raises(InputError):
        build_message(report, SENDER, [])
    with pytest.raises(InputError):
        build_message(report, "", TO)
    with pytest.raises(InputError):
        build_message(report, SENDER, ["ops@example.com\r\nBcc: evil@example.com"])


# --------------------------------------------------------------------------- secrets


def _decoded_bodies(message) -> str:
    out = []
    for part in message.walk():
        if not part.is_multipart():
            out.append(part.get_content())
    return "\n".join(out)


def test_secrets_never_in_the_raw_message(smtp_server, tls_files, report, monkeypatch):
    planted = "sk-PLANTED-9f8e7d6c5b4a"
    # the secret as the SMTP password (via the environment) ...
    monkeypatch.setenv("DRIFTWATCH_SMTP_PASSWORD", planted)
    # ... and smuggled into fields that are not part of the report schema
    r = copy.deepcopy(report)
    r["hosts"][1]["comparison"]["findings"][0]["raw_argv"] = ["--api-key", planted]
    r["hosts"][1]["comparison"]["target"]["ssh_password"] = planted
    r["hosts"][1]["environment"] = {"HF_TOKEN": planted}
    r["secret"] = planted
    r["hosts"][0]["comparison"]["findings"][1]["baseline"] = "changed (redacted)"
    r["hosts"][0]["comparison"]["findings"][1]["current"] = "changed (redacted)"

    s = settings_for(smtp_server, tls_files, user=SMTP_USER, password=SMTP_PASSWORD)
    msg = build_message(r, SENDER, TO)
    send_message(msg, s)
    raw = smtp_server.received[0].data
    variants = [planted, base64.b64encode(planted.encode()).decode(), quopri.encodestring(planted.encode()).decode(),
                SMTP_PASSWORD]
    for v in variants:
        assert v.encode() not in raw, v
    decoded = _decoded_bodies(smtp_server.received[0].message)
    assert planted not in decoded and SMTP_PASSWORD not in decoded
    assert "changed (redacted)" in decoded
    assert os.environ["DRIFTWATCH_SMTP_PASSWORD"] == planted  # untouched


# --------------------------------------------------------------------------- a cron-style run


def _run_once(report, state_file, server, tls_files, only_changes=True):
    """What `driftwatch report --only-changes --state FILE` does after collecting."""
    state = load_state(state_file)
    send, reason = should_send(report, state, only_changes=only_changes, always=False)
    if send:
        send_message(build_message(report, SENDER, TO), settings_for(server, tls_files))
    save_state(state_file, state_for(report, sent=send))
    return send, reason


def test_clean_report_sends_nothing(smtp_server, tls_files, clean_report, tmp_path):
    send, reason = _run_once(clean_report, str(tmp_path / "state.json"), smtp_server, tls_files, only_changes=False)
    assert not send and "no drift" in reason
    assert smtp_server.received == []


def test_only_changes_sends_once_for_the_same_drift(smtp_server, tls_files, report, clean_report, tmp_path):
    state_file = str(tmp_path / "state" / "report-state.json")
    report["hosts"] = [h for h in report["hosts"] if h["status"] != "error"]  # unreadable hosts always mail
    report["summary"]["unreadable"] = 0

    assert _run_once(report, state_file, smtp_server, tls_files)[0] is True
    assert len(smtp_server.received) == 1

    again = copy.deepcopy(report)
    again["generated_at"] = "2026-12-01T06:00:00Z"
    again["hosts"].reverse()
    send, reason = _run_once(again, state_file, smtp_server, tls_files)
    assert send is False and "same findings" in reason
    assert len(smtp_server.received) == 1

    changed = copy.deepcopy(report)
    changed["hosts"][1]["comparison"]["findings"][0]["current"] = 2
    assert _run_once(changed, state_file, smtp_server, tls_files)[0] is True
    assert len(smtp_server.received) == 2

    # fixed: one "resolved" mail, then quiet; the same drift comes back: mailed again
    send, reason = _run_once(clean_report, state_file, smtp_server, tls_files)
    assert send is True and reason.startswith("resolved")
    assert _run_once(clean_report, state_file, smtp_server, tls_files)[0] is False
    assert _run_once(changed, state_file, smtp_server, tls_files)[0] is True
    assert len(smtp_server.received) == 4


def test_failed_delivery_does_not_mark_the_report_sent(closed_port, tls_files, report, tmp_path):
    state_file = str(tmp_path / "state.json")
    s = SMTPSettings(host="127.0.0.1", port=closed_port, timeout=2, ca_file=tls_files.ca_file)
    send, _ = should_send(report, load_state(state_file), only_changes=True, always=False)
    assert send
    with pytest.raises(NotifyError):
        send_message(build_message(report, SENDER, TO), s)
    # the caller saves state only after delivery: nothing saved, next run tries again
    assert load_state(state_file) is None


# --------------------------------------------------------------------------- password file


def test_password_file_mode_0644_refused(tmp_path):
    p = tmp_path / "smtp-password"
    p.write_text("hunter2\n")
    os.chmod(p, 0o644)
    with pytest.raises(InputError) as e:
        load_password_file(str(p))
    assert "chmod 600" in str(e.value) and "0644" in str(e.value) and "hunter2" not in str(e.value)


def test_password_file_group_readable_refused(tmp_path):
    p = tmp_path / "pw"
    p.write_text("hunter2\n")
    os.chmod(p, 0o640)
    with pytest.raises(InputError, match="group"):
        load_password_file(str(p))


def test_password_file_0600_ok(tmp_path):
    p = tmp_path / "pw"
    p.write_text("hunter2\n")
    os.chmod(p, 0o600)
    assert load_password_file(str(p)) == "hunter2"


def test_password_file_missing_or_empty(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_password_file(str(tmp_path / "nope"))
    p = tmp_path / "empty"
    p.write_text("\n")
    os.chmod(p, 0o600)
    with pytest.raises(InputError, match="empty"):
        load_password_file(str(p))
