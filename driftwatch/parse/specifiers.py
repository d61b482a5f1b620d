"""systemd 252 unit specifiers (%n, %i, ...) and unit-name unescaping.

Shared by execstart.py (ExecStart=) and environment.py (Environment=); words are split by
driftwatch/unitwords.py. Ported from systemd 252 src/shared/specifier.c and src/core/unit-printf.c;
the specifier set was checked letter by letter with `systemd --test` 252.
"""
from __future__ import annotations

import string

from driftwatch.unitwords import HEX_DIGITS, byte_char, join_bytes

POSSIBLE_SPECIFIERS = string.ascii_letters + string.digits

# Letters systemd 252 accepts in unit_full_printf (others alphanumeric -> "Invalid slot").
VALID_SPECIFIERS = "abcdfghijlmnopqrstuvwyABCEGHIJLMNPRSTUVWY"
DEPRECATED_SPECIFIERS = "crR"


class SpecifierFailure(Exception):
    """Internal: specifier_printf failed; str() is the errno text systemd prints."""


# ---------------------------------------------------------------- specifiers

def unit_name_unescape(s: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "-":
            out.append("/")
        elif (c == "\\" and s[i + 1:i + 2] == "x" and len(s) >= i + 4
              and s[i + 2] in HEX_DIGITS and s[i + 3] in HEX_DIGITS):
            out.append(byte_char(int(s[i + 2:i + 4], 16)))
            i += 4
            continue
        else:
            out.append(c)
        i += 1
    return join_bytes("".join(out))


def _path_unescape(s: str) -> str | None:
    if not s:
        return None
    if s == "-":
        return "/"
    w = unit_name_unescape(s)
    if w.startswith("/") or w.endswith("/"):
        return None
    p = "/" + w
    parts = p.split("/")[1:]
    if any(x in ("", ".", "..") for x in parts):
        return None
    return p


def _split_unit_name(name: str) -> tuple[str, str | None, str]:
    """-> (prefix, instance or None, suffix-less name)"""
    base = name
    dot = name.rfind(".")
    if dot > 0:
        base = name[:dot]
    if "@" in base:
        prefix, instance = base.split("@", 1)
        return prefix, instance, base
    return base, None, base


def unit_specifiers(unit_name: str | None, home: str = "/root", user: str = "root",
                    hostname: str = "localhost", *, fragment_path: str | None = None) -> dict:
    """Specifier table for a unit run by the system manager (systemd 252).

    Maps each letter systemd 252 accepts to its value, or to None when the value depends on the machine
    and is not known here (e.g. %m machine id, %b boot id, %v kernel): such specifiers are kept verbatim.
    Letters absent from the table are invalid in 252 ("Invalid slot").
    """
    spec: dict[str, str | None] = {c: None for c in VALID_SPECIFIERS}
    spec.update({
        "h": home, "u": user, "H": hostname, "l": hostname.split(".", 1)[0],
        "t": "/run", "S": "/var/lib", "C": "/var/cache", "L": "/var/log", "E": "/etc",
        "T": "/tmp", "V": "/var/tmp",
    })
    if user == "root":
        spec.update({"U": "0", "g": "root", "G": "0"})
    if unit_name:
        prefix, instance, bare = _split_unit_name(unit_name)
        last = prefix.rsplit("-", 1)[-1] if "-" in prefix else prefix
        spec.update({
            "n": unit_name, "N": bare, "p": prefix, "P": unit_name_unescape(prefix),
            "i": instance or "", "I": unit_name_unescape(instance or ""),
            "j": last, "J": unit_name_unescape(last),
            "f": _path_unescape(instance) if instance else _path_unescape(prefix),
            "d": f"/run/credentials/{unit_name}",
        })
    if fragment_path:
        spec["y"] = fragment_path
        spec["Y"] = fragment_path.rsplit("/", 1)[0] or "/"
    return spec


def apply_specifiers(text: str, spec: dict | None, max_length: int = 1024 * 1024) -> str:
    """specifier_printf(): '%%' -> '%', known letters -> value (None = keep verbatim), unknown alphanumeric
    letters -> SpecifierFailure("Invalid slot"), anything else (and a trailing '%') kept as written."""
    if spec is None or "%" not in text:
        if len(text) > max_length:
            raise SpecifierFailure("File name too long")
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:
            out.append("%")
            break
        d = text[i + 1]
        i += 2
        if d == "%":
            out.append("%")
        elif d in spec:
            v = spec[d]
            out.append("%" + d if v is None else v)
        elif d in POSSIBLE_SPECIFIERS:
            raise SpecifierFailure("Invalid slot")
        else:
            out.append("%" + d)
    result = "".join(out)
    if len(result) > max_length:
        raise SpecifierFailure("File name too long")
    return result
