"""Host name resolution inside a deadline, for every connection driftwatch opens (SSH, SMTP).

The C resolver behind ``socket.getaddrinfo`` has no timeout a caller can set: with a DNS server
that never answers it waits out resolv.conf's ``timeout`` x ``attempts`` per server (often 10-30 s),
outside any socket timeout. So resolution runs in a daemon thread joined for the seconds the caller
has left; when they pass, ``ResolveTimeout`` says so and the caller's deadline holds (the thread
ends on its own when the resolver gives up; it holds nothing of ours).
"""
from __future__ import annotations

import socket
import threading


class ResolveTimeout(TimeoutError):
    """The name was not resolved within the seconds given."""

    def __init__(self, host: str, seconds: float):
        self.host = host
        self.seconds = seconds
        super().__init__(f"name resolution of {host} timed out after {seconds:g}s")


def _within(seconds: float, host: str, work, label: str):
    found: dict = {}

    def run():
        try:
            found["value"] = work()
        except OSError as exc:  # gaierror, herror: the caller's to word
            found["error"] = exc

    worker = threading.Thread(target=run, name=f"driftwatch-resolve-{label}", daemon=True)
    worker.start()
    worker.join(max(seconds, 0.0))
    if worker.is_alive():
        raise ResolveTimeout(host, seconds)
    if "error" in found:
        raise found["error"]
    return found["value"]


def resolve(host: str, port: int, seconds: float) -> list:
    """``socket.getaddrinfo(host, port, 0, SOCK_STREAM)`` within ``seconds``: the addresses, or
    ``socket.gaierror`` as getaddrinfo raises it, or ``ResolveTimeout``."""
    return _within(seconds, host, lambda: socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM), "addr")


def local_fqdn(seconds: float, fallback: str = "localhost") -> str:
    """``socket.getfqdn()`` (a reverse lookup of this machine's name) within ``seconds``; ``fallback``
    when it takes longer or finds nothing (what a mail greeting needs is a name, not this one)."""
    try:
        name = _within(seconds, "this machine's name", socket.getfqdn, "fqdn")
    except OSError:
        return fallback
    return name or fallback


__all__ = ["ResolveTimeout", "resolve", "local_fqdn"]
