"""known_hosts checking with OpenSSH's ``StrictHostKeyChecking=yes`` / ``accept-new`` semantics.

Pure Python (no paramiko): a host key is compared as (key type, base64 blob).

- Lookup names are OpenSSH's: ``host`` on port 22, ``[host]:port`` otherwise, where ``host`` is the
  name after ssh_config ``HostName`` (or ``HostKeyAlias``). Plain and hashed (``|1|salt|hmac``)
  entries, comma lists, ``*``/``?`` wildcards and ``!`` negations are understood; ``@revoked``
  keys are refused; ``@cert-authority`` lines are ignored (certificates are not used).
- A known key for that host and key type that matches: accepted.
- Keys of that type known for the host, none matching: refused, always ("HOST KEY CHANGED").
- Keys of other types known, none of the offered type: refused, always, as changed (a server that
  now offers only RSA where ed25519 is recorded is a downgrade, or a different server).
- No key at all known for the host: refused unless ``accept_new``, which appends
  ``host keytype base64`` to the file (one ``write()`` on an ``O_APPEND`` descriptor under an
  exclusive ``flock``, re-reading the file under the lock so concurrent threads/processes neither
  duplicate nor lose entries).
"""
from __future__ import annotations

import base64
import fcntl
import hashlib
import hmac
import os
import re
import threading
from dataclasses import dataclass

from driftwatch.collect.interface import HOST_KEY_REFUSED, HostError


class HostKeyRefused(HostError):
    status = HOST_KEY_REFUSED


@dataclass(frozen=True)
class KnownKey:
    patterns: str  # the host field as written (possibly hashed)
    keytype: str
    blob: str
    marker: str | None = None  # "@revoked" | "@cert-authority" | None
    source: str = ""
    line: int = 0


def host_lookup_name(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


def _match_hashed(entry: str, name: str) -> bool:
    try:
        _, magic, salt_b64, hash_b64 = entry.split("|")
        if magic != "1":
            return False
        salt = base64.b64decode(salt_b64)
        want = base64.b64decode(hash_b64)
    except ValueError:
        return False
    got = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return hmac.compare_digest(got, want)


def _wildcard(pattern: str) -> re.Pattern:
    """OpenSSH patterns: only '*' and '?' are special ('[' in '[host]:port' is literal)."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body + r"\Z", re.S)


def host_matches(patterns: str, name: str) -> bool:
    """OpenSSH ``match_hostname``: any positive pattern matches and no negated one does."""
    if patterns.startswith("|"):
        return _match_hashed(patterns, name)
    positive = False
    lname = name.lower()
    for pat in patterns.split(","):
        neg = pat.startswith("!")
        pat = pat[1:] if neg else pat
        if _wildcard(pat.lower()).match(lname):
            if neg:
                return False
            positive = True
    return positive


def parse_known_hosts(text: str, source: str = "") -> list[KnownKey]:
    keys = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        marker = None
        if fields[0].startswith("@"):
            marker, fields = fields[0], fields[1:]
        if len(fields) < 3:
            continue
        keys.append(KnownKey(fields[0], fields[1], fields[2], marker, source, lineno))
    return keys


# Host-key algorithms negotiated for a known key type (RSA keys are stored as ssh-rsa).
KEYTYPE_ALGORITHMS = {
    "ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"),
}


class KnownHosts:
    """One known_hosts file (plus read-only extra files), shared by all threads of a run."""

    def __init__(self, path: str, accept_new: bool = False, extra_files: tuple[str, ...] = ()):
        self.path = os.path.expanduser(path)
        self.accept_new = accept_new
        self.extra_files = tuple(os.path.expanduser(p) for p in extra_files)
        self._lock = threading.Lock()
        self._keys: list[KnownKey] = []
        self.reload()

    def reload(self) -> None:
        keys: list[KnownKey] = []
        for p in (self.path, *self.extra_files):
            keys.extend(parse_known_hosts(_read(p), p))
        self._keys = keys

    def keys_for(self, names: list[str]) -> list[KnownKey]:
        return [k for k in self._keys if k.marker != "@cert-authority"
                and any(host_matches(k.patterns, n) for n in names)]

    def known_types(self, names: list[str]) -> list[str]:
        """Key types already known for the host, file order (to prefer them in negotiation)."""
        seen: list[str] = []
        for k in self.keys_for(names):
            if k.marker is None and k.keytype not in seen:
                seen.append(k.keytype)
        return seen

    def preferred_algorithms(self, names: list[str]) -> list[str]:
        out: list[str] = []
        for t in self.known_types(names):
            out.extend(KEYTYPE_ALGORITHMS.get(t, (t,)))
        return out

    def check(self, display: str, names: list[str], keytype: str, blob: str) -> str:
        """Accept or raise HostKeyRefused. Returns "known" or "added"."""
        with self._lock:
            result = self._verdict(names, keytype, blob)
            if result == "known":
                return result
            if result == "changed":
                raise HostKeyRefused(self._changed_message(display, names, keytype))
            if result == "other-type":
                raise HostKeyRefused(self._other_type_message(display, names, keytype))
            if result == "revoked":
                raise HostKeyRefused(f"host key for {display} is marked @revoked in {self.path}")
            if not self.accept_new:
                raise HostKeyRefused(
                    f"host key for {display} is not in {self.path} "
                    f"(use --accept-new to trust it on first use)")
            return self._append(names[0], keytype, blob)

    def _verdict(self, names: list[str], keytype: str, blob: str) -> str:
        same_type = []
        for k in self.keys_for(names):
            if k.keytype == keytype and k.blob == blob and k.marker == "@revoked":
                return "revoked"
            if k.marker is None and k.keytype == keytype:
                same_type.append(k)
        if any(k.blob == blob for k in same_type):
            return "known"
        if same_type:
            return "changed"
        if any(k.marker is None for k in self.keys_for(names)):
            return "other-type"  # accept-new only ever learns a host with no key at all (as OpenSSH)
        return "unknown"

    def _changed_message(self, display: str, names: list[str], keytype: str) -> str:
        where = ", ".join(f"{k.source}:{k.line}" for k in self.keys_for(names) if k.keytype == keytype)
        return (f"HOST KEY CHANGED for {display}: the {keytype} key it offered differs from the one "
                f"recorded in {where}; possible man-in-the-middle, refusing (if the host was "
                f"reinstalled, remove the old entry and reconnect with --accept-new)")

    def _other_type_message(self, display: str, names: list[str], keytype: str) -> str:
        known = [k for k in self.keys_for(names) if k.marker is None]
        types = ", ".join(dict.fromkeys(k.keytype for k in known))
        where = ", ".join(f"{k.source}:{k.line}" for k in known)
        return (f"HOST KEY CHANGED for {display}: it offered only a {keytype} key, but {types} is recorded in "
                f"{where}; a different key type is not trusted on first use (possible downgrade or "
                f"man-in-the-middle), refusing (if the host's keys really changed, remove the old entry and "
                f"reconnect with --accept-new)")

    def _append(self, name: str, keytype: str, blob: str) -> str:
        directory = os.path.dirname(self.path) or "."
        if not os.path.isdir(directory):
            os.makedirs(directory, mode=0o700, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            current = _read(self.path)  # another process may have written meanwhile
            self._keys = parse_known_hosts(current, self.path) + [
                k for p in self.extra_files for k in parse_known_hosts(_read(p), p)]
            verdict = self._verdict([name], keytype, blob)
            if verdict == "known":
                return "known"
            if verdict == "other-type":
                raise HostKeyRefused(self._other_type_message(name, [name], keytype))
            if verdict != "unknown":  # appeared as a different key meanwhile
                raise HostKeyRefused(self._changed_message(name, [name], keytype))
            line = f"{name} {keytype} {blob}\n"
            if current and not current.endswith("\n"):
                line = "\n" + line
            os.write(fd, line.encode())
            os.fsync(fd)
            lineno = current.count("\n") + 1 + (1 if line.startswith("\n") else 0)
            self._keys.append(KnownKey(name, keytype, blob, None, self.path, lineno))
            return "added"
        finally:
            os.close(fd)  # releases the lock


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""
    except OSError:
        return ""
