"""`--probe`: ask the engine's own HTTP endpoint what it runs with, on the host's loopback only.

The request travels inside the SSH connection already open to the host (a ``direct-tcpip``
channel to ``127.0.0.1:PORT``, as ``ssh -L`` does), so nothing new is reachable from here and no
other address is ever asked. The port comes from the unit's typed command line (`server.port`, as
the caller's `UnitReader` reads it); a server that listens on one non-loopback address only is not
asked. Each path costs at most its own timeout and ``MAX_BODY_BYTES``; a failure is recorded per
path (`RawUnit.probe_problems`), never fatal to the host. The server's API key, when the unit sets
one, is sent to the server itself (it needs it to answer) through the encrypted channel; it is never
stored or shown — the answers are redacted like everything else a snapshot keeps (`reported.py`).
"""
from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from driftwatch.collect.raw import RawUnit
from driftwatch.collect.reader import UnitReader

MAX_BODY_BYTES = 4 << 20  # a /server_info is ~50 KB, a /metrics page some 100 KB
MAX_HEADER_BYTES = 64 << 10
PROBE_TIMEOUT = 5.0  # seconds per path
LOOPBACK = "127.0.0.1"


class ProbeError(Exception):
    """One path could not be read (the message is the recorded problem)."""


class Stream(Protocol):
    """What a paramiko Channel and a socket both offer."""

    def settimeout(self, timeout: float) -> None: ...
    def sendall(self, data: bytes) -> None: ...
    def recv(self, size: int) -> bytes: ...
    def close(self) -> None: ...


OpenStream = Callable[[int, float], Stream]  # (port, timeout) -> a connected stream to loopback:port


@dataclass
class ProbeTarget:
    paths: tuple[str | tuple[str, ...], ...]  # the engine's probe paths, in order
    port: int
    api_key: str | None = field(repr=False)


def probe_target(raw: RawUnit, reader: UnitReader) -> ProbeTarget | str:
    """Where the unit's server listens on the host's loopback, or why it is not asked. Asked only
    when the unit's own server runs (else whatever listens on the port, perhaps anyone's, would be
    believed and sent the key), and not through a container's port mapping."""
    not_running = _not_running(raw)
    if not_running:
        return not_running
    server = reader.server(raw)
    if isinstance(server, str):
        return server
    if not server.paths:
        return "no known engine with an HTTP endpoint in this unit"
    if server.container:
        return "the server runs in a container: its port is not the host's (only --network host is asked)"
    port, host = server.port, server.host
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        return "the unit names no usable --port"
    if isinstance(host, str) and host.strip() and not _reachable_on_loopback(host.strip()):
        return f"the server listens on {host} only: the probe asks the host's loopback, nothing else"
    return ProbeTarget(paths=server.paths, port=port, api_key=server.api_key)


def _not_running(raw: RawUnit) -> str | None:
    """Why the unit's own server is not known to be the one on its port (None: it is)."""
    if raw.active_state is not None and raw.active_state not in ("active", "reloading"):
        return f"the unit is {raw.active_state}: whatever listens on its port is not its server"
    if raw.active_state is not None and raw.main_pid is None:
        return "systemd names no main process for the unit"
    if raw.active_state is None and raw.running_argv is None:
        return "no process on this host is known to be the unit's server"
    return None


def _reachable_on_loopback(host: str) -> bool:
    """A server bound to this address answers on 127.0.0.1 too (a wildcard or loopback address)."""
    if host in ("localhost", "0.0.0.0", "::", "*"):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False  # a host name: which address it is bound to is not known here
    return (address.is_loopback and address.version == 4) or address.is_unspecified


def probe_unit(raw: RawUnit, open_stream: OpenStream, reader: UnitReader, timeout: float = PROBE_TIMEOUT) -> None:
    """Fill `raw.probe` (path -> body) and `raw.probe_problems` (path -> why not); at most `timeout`
    seconds a path and three times that for the unit. `reader` reads the unit's command line."""
    budget = 3 * timeout
    target = probe_target(raw, reader)
    if isinstance(target, str):
        raw.probe_problems = {"*": target}
        return
    deadline = time.monotonic() + budget
    bodies: dict[str, bytes] = {}
    problems: dict[str, str] = {}
    headers = {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {}
    for entry in target.paths:
        alternatives = (entry,) if isinstance(entry, str) else tuple(entry)
        tried: dict[str, str] = {}
        for path in alternatives:
            remaining = deadline - time.monotonic()
            if remaining <= 0.05:
                tried[path] = "not asked: the probe's time for this unit was spent"
                break
            try:
                status, body = http_get(open_stream, target.port, path, min(timeout, remaining), headers)
            except ProbeError as exc:
                tried[path] = str(exc)
                if "cannot connect" in str(exc):
                    problems.update(tried)  # nothing listens: every other path would say the same
                    raw.probe, raw.probe_problems = bodies, problems
                    return
                continue
            if status == 200:
                bodies[path] = body
                tried = {}
                break
            tried[path] = f"HTTP {status}" + (" (the server wants its API key)" if status in (401, 403) else "")
        problems.update(tried)
    raw.probe = bodies
    raw.probe_problems = problems


def http_get(open_stream: OpenStream, port: int, path: str, timeout: float,
             headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """One HTTP/1.0 GET on loopback:port; (status, body), bounded in time and size."""
    deadline = time.monotonic() + timeout
    try:
        stream = open_stream(port, timeout)
    except Exception as exc:  # noqa: BLE001 - refused, forwarding disabled, timed out: all one problem
        raise ProbeError(f"cannot connect to {LOOPBACK}:{port} on the host ({_reason(exc)})") from None
    try:
        lines = [f"GET {path} HTTP/1.0", f"Host: {LOOPBACK}:{port}", "Accept: */*", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        stream.settimeout(timeout)
        stream.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace"))
        data = bytearray()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProbeError(f"no complete answer within {timeout:g}s")
            stream.settimeout(remaining)
            try:
                chunk = stream.recv(65536)
            except TimeoutError:  # socket.timeout, which paramiko's channels raise too
                raise ProbeError(f"no complete answer within {timeout:g}s") from None
            except Exception as exc:  # noqa: BLE001 - paramiko's and the socket's errors alike
                raise ProbeError(f"read failed ({_reason(exc)})") from None
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_BODY_BYTES + MAX_HEADER_BYTES:
                raise ProbeError(f"an answer over {MAX_BODY_BYTES} bytes: not read")
    finally:
        try:
            stream.close()
        except Exception:  # noqa: BLE001
            pass
    return parse_http_response(bytes(data))


def parse_http_response(data: bytes) -> tuple[int, bytes]:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep or len(head) > MAX_HEADER_BYTES:
        raise ProbeError("not an HTTP answer")
    status_line, *header_lines = head.split(b"\r\n")
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit() or len(parts[1]) != 3:
        raise ProbeError("not an HTTP answer")
    headers = {}
    for line in header_lines:
        name, colon, value = line.partition(b":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = _dechunk(body)
    length = headers.get(b"content-length")
    if length is not None and length.isdigit() and len(length) <= 12 and len(body) < int(length):
        raise ProbeError("the answer was cut short")
    if len(body) > MAX_BODY_BYTES:
        raise ProbeError(f"an answer over {MAX_BODY_BYTES} bytes: not read")
    return int(parts[1]), body


def _dechunk(body: bytes) -> bytes:
    out, i = bytearray(), 0
    while True:
        end = body.find(b"\r\n", i)
        if end < 0:
            raise ProbeError("the answer was cut short")
        size_text = body[i:end].split(b";", 1)[0].strip()
        try:
            size = int(size_text[:16] if len(size_text) <= 16 else b"x", 16)
        except ValueError:
            raise ProbeError("not an HTTP answer") from None
        if size == 0:
            return bytes(out)
        start = end + 2
        if start + size > len(body):
            raise ProbeError("the answer was cut short")
        out += body[start:start + size]
        i = start + size + 2


def _reason(exc: Exception) -> str:
    text = getattr(exc, "text", None) or getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())[:200]
