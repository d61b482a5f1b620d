"""The snapshot store's database URL: recognised, and printed without its secrets.

A PostgreSQL URL may carry a password (``user:PASSWORD@``, ``password=`` in the query) and libpq
finds more in its environment and service file; nothing the store prints (its root in listings,
a database error) may show one. Apart from the SQL because it changes with libpq's rules, not with
the schema.
"""
from __future__ import annotations

import os
import re
from urllib.parse import unquote

_SECRET_PARAMS = frozenset({"password", "sslpassword", "passfile"})  # libpq settings never printed


def _url_parts(rest: str) -> tuple[str | None, str, str | None]:
    """(userinfo, host and path, query) of a URL after its ``scheme://``, by hand: the userinfo ends at
    the last ``@`` before the first ``/`` (libpq's reading) or before the first ``?`` (urlsplit's),
    whichever is later, so a ``/`` or ``?`` inside an unencoded password masks more, never less."""
    at = max(rest[:rest.find("/") if "/" in rest else len(rest)].rfind("@"), rest.partition("?")[0].rfind("@"))
    userinfo, after = (rest[:at], rest[at + 1:]) if at >= 0 else (None, rest)
    host_path, qmark, query = after.partition("?")
    return userinfo, host_path, query if qmark else None


def redact_url(url: str) -> str:
    """A database URL fit to print: the password of ``user:PASSWORD@`` and the values of
    ``password=``, ``sslpassword=`` and ``passfile=`` in the query replaced by ``***``.

    Parsed by hand (`_url_parts`), not by urlsplit, which refuses a malformed URL (an unclosed ``[``)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    userinfo, host_path, query = _url_parts(rest)
    if userinfo is not None and ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    if query is not None:
        pairs = []
        for pair in query.split("&"):
            key, eq, _value = pair.partition("=")
            pairs.append(f"{key}=***" if eq and unquote(key).strip().lower() in _SECRET_PARAMS else pair)
        query = "&".join(pairs)
    return (f"{scheme}://" + (f"{userinfo}@" if userinfo is not None else "") + host_path
            + (f"?{query}" if query is not None else ""))


def _url_secrets(url: str) -> set[str]:
    """Every password the store's URL and libpq's environment may give: the userinfo's, the query's
    (password, sslpassword), PGPASSWORD, and those of the pg_service.conf service named; each as
    written and percent-decoded. Scrubbed from any message before it is printed."""
    found: set[str] = set()
    userinfo, _, query = _url_parts(url.partition("://")[2])
    if userinfo is not None and ":" in userinfo:
        found.add(userinfo.split(":", 1)[1])
    service = os.environ.get("PGSERVICE")
    for pair in query.split("&") if query else ():
        key, _, value = pair.partition("=")
        key = unquote(key).strip().lower()
        if key in ("password", "sslpassword"):
            found.add(value)
        elif key == "service":
            service = unquote(value)
    for name in ("PGPASSWORD", "PGSSLPASSWORD"):
        if os.environ.get(name):
            found.add(os.environ[name])
    if service:
        found |= _service_passwords(service)
    return {v for text in found for v in (text, unquote(text)) if v}


def _service_passwords(service: str) -> set[str]:
    """The ``password=`` of `service` in the pg_service.conf files libpq reads (unreadable: none)."""
    import configparser
    files = [os.environ.get("PGSERVICEFILE") or os.path.expanduser("~/.pg_service.conf")]
    if os.environ.get("PGSYSCONFDIR"):
        files.append(os.path.join(os.environ["PGSYSCONFDIR"], "pg_service.conf"))
    found = set()
    for path in files:
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
            for key in ("password", "sslpassword"):
                if parser.has_option(service, key):
                    found.add(parser.get(service, key).strip())
        except (OSError, UnicodeError, configparser.Error):
            continue
    return found


_SETTING = re.compile(r"\b((?:ssl)?password|passfile)(\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.I)
_USERINFO = re.compile(r"(postgres(?:ql)?://[^\s:/@\"']*:)[^\s\"']*@")


def scrub_message(text: str, url: str = "") -> str:
    """A database error's message fit to print: the store's URL as `redact_url` prints it, any other
    URL's password, ``password=…``-like settings and every known password (`_url_secrets`) masked.
    psycopg and libpq quote the whole connection string in some messages (a malformed URL)."""
    if url:
        text = text.replace(url, redact_url(url))
    text = _USERINFO.sub(lambda m: m.group(1) + "***@", text)
    text = _SETTING.sub(lambda m: m.group(1) + m.group(2) + "***", text)
    for secret in sorted(_url_secrets(url), key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, "***")
        else:  # a very short password: only where it stands as a word of its own
            text = re.sub(rf"(?<![\w]){re.escape(secret)}(?![\w])", "***", text)
    return text


def scrub_error(exc: BaseException, url: str) -> str:
    """An exception's first line without the URL's password (`scrub_message`)."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return scrub_message(text, url)


def is_database_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))
