"""Mail a fleet report: build a multipart text + HTML message and deliver it over SMTP, loudly.

AIDE's known failure is the daily mail silently going nowhere. Here every delivery problem
(connection refused, a server that never answers, TLS or certificate failure, authentication
failure, a refused sender or recipient, a server that would take a password in clear text) raises
`NotifyError` whose message is ONE line naming the server and the reason; the CLI prints it and
exits 2, so cron's own MAILTO catches it.

Security: `security="starttls"` (default) upgrades with STARTTLS whenever the server offers it
and *requires* it when a user/password is configured; `"ssl"` is SMTPS (implicit TLS);
`"plain"` never uses TLS. Certificates are always verified (`ca_file` adds a private CA instead
of the system store). The password comes only from `DRIFTWATCH_SMTP_PASSWORD` or a password file
(`load_password_file`), never from the command line, and it never enters the message.
"""

from __future__ import annotations

import os
import smtplib
import socket
import ssl
import stat
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, make_msgid, parseaddr
from typing import TYPE_CHECKING

from driftwatch import __version__
from driftwatch.errors import InputError, NotifyError
from driftwatch.notify.smtp_words import PASSWORD_ENV, SECURITY_MODES  # re-exported: callers import them here
from driftwatch.report import get_format
from driftwatch.report.wording import subject
from driftwatch.resolver import ResolveTimeout, local_fqdn, resolve

if TYPE_CHECKING:
    from driftwatch.report.document import FleetReportDoc


@dataclass
class SMTPSettings:
    """Where and how to deliver.

    port: None picks 465 for "ssl", 587 for "starttls" with a user (submission), else 25.
    security: "starttls" | "ssl" | "plain" (see module docstring).
    timeout: seconds for each read of the server's answer, and for name resolution and the connection;
      the whole delivery (resolving, connecting, greeting, every command, the data) has one deadline
      of DEADLINE_FACTOR x timeout, however slowly a server trickles its lines.
    ca_file: PEM bundle to trust instead of the system CAs (verification is always on).
    """

    host: str = "localhost"
    port: int | None = None
    user: str | None = None
    password: str | None = None
    security: str = "starttls"
    timeout: float = 30
    ca_file: str | None = None

    def __post_init__(self):
        if self.security not in SECURITY_MODES:
            raise InputError(f"SMTP security must be one of {', '.join(SECURITY_MODES)}, not {self.security!r}")
        if not self.host or any(c in str(self.host) for c in " \r\n\t"):
            raise InputError(f"invalid SMTP host {self.host!r}")
        if self.port is not None:
            try:
                port = int(self.port)
            except (TypeError, ValueError):
                raise InputError(f"SMTP port must be a number, not {self.port!r}") from None
            if not 0 < port < 65536 or isinstance(self.port, bool):
                raise InputError(f"SMTP port must be between 1 and 65535, not {self.port!r}")
            self.port = port
        try:
            self.timeout = float(self.timeout)
        except (TypeError, ValueError):
            raise InputError(f"SMTP timeout must be a number of seconds, not {self.timeout!r}") from None
        if self.timeout <= 0:
            raise InputError(f"SMTP timeout must be positive, not {self.timeout!r}")

    @property
    def effective_port(self) -> int:
        if self.port:
            return self.port
        if self.security == "ssl":
            return 465
        return 587 if (self.security == "starttls" and self.user) else 25

    @property
    def server(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.effective_port}"

    def __repr__(self) -> str:  # never show the password
        pw = "'***'" if self.password is not None else "None"
        return (f"SMTPSettings(host={self.host!r}, port={self.port!r}, user={self.user!r}, password={pw}, "
                f"security={self.security!r}, timeout={self.timeout!r}, ca_file={self.ca_file!r})")

    __str__ = __repr__


# --------------------------------------------------------------------------- password


def load_password_file(path: str) -> str:
    """The SMTP password from a file only its owner can read (like ssh's private keys).

    Refuses (InputError) a missing, empty, non-regular file, or one that group or others can
    read or write (mode & 0o077). The first line is the password; a trailing newline is dropped.
    """
    path = os.path.expanduser(str(path))
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise InputError(f"SMTP password file {path}: no such file") from None
    except OSError as e:
        raise InputError(f"SMTP password file {path}: cannot open: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())  # the file we opened, not whatever the path points to now
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"SMTP password file {path} is not a regular file")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            who = "group and others" if (mode & 0o070 and mode & 0o007) else ("group" if mode & 0o070 else "others")
            raise InputError(f"SMTP password file {path} is accessible by {who} (mode {mode:04o}); "
                             f"refusing to use it: run chmod 600 {path}")
        data = fh.read(64 * 1024 + 1)
    if len(data) > 64 * 1024:
        raise InputError(f"SMTP password file {path} is too big to be a password file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"SMTP password file {path} is not UTF-8 text") from None
    lines = text.splitlines()
    password = lines[0] if lines else ""
    if not password:
        raise InputError(f"SMTP password file {path} is empty")
    return password


# --------------------------------------------------------------------------- message


def _check_address(addr: str, what: str) -> str:
    if not isinstance(addr, str) or not addr.strip():
        raise InputError(f"empty {what} e-mail address")
    if any(c in addr for c in "\r\n\0"):
        raise InputError(f"invalid {what} e-mail address {addr!r}")
    name, email_addr = parseaddr(addr)
    if not email_addr or " " in email_addr or len(getaddresses([addr])) != 1:
        raise InputError(f"invalid {what} e-mail address {addr!r}")
    return addr.strip()


def _msgid_domain(sender: str) -> str:
    domain = parseaddr(sender)[1].rpartition("@")[2].strip().strip("[]").lower()
    if domain and "." in domain and all(c.isalnum() or c in ".-" for c in domain):
        return domain
    fqdn = socket.getfqdn()
    if "." in fqdn and not fqdn.startswith("localhost") and all(c.isalnum() or c in ".-" for c in fqdn):
        return fqdn.lower()
    return "driftwatch.invalid"


FULL_MAIL_LIMIT = 1_000_000  # bytes of text + HTML above which the mail carries the summary (Postfix: 10 MB)


def build_message(report: FleetReportDoc, sender: str, recipients: list[str],
                  subject_prefix: str = "[driftwatch]", limit: int = FULL_MAIL_LIMIT) -> EmailMessage:
    """A multipart/alternative message (text/plain first, then text/html) for `report`. When the
    two parts together are larger than `limit` bytes, they carry the summary (groups and the host
    table, no per-host sections) and the full report is attached as report.html and report.txt.

    Headers: From, To, Subject (report.wording.subject), Date, Message-ID, Auto-Submitted: auto-generated,
    X-Mailer. Both parts are UTF-8, quoted-printable (readable raw, safe for long lines).
    """
    sender = _check_address(sender, "sender (From)")
    if isinstance(recipients, str):
        recipients = [recipients]
    recipients = [_check_address(r, "recipient") for r in (recipients or [])]
    if not recipients:
        raise InputError("no e-mail recipient given")

    msg = EmailMessage()
    msg["Subject"] = subject(report, prefix=subject_prefix)
    msg["From"] = sender
    msg["To"] = ", ".join(recipients)
    msg["Date"] = formatdate(localtime=True)
    msg["Message-ID"] = make_msgid(domain=_msgid_domain(sender))
    msg["Auto-Submitted"] = "auto-generated"  # RFC 3834: no auto-replies / vacation loops
    msg["X-Mailer"] = f"driftwatch {__version__}"
    text, html = get_format("text").render_fleet(report), get_format("html").render_fleet(report)
    if len(text.encode()) + len(html.encode()) <= limit:
        msg.set_content(text, subtype="plain", charset="utf-8", cte="quoted-printable")
        msg.add_alternative(html, subtype="html", charset="utf-8", cte="quoted-printable")
        return msg
    msg.set_content(get_format("text").render_fleet(report, brief=True), subtype="plain", charset="utf-8",
                    cte="quoted-printable")
    msg.add_alternative(get_format("html").render_fleet(report, brief=True), subtype="html", charset="utf-8",
                        cte="quoted-printable")
    msg.make_mixed()
    for name, body, subtype in (("report.html", html, "html"), ("report.txt", text, "plain")):
        attachment = EmailMessage()
        attachment.set_content(body, subtype=subtype, charset="utf-8", cte="base64", disposition="attachment",
                               filename=name)
        msg.attach(attachment)
    return msg


# --------------------------------------------------------------------------- delivery


def _reply_text(resp) -> str:
    if isinstance(resp, bytes):
        resp = resp.decode("utf-8", "replace")
    return " ".join(str(resp).split())


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _fail(settings: SMTPSettings, reason: str) -> NotifyError:
    return NotifyError(_one_line(f"cannot mail the report via SMTP server {settings.server}: {reason}"))


def _ssl_context(settings: SMTPSettings) -> ssl.SSLContext:
    try:
        ctx = ssl.create_default_context(cafile=os.path.expanduser(settings.ca_file) if settings.ca_file else None)
    except FileNotFoundError:
        raise InputError(f"SMTP CA file {settings.ca_file}: no such file") from None
    except (ssl.SSLError, OSError) as e:
        raise InputError(f"SMTP CA file {settings.ca_file}: cannot load it: {e}") from None
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def _describe(exc: BaseException, settings: SMTPSettings, stage: str) -> str:
    """The reason part of the one-line error, for an exception raised while `stage`."""
    t = f"{settings.timeout:g} s"
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return f"authentication failed for user {settings.user!r}: {exc.smtp_code} {_reply_text(exc.smtp_error)}"
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        refused = ", ".join(f"{r} ({code} {_reply_text(m)})" for r, (code, m) in exc.recipients.items())
        return f"all recipients refused: {refused}"
    if isinstance(exc, smtplib.SMTPSenderRefused):
        return f"sender {exc.sender} refused: {exc.smtp_code} {_reply_text(exc.smtp_error)}"
    if isinstance(exc, smtplib.SMTPDataError):
        return f"message refused: {exc.smtp_code} {_reply_text(exc.smtp_error)}"
    if isinstance(exc, smtplib.SMTPConnectError):
        return f"server refused the session: {exc.smtp_code} {_reply_text(exc.smtp_error)}"
    if isinstance(exc, smtplib.SMTPNotSupportedError):
        return f"{_reply_text(exc)} (while {stage})"
    if isinstance(exc, smtplib.SMTPServerDisconnected):
        ctx = exc.__context__
        if isinstance(ctx, (TimeoutError, socket.timeout)):
            if stage.startswith("connecting"):
                return f"timed out after {t}: the server accepted the connection but never sent its greeting (hung?)"
            return f"timed out after {t} waiting for the server's reply while {stage} (server hung?)"
        if isinstance(ctx, ssl.SSLError):
            return _describe(ctx, settings, stage)
        return f"connection closed by the server while {stage}"
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"unexpected reply while {stage}: {exc.smtp_code} {_reply_text(exc.smtp_error)}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        why = exc.verify_message or exc.reason or str(exc)
        hint = ""
        if "issuer" in str(why) or "self" in str(why):
            hint = " (is the server's CA in --smtp-ca-file / smtp.ca_file?)"
            if settings.host in ("localhost", "127.0.0.1", "::1") and not settings.ca_file:
                hint = (" (a local MTA with a self-signed certificate? give its CA with --smtp-ca-file, "
                        "or use --smtp-plain for a server on this machine)")
        return f"TLS certificate verification failed: {why}{hint}"
    if isinstance(exc, ssl.SSLError):
        if exc.reason == "WRONG_VERSION_NUMBER" and settings.security == "ssl":
            return ("TLS failure: the server does not speak TLS on this port (WRONG_VERSION_NUMBER); "
                    "for a STARTTLS port such as 587 or 25 use --smtp-starttls, not --smtp-ssl")
        return f"TLS failure while {stage}: {exc.reason or exc}"
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return f"timed out after {t} while {stage} (server hung or unreachable?)"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is an SMTP server listening on that port?)"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host name {settings.host!r}: {exc.strerror or exc}"
    if isinstance(exc, ConnectionResetError):
        return f"connection reset by the server while {stage}"
    if isinstance(exc, OSError):
        return f"network error while {stage}: {exc.strerror or exc}"
    if isinstance(exc, smtplib.SMTPException):
        return f"{_reply_text(exc)} (while {stage})"
    return f"{type(exc).__name__}: {exc} (while {stage})"


DEADLINE_FACTOR = 3  # the whole delivery: three reads' worth (a normal one takes well under one)


class _DeliveryTimeout(TimeoutError):
    pass


class _Deadline:
    """One deadline for a delivery: the name resolved and the connection made within what is left;
    when it passes, a timer shuts the session's socket, so a read blocked on a trickling server ends."""

    def __init__(self, seconds: float):
        import threading
        import time
        self._time = time.monotonic
        self.seconds = seconds
        self.end = self._time() + seconds
        self.expired = False
        self.smtp = None
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        left = self.end - self._time()
        if left <= 0:
            self.expired = True
            raise _DeliveryTimeout(f"no delivery within {self.seconds:g} s")
        return left

    def _expire(self) -> None:
        self.expired = True
        sock = getattr(self.smtp, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cancel(self) -> None:
        self._timer.cancel()

    def connect(self, host: str, port: int, timeout: float) -> socket.socket:
        """socket.create_connection, with the name resolved inside the deadline too."""
        error: OSError | None = None
        for family, kind, proto, _, address in resolve(host, port, min(timeout, self.left())):
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(min(timeout, self.left()))
                sock.connect(address)
                return sock
            except OSError as exc:
                sock.close()
                error = exc
        raise error or OSError(f"cannot connect to {host}:{port}")


def _session_classes(deadline: _Deadline):
    class Plain(smtplib.SMTP):
        def _get_socket(self, host, port, timeout):
            return deadline.connect(host, port, timeout)

    class Implicit(smtplib.SMTP_SSL):
        _host: str  # set by smtplib.SMTP.__init__; the stubs do not declare it

        def _get_socket(self, host, port, timeout):
            return self.context.wrap_socket(deadline.connect(host, port, timeout), server_hostname=self._host)

    return Plain, Implicit


def send_message(msg: EmailMessage, settings: SMTPSettings) -> None:
    """Deliver `msg` (recipients from its To/Cc) or raise NotifyError with one clear line.

    Also raises NotifyError when only some recipients were refused (the others did get it).
    """
    if settings.user and settings.password is None:
        raise InputError(f"SMTP user {settings.user!r} given but no password: set {PASSWORD_ENV} "
                         f"or a password file (--smtp-password-file / smtp.password_file)")
    if settings.password is not None and not settings.user:
        raise InputError("an SMTP password is set but no SMTP user (--smtp-user / smtp.user / DRIFTWATCH_SMTP_USER)")
    ctx = _ssl_context(settings) if settings.security in ("ssl", "starttls") else None
    host, port, timeout = settings.host, settings.effective_port, settings.timeout
    local_hostname = local_fqdn(min(timeout, 5.0))  # a reverse lookup: bounded like every other
    stage = "connecting"
    smtp = None
    deadline = _Deadline(DEADLINE_FACTOR * timeout)
    plain_class, ssl_class = _session_classes(deadline)
    try:
        if settings.security == "ssl":
            stage = "connecting (implicit TLS handshake)"
            smtp = deadline.smtp = ssl_class(local_hostname=local_hostname, timeout=timeout, context=ctx)
        else:
            smtp = deadline.smtp = plain_class(local_hostname=local_hostname, timeout=timeout)
        smtp._host = host  # what TLS checks the certificate against (smtplib sets it only in __init__)
        smtp.connect(host, port)
        stage = "greeting (EHLO)"
        smtp.ehlo_or_helo_if_needed()
        if settings.security == "starttls":
            if smtp.has_extn("starttls"):
                stage = "starting TLS (STARTTLS)"
                smtp.starttls(context=ctx)
                stage = "greeting after STARTTLS"
                smtp.ehlo()
            elif settings.user:
                raise _fail(settings, "server does not offer STARTTLS; refusing to send the SMTP password "
                                      "in clear text (use --smtp-ssl, or --smtp-plain on a trusted link)")
        if settings.user:
            stage = f"logging in as {settings.user!r}"
            if not smtp.has_extn("auth"):
                hint = " (many servers offer AUTH only after STARTTLS)" if settings.security == "plain" else ""
                raise _fail(settings,
                            f"server does not offer AUTH, but SMTP user {settings.user!r} is configured{hint}")
            smtp.login(settings.user, settings.password)
        stage = "sending the message"
        refused = smtp.send_message(msg)
        if refused:
            listed = ", ".join(f"{r} ({code} {_reply_text(m)})" for r, (code, m) in refused.items())
            raise _fail(settings, f"recipient(s) refused: {listed}; the others received the report")
        stage = "closing the session"
        try:
            smtp.quit()
        except (smtplib.SMTPException, OSError):
            pass  # the message was accepted; a failed QUIT does not un-deliver it
        smtp = None
    except NotifyError:
        raise
    except (smtplib.SMTPException, OSError, ValueError) as e:
        if isinstance(e, ResolveTimeout) and not deadline.expired:
            raise _fail(settings, f"cannot resolve host name {host!r}: {e}") from None
        if deadline.expired or isinstance(e, _DeliveryTimeout):
            raise _fail(settings, f"no delivery within the overall deadline of {deadline.seconds:g} s "
                                  f"({DEADLINE_FACTOR} x the {timeout:g} s timeout; stopped while {stage}): "
                                  "the server answers too slowly or not at all") from None
        raise _fail(settings, _describe(e, settings, stage)) from None
    finally:
        deadline.cancel()
        if smtp is not None:
            try:
                smtp.close()
            except Exception:  # pragma: no cover - best effort
                pass


__all__ = ["SMTPSettings", "SECURITY_MODES", "PASSWORD_ENV", "build_message", "send_message", "load_password_file"]
