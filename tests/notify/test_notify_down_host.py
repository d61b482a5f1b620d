"""--only-changes with a host that stays down: mail when the set of problems changes, not every run.

Seen on a six-host fleet with a 5-minute cron: one host down for a maintenance mailed every 5 minutes.
The runs here go through `deliver` (state file, SMTP delivery) to a real aiosmtpd server on loopback.
"""

from __future__ import annotations

import copy

from driftwatch.notify.deliver import deliver
from driftwatch.notify.email import PASSWORD_ENV

UNIT = "vllm-qwen.service"
SMTP_USER = "alerts"               # must match the authenticator in conftest.py
SMTP_PASSWORD = "s3cret-smtp-pass"


def _comparison(host, drift, findings):
    return {"schema": "driftwatch.compare/v1", "baseline": {"name": "70toks", "host": "h1", "unit": UNIT},
            "target": {"host": host, "unit": UNIT, "source": "systemctl cat"}, "drift": drift,
            "predicted_throughput_ratio": 0.9 if drift else 1.0, "findings": findings}


def _fleet(down=(), drifted=(), at="2026-12-07T04:00:00Z"):
    """Six hosts h1..h6; the `down` ones unreadable, the `drifted` ones with one finding."""
    hosts = []
    for i in range(1, 7):
        h = f"h{i}"
        if h in down:
            hosts.append({"host": h, "unit": UNIT, "status": "error", "comparison": None,
                          "error": f"{h}: {UNIT}: unreachable: {h} (connection refused)"})
        elif h in drifted:
            hosts.append({"host": h, "unit": UNIT, "status": "drift", "error": None,
                          "comparison": _comparison(h, True, [
                              {"rank": 1, "key": "max_num_seqs", "flag": "--max-num-seqs", "baseline": 256,
                               "current": 128, "rule": "DW210", "severity": "medium",
                               "explanation": "Fewer concurrent sequences."}])})
        else:
            hosts.append({"host": h, "unit": UNIT, "status": "clean", "error": None,
                          "comparison": _comparison(h, False, [])})
    return {"schema": "driftwatch.report/v1", "generated_at": at,
            "baseline": {"name": "70toks", "host": "h1", "unit": UNIT, "metrics": {"throughput": 70.0}},
            "summary": {"hosts": 6, "drifted": len(drifted), "clean": 6 - len(down) - len(drifted),
                        "unreadable": len(down)},
            "hosts": hosts}


def _settings(server, tls_files, state):
    return {"email": ["ops@example.com"], "sender": "driftwatch@gpu-admin.example.com", "state": state,
            "only_changes": True, "smtp_host": server.host, "smtp_port": server.port, "smtp_user": SMTP_USER,
            "smtp_security": "starttls", "smtp_timeout": 5, "smtp_ca_file": tls_files.ca_file}


def test_host_down_twice_then_back_mails_twice(smtp_server, tls_files, tmp_path, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, SMTP_PASSWORD)
    settings = _settings(smtp_server, tls_files, str(tmp_path / "state.json"))

    first = deliver(_fleet(down={"h6"}, at="2026-12-07T04:00:00Z"), settings, always=False)
    assert first.startswith("mailed") and len(smtp_server.received) == 1
    # five minutes later, still down (error text and time differ): the same problem, no mail
    again = _fleet(down={"h6"}, at="2026-12-07T04:05:00Z")
    again["hosts"][5]["error"] = "h6: vllm-qwen.service: unreachable: h6 (timed out after 10s)"
    second = deliver(again, settings, always=False)
    assert second.startswith("no mail sent") and "same problems" in second, second
    assert len(smtp_server.received) == 1

    back = deliver(_fleet(at="2026-12-07T04:10:00Z"), settings, always=False)
    assert back.startswith("mailed") and "resolved" in back, back
    assert len(smtp_server.received) == 2
    assert smtp_server.received[1].message["X-Driftwatch-Status"] == "resolved"
    assert deliver(_fleet(at="2026-12-07T04:15:00Z"), settings, always=False).startswith("no mail sent")
    assert len(smtp_server.received) == 2


def test_a_second_host_going_down_or_new_drift_is_a_change(smtp_server, tls_files, tmp_path, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, SMTP_PASSWORD)
    settings = _settings(smtp_server, tls_files, str(tmp_path / "state.json"))
    deliver(_fleet(down={"h6"}), settings, always=False)
    assert deliver(_fleet(down={"h5", "h6"}), settings, always=False).startswith("mailed")
    assert deliver(_fleet(down={"h6"}), settings, always=False).startswith("mailed")  # h5 came back
    assert deliver(_fleet(down={"h6"}, drifted={"h2"}), settings, always=False).startswith("mailed")
    assert deliver(_fleet(down={"h6"}, drifted={"h2"}), settings, always=False).startswith("no mail sent")
    assert len(smtp_server.received) == 4


def test_without_only_changes_a_down_host_mails_every_run(smtp_server, tls_files, tmp_path, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, SMTP_PASSWORD)
    settings = dict(_settings(smtp_server, tls_files, str(tmp_path / "state.json")), only_changes=False)
    report = _fleet(down={"h6"})
    for _ in range(2):
        assert deliver(copy.deepcopy(report), settings, always=False).startswith("mailed")
    assert len(smtp_server.received) == 2
