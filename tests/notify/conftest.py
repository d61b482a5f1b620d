"""Fixtures for the notify tests: sample fleet reports, a private CA and real SMTP servers on loopback.

Every server is bound to 127.0.0.1 and stopped in teardown. Certificates are generated per test
session with the `cryptography` package (EC P-256, fast); verification is never switched off in
the client: tests pass the test CA as `ca_file`.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import threading
from dataclasses import dataclass, field
from email import message_from_bytes, policy

import pytest

SMTP_USER = "alerts"               # test_notify_email.py uses the same pair
SMTP_PASSWORD = "s3cret-smtp-pass"


# --------------------------------------------------------------------------- sample reports

def _finding(rank, key, flag, base, cur, rule, severity, dim, ratio, conf, expl):
    return {"rank": rank, "key": key, "flag": flag, "baseline": base, "current": cur,
            "baseline_source": "explicit", "current_source": "explicit", "rule": rule,
            "severity": severity, "impact": {"dimension": dim, "throughput_ratio": ratio, "confidence": conf},
            "explanation": expl}


def _comparison(host, unit, drift, ratio, tp, findings):
    return {"schema": "driftwatch.compare/v1",
            "baseline": {"name": "70toks", "host": "ct129", "unit": "sglang-qwen.service",
                         "metrics": {"throughput": 70.0}},
            "target": {"host": host, "unit": unit, "source": "systemctl cat"},
            "drift": drift, "predicted_throughput_ratio": ratio, "predicted_throughput": tp,
            "findings": findings}


def make_report():
    """14 hosts: ct129 and ct131 drifted, ct200 unreadable, 11 clean."""
    unit = "sglang-qwen.service"
    hosts = [
        {"host": "ct131", "unit": unit, "status": "drift", "error": None,
         "comparison": _comparison("ct131", unit, True, 0.9, 63.0, [
             _finding(1, "mem_fraction_static", "--mem-fraction-static", 0.85, 0.8, "DW210", "medium",
                      "capacity", 0.9, "low", "Less KV cache: fewer concurrent requests fit."),
             _finding(2, "env.HF_TOKEN", None, "changed (redacted)", "changed (redacted)", "DW900", "low",
                      "none", None, "high", "An environment variable changed."),
         ])},
        {"host": "ct129", "unit": unit, "status": "drift", "error": None,
         "comparison": _comparison("ct129", unit, True, 0.6, 42.0, [
             _finding(1, "speculative_num_steps", "--speculative-num-steps", 3, 1, "DW101", "high",
                      "single-stream", 0.6, "medium",
                      "Fewer speculative steps: each forward pass accepts fewer draft tokens, so "
                      "single-stream decoding falls from about 70 to about 42 tok/s."),
             _finding(2, "cuda_graph_max_bs", "--cuda-graph-max-bs", 8, "<none>", "DW130", "low",
                      "aggregate", None, "low", "Value with <b>markup</b> & ampersand."),
         ])},
        {"host": "ct200", "unit": unit, "status": "error", "error": "timeout after 10 s", "comparison": None},
    ]
    for i in range(11):
        h = f"ct{140 + i}"
        hosts.append({"host": h, "unit": unit, "status": "clean", "error": None,
                      "comparison": _comparison(h, unit, False, 1.0, None, [])})
    return {"schema": "driftwatch.report/v1", "generated_at": "2026-11-30T06:00:00Z",
            "baseline": {"name": "70toks", "host": "ct129", "unit": unit, "metrics": {"throughput": 70.0}},
            "summary": {"hosts": 14, "drifted": 2, "clean": 11, "unreadable": 1},
            "hosts": hosts}


def make_clean_report():
    r = make_report()
    r["hosts"] = [h for h in r["hosts"] if h["status"] == "clean"]
    r["summary"] = {"hosts": 11, "drifted": 0, "clean": 11, "unreadable": 0}
    return r


@pytest.fixture
def report():
    return make_report()


@pytest.fixture
def clean_report():
    return make_clean_report()


# --------------------------------------------------------------------------- certificates

@dataclass
class CA:
    cert_pem: bytes
    key: object
    cert: object


def _make_ca(name):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subj = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subj).issuer_name(subj).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    from cryptography.hazmat.primitives.serialization import Encoding
    return CA(cert.public_bytes(Encoding.PEM), key, cert)


def _make_leaf(ca: CA, tmp_path, names=("localhost", "127.0.0.1"), stem="server"):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca.cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([_san(n) for n in names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
            .sign(ca.key, hashes.SHA256()))
    cert_file, key_file = tmp_path / f"{stem}.pem", tmp_path / f"{stem}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def _san(name):
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


@dataclass
class TLSFiles:
    ca_file: str          # the CA that signed the server cert
    other_ca_file: str    # an unrelated CA: using it must fail verification
    cert_file: str
    key_file: str
    wrong_name_cert_file: str  # signed by the trusted CA, but only for mail.example.com
    wrong_name_key_file: str

    def server_context(self, wrong_name=False) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        if wrong_name:
            ctx.load_cert_chain(self.wrong_name_cert_file, self.wrong_name_key_file)
        else:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    ca, other = _make_ca("driftwatch test CA"), _make_ca("some other CA")
    (d / "ca.pem").write_bytes(ca.cert_pem)
    (d / "other-ca.pem").write_bytes(other.cert_pem)
    cert_file, key_file = _make_leaf(ca, d)
    wrong_cert, wrong_key = _make_leaf(ca, d, names=("mail.example.com",), stem="wrong-name")
    return TLSFiles(str(d / "ca.pem"), str(d / "other-ca.pem"), str(cert_file), str(key_file),
                    str(wrong_cert), str(wrong_key))


# --------------------------------------------------------------------------- SMTP servers

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list
    data: bytes
    tls: bool
    authenticated: bool

    @property
    def message(self):
        return message_from_bytes(self.data, policy=policy.default)


class RecordingHandler:
    """Stores every message; refuses recipients in the domain reject.invalid."""

    def __init__(self):
        self.received: list[Received] = []
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower().endswith("@reject.invalid"):
            return f"550 5.1.1 <{address}>: Recipient address rejected: User unknown"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.original_content or envelope.content),
                                          _is_tls(server, session), bool(session.authenticated)))
        return "250 Message accepted for delivery"


def _is_tls(server, session) -> bool:
    """STARTTLS sets session.ssl; with implicit TLS (SMTPS) the transport itself is TLS."""
    transport = getattr(server, "transport", None)
    return session.ssl is not None or (transport is not None and transport.get_extra_info("ssl_object") is not None)


def _authenticator(server, session, envelope, mechanism, auth_data):
    from aiosmtpd.smtp import AuthResult, LoginPassword

    ok = (isinstance(auth_data, LoginPassword) and auth_data.login == SMTP_USER.encode()
          and auth_data.password == SMTP_PASSWORD.encode())
    return AuthResult(success=ok, handled=False)


@dataclass
class SMTPServer:
    host: str
    port: int
    handler: RecordingHandler
    controller: object = field(repr=False, default=None)

    @property
    def received(self):
        return self.handler.received


def _start(tls_files, *, starttls=True, smtps=False, auth=True, auth_require_tls=True, wrong_name=False):
    from aiosmtpd.controller import Controller

    handler = RecordingHandler()
    kwargs = dict(hostname="127.0.0.1", port=free_port(), server_hostname="localhost", ready_timeout=5)
    if smtps:
        kwargs["ssl_context"] = tls_files.server_context()
    if starttls:
        kwargs["tls_context"] = tls_files.server_context(wrong_name=wrong_name)
    if auth:
        kwargs.update(authenticator=_authenticator, auth_require_tls=auth_require_tls)
    controller = Controller(handler, **kwargs)
    controller.start()
    return SMTPServer("127.0.0.1", kwargs["port"], handler, controller)


@pytest.fixture
def smtp_server(tls_files):
    """STARTTLS + AUTH (LOGIN/PLAIN, only after TLS)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srv = _start(tls_files)
    yield srv
    srv.controller.stop()


@pytest.fixture
def smtps_server(tls_files):
    """Implicit TLS (SMTPS) + AUTH."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srv = _start(tls_files, starttls=False, smtps=True, auth_require_tls=False)
    yield srv
    srv.controller.stop()


@pytest.fixture
def wrong_name_server(tls_files):
    """STARTTLS with a certificate from the trusted CA, but issued for mail.example.com."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srv = _start(tls_files, wrong_name=True)
    yield srv
    srv.controller.stop()


@pytest.fixture
def plain_server(tls_files):
    """No STARTTLS offered, but AUTH advertised in clear text (a server we must not send a password to)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srv = _start(tls_files, starttls=False, auth=True, auth_require_tls=False)
    yield srv
    srv.controller.stop()


@pytest.fixture
def hung_server():
    """A socket that completes the TCP handshake (kernel backlog) and never says a word."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield s.getsockname()
    s.close()


@pytest.fixture
def closed_port():
    return free_port()
