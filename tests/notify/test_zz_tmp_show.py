import pytest
from driftwatch.errors import NotifyError
from driftwatch.notify.email import SMTPSettings, build_message, send_message
def _try(msg, s):
    try: send_message(msg, s)
    except Exception as e: print(f"\n{type(e).__name__}: {e}")
def test_show(smtp_server, plain_server, wrong_name_server, hung_server, closed_port, tls_files, report):
    m = build_message(report, "dw@example.com", ["ops@example.com"])
    base = dict(host="127.0.0.1", port=smtp_server.port, user="alerts", password="s3cret-smtp-pass", timeout=1.5, ca_file=tls_files.ca_file)
    _try(m, SMTPSettings(**{**base, "password": "bad"}))
    _try(m, SMTPSettings(**{**base, "port": closed_port}))
    _try(m, SMTPSettings(**{**base, "port": hung_server[1]}))
    _try(m, SMTPSettings(**{**base, "port": hung_server[1], "security": "ssl"}))
    _try(m, SMTPSettings(**{**base, "ca_file": tls_files.other_ca_file}))
    _try(m, SMTPSettings(**{**base, "ca_file": None}))
    _try(m, SMTPSettings(**{**base, "port": wrong_name_server.port}))
    _try(m, SMTPSettings(**{**base, "port": plain_server.port}))
    _try(m, SMTPSettings(**{**base, "security": "plain"}))
    _try(m, SMTPSettings(**{**base, "security": "ssl"}))
    _try(build_message(report, "dw@example.com", ["a@reject.invalid"]), SMTPSettings(**base))
    _try(build_message(report, "dw@example.com", ["ok@x.org","a@reject.invalid"]), SMTPSettings(**base))
    _try(m, SMTPSettings(**{**base, "host": "nonexistent.invalid"}))
