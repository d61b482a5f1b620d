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
- Each file is indexed once when read (`_FileIndex`: literal names in a dict, hashed entries by HMAC
  per salt, wildcard patterns compiled once) and each host's matches are kept until a file changes;
  an append is indexed alone, any other change re-indexes that file: lookups stay linear in fleets.
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

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"  # the user's, written by --accept-new
GLOBAL_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"  # the system's, read only


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
    """The name known_hosts entries are matched against and recorded under, as OpenSSH forms it: the
    host (HostName or HostKeyAlias) lowercased first (ssh.c lowercase()), so `CT129` and a hashed
    entry written for `ct129` are the same host; `[host]:port` for a port other than 22."""
    host = host.lower()
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


def _literal(pattern: str) -> bool:
    return "*" not in pattern and "?" not in pattern


class _FileIndex:
    """The entries of one known_hosts file, indexed once so a lookup costs one dict probe per literal name,
    one HMAC per distinct salt of the hashed entries, and precompiled patterns for the wildcard ones (the
    old scan built a regex per entry per lookup: quadratic in fleets). Same answers as ``host_matches``
    over every entry in file order. Only appended to in place (an accept-new line): lookups from other
    threads read it without the lock and see the new entry or not, never a broken structure."""

    def __init__(self, text: str, source: str):
        self.text = text
        self.source = source
        self.lines = 0  # lines splitlines() counted: where an appended text's numbering starts
        self.keys: list[KnownKey] = []
        self.literal: dict[str, list[tuple[int, list[re.Pattern]]]] = {}  # lowercased name -> (entry, negations)
        self.salts: list[tuple[bytes, dict[bytes, list[int]]]] = []  # (salt, {hmac: entries}), salt order
        self._salt_at: dict[bytes, dict[bytes, list[int]]] = {}
        self.wild: list[tuple[int, list[re.Pattern], list[re.Pattern]]] = []  # (entry, positive, negated)
        self.extend(text)

    def extend(self, text: str) -> None:
        """Index `text` as lines that follow what is indexed (which must end with a line break)."""
        for key in parse_known_hosts(text, self.source):
            self._add(KnownKey(key.patterns, key.keytype, key.blob, key.marker, key.source, key.line + self.lines))
        self.lines += len(text.splitlines())

    def add_line(self, key: KnownKey, text: str) -> None:
        """One line this process appended (`text`, with its line break): indexed without re-reading the file."""
        self._add(key)
        self.text += text
        self.lines = len(self.text.splitlines()) if text.startswith("\n") else self.lines + 1

    def _add(self, key: KnownKey) -> None:
        if key.marker == "@cert-authority":
            return
        i = len(self.keys)
        self.keys.append(key)
        patterns = key.patterns
        if patterns.startswith("|"):
            try:
                _, magic, salt_b64, hash_b64 = patterns.split("|")
                if magic != "1":
                    return
                salt = base64.b64decode(salt_b64)
                want = base64.b64decode(hash_b64)
            except ValueError:
                return
            by_hash = self._salt_at.get(salt)
            if by_hash is None:
                by_hash = self._salt_at[salt] = {}
                self.salts.append((salt, by_hash))
            by_hash.setdefault(want, []).append(i)
            return
        positive: list[str] = []
        negated: list[str] = []
        for pat in patterns.split(","):
            if pat.startswith("!"):
                negated.append(pat[1:].lower())
            else:
                positive.append(pat.lower())
        if not positive:
            return  # only negations: matches nothing
        neg = [_wildcard(p) for p in negated]
        if all(_literal(p) for p in positive):
            for p in dict.fromkeys(positive):
                self.literal.setdefault(p, []).append((i, neg))
        else:
            self.wild.append((i, [_wildcard(p) for p in positive], neg))

    def matches(self, name: str) -> set[int]:
        """Indexes (into self.keys) of the entries whose host field matches `name` (OpenSSH's
        match_hostname: the caller lowercases the name first, see host_lookup_name)."""
        found: set[int] = set()
        lname = name.lower()
        for i, neg in self.literal.get(lname, ()):
            if not any(n.match(lname) for n in neg):
                found.add(i)
        if self.salts:
            raw = name.encode()
            for salt, by_hash in self.salts:
                hit = by_hash.get(hmac.digest(salt, raw, "sha1"))
                if hit:
                    found.update(hit)
        for i, pos, neg in self.wild:
            if any(p.match(lname) for p in pos) and not any(n.match(lname) for n in neg):
                found.add(i)
        return found


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
        self._files: list[_FileIndex] = []
        self._found: dict[tuple[str, ...], list[KnownKey]] = {}  # per lookup names; replaced on any change
        self.reload()

    def reload(self) -> None:
        self._files = [_FileIndex(_read(p), p) for p in (self.path, *self.extra_files)]
        self._found = {}

    @property
    def _keys(self) -> list[KnownKey]:
        """Every entry except @cert-authority lines, file order."""
        return [k for f in self._files for k in f.keys]

    def keys_for(self, names: list[str]) -> list[KnownKey]:
        """Entries (not @cert-authority) matching any of `names`, in file order; looked up by the index
        once per names and kept until the files change."""
        cache = self._found  # a change replaces the dict: an answer computed meanwhile lands in the old one
        key = tuple(names)
        hit = cache.get(key)
        if hit is None:
            hit = []
            for f in self._files:
                found: set[int] = set()
                for n in names:
                    found |= f.matches(n)
                hit.extend(f.keys[i] for i in sorted(found))
            cache[key] = hit
        return list(hit)

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
            self._refresh(current)
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
            self._files[0].add_line(KnownKey(name, keytype, blob, None, self.path, lineno), line)
            self._found = {}
            return "added"
        finally:
            os.close(fd)  # releases the lock


    def _refresh(self, current: str) -> None:
        """Bring the index up to the files as they are now (under the lock): lines appended after what was
        indexed are indexed alone; any other change (or a file of another process) rebuilds that file's."""
        main = self._files[0]
        changed = False
        if current != main.text:
            if main.text.endswith("\n") and current.startswith(main.text):
                main.extend(current[len(main.text):])
                main.text = current
            else:
                self._files[0] = _FileIndex(current, self.path)
            changed = True
        for i, p in enumerate(self.extra_files, 1):
            text = _read(p)
            if text != self._files[i].text:
                self._files[i] = _FileIndex(text, p)
                changed = True
        if changed:
            self._found = {}


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""
    except OSError:
        return ""
