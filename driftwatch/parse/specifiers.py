"""systemd 252 word lexing (extract_first_word + cunescape) and unit specifiers (%n, %i, ...).

Shared by execstart.py (ExecStart=) and environment.py (Environment=).
Ported from systemd 252 src/basic/extract-word.c, src/basic/escape.c, src/shared/specifier.c,
src/core/unit-printf.c; the specifier set was checked letter by letter with `systemd --test` 252.
"""
from __future__ import annotations

import re
import string

WHITESPACE = " \t\n\r"
_HEX = "0123456789abcdefABCDEF"
_OCT = "01234567"
POSSIBLE_SPECIFIERS = string.ascii_letters + string.digits

# Letters systemd 252 accepts in unit_full_printf (others alphanumeric -> "Invalid slot").
VALID_SPECIFIERS = "abcdfghijlmnopqrstuvwyABCEGHIJLMNPRSTUVWY"
DEPRECATED_SPECIFIERS = "crR"


class LexInvalid(Exception):
    """Internal: extract_first_word returned -EINVAL (bad escape or unbalanced quote)."""


class SpecifierFailure(Exception):
    """Internal: specifier_printf failed; str() is the errno text systemd prints."""


def _unichar_is_valid(c: int) -> bool:
    if c >= 0x110000:
        return False
    if (c & 0xFFFFF800) == 0xD800:
        return False
    if 0xFDD0 <= c <= 0xFDEF:
        return False
    if (c & 0xFFFE) == 0xFFFE:
        return False
    return True


def _byte(b: int) -> str:
    """A raw byte from \\xNN / \\NNN: ASCII as is, else a surrogate-escaped byte (joined into UTF-8 later)."""
    return chr(b) if b < 0x80 else chr(0xDC00 + b)


def cunescape_one(s: str, i: int) -> tuple[str, int] | None:
    """Decode the escape whose letter is s[i] (just after the backslash). Returns (text, consumed) or None."""
    c = s[i]
    simple = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
              "\\": "\\", '"': '"', "'": "'", "s": " "}
    if c in simple:
        return simple[c], 1
    if c == "x":
        h = s[i + 1:i + 3]
        if len(h) < 2 or h[0] not in _HEX or h[1] not in _HEX:
            return None
        v = int(h, 16)
        if v == 0:
            return None
        return _byte(v), 3
    if c == "u":
        h = s[i + 1:i + 5]
        if len(h) < 4 or any(ch not in _HEX for ch in h):
            return None
        v = int(h, 16)
        if v == 0:
            return None
        if 0xD800 <= v <= 0xDFFF:  # encoded as CESU bytes by systemd: keep them as raw bytes
            raw = bytes([0xE0 | (v >> 12), 0x80 | ((v >> 6) & 0x3F), 0x80 | (v & 0x3F)])
            return "".join(_byte(b) for b in raw), 5
        return chr(v), 5
    if c == "U":
        h = s[i + 1:i + 9]
        if len(h) < 8 or any(ch not in _HEX for ch in h):
            return None
        v = int(h, 16)
        if not _unichar_is_valid(v) or v == 0:
            return None
        return chr(v), 9
    if c in _OCT:
        o = s[i:i + 3]
        if len(o) < 3 or any(ch not in _OCT for ch in o):
            return None
        v = int(o, 8)
        if v == 0 or v > 255:
            return None
        return _byte(v), 3
    return None


_SURROGATE = re.compile("[\udc80-\udcff]")


def join_bytes(word: str) -> str:
    """Turn surrogate-escaped raw bytes into characters where they form valid UTF-8."""
    if word.isascii() or not _SURROGATE.search(word):  # nearly every word: no scan character by character
        return word
    try:
        return word.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    except UnicodeError:
        return word


def extract_word(s: str, i: int, *, cunescape: bool = True, relax_escape: bool = False,
                 relax: bool = False) -> tuple[str | None, int]:
    """extract_first_word(p, WHITESPACE, EXTRACT_UNQUOTE [|CUNESCAPE] [|UNESCAPE_RELAX] [|RELAX]).

    Returns (word or None when no word is left, new index past the word and its trailing separators).
    Raises LexInvalid for -EINVAL.
    """
    n = len(s)
    while i < n and s[i] in WHITESPACE:
        i += 1
    if i >= n:
        return None, i
    out: list[str] = []
    quote = ""
    while True:
        if i >= n:
            if quote and not relax:
                raise LexInvalid()
            return join_bytes("".join(out)), i
        c = s[i]
        if c == "\\":
            j = i + 1
            if j >= n:
                if relax_escape and (not quote or relax):
                    out.append("\\")
                    return join_bytes("".join(out)), j
                if relax:
                    return join_bytes("".join(out)), j
                raise LexInvalid()
            if cunescape:
                dec = cunescape_one(s, j)
                if dec is not None:
                    out.append(dec[0])
                    i = j + dec[1]
                    continue
                if relax_escape:
                    out.append("\\" + s[j])
                    i = j + 1
                    continue
                raise LexInvalid()
            out.append(s[j])
            i = j + 1
            continue
        if quote:
            if c == quote:
                quote = ""
            else:
                out.append(c)
            i += 1
            continue
        if c in "'\"":
            quote = c
            i += 1
            continue
        if c in WHITESPACE:
            while i < n and s[i] in WHITESPACE:
                i += 1
            return join_bytes("".join(out)), i
        out.append(c)
        i += 1


def split_words_relaxed(s: str) -> list[str]:
    """strv_split_full(WHITESPACE, EXTRACT_RELAX|EXTRACT_UNQUOTE): used for whole-word $VAR expansion."""
    words: list[str] = []
    i = 0
    while True:
        w, i = extract_word(s, i, cunescape=False, relax=True)
        if w is None:
            return words
        words.append(w)


# ---------------------------------------------------------------- specifiers

def unit_name_unescape(s: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "-":
            out.append("/")
        elif c == "\\" and s[i + 1:i + 2] == "x" and len(s) >= i + 4 and s[i + 2] in _HEX and s[i + 3] in _HEX:
            out.append(_byte(int(s[i + 2:i + 4], 16)))
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
