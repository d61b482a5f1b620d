"""systemd 252 word lexing: extract_first_word and cunescape, as systemd splits a unit's values.

Ground, below parse/: the unit parser (parse/execstart.py, parse/environment.py) splits ExecStart=
and Environment= with it, and the redaction policy (redact.py) splits the same values the same way
to hide each word that needs hiding. Ported from systemd 252 src/basic/extract-word.c and
src/basic/escape.c.
"""
from __future__ import annotations

import re

WHITESPACE = " \t\n\r"
HEX_DIGITS = "0123456789abcdefABCDEF"
_OCT = "01234567"


class LexInvalid(Exception):
    """Internal: extract_first_word returned -EINVAL (bad escape or unbalanced quote)."""


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


def byte_char(b: int) -> str:
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
        if len(h) < 2 or h[0] not in HEX_DIGITS or h[1] not in HEX_DIGITS:
            return None
        v = int(h, 16)
        if v == 0:
            return None
        return byte_char(v), 3
    if c == "u":
        h = s[i + 1:i + 5]
        if len(h) < 4 or any(ch not in HEX_DIGITS for ch in h):
            return None
        v = int(h, 16)
        if v == 0:
            return None
        if 0xD800 <= v <= 0xDFFF:  # encoded as CESU bytes by systemd: keep them as raw bytes
            raw = bytes([0xE0 | (v >> 12), 0x80 | ((v >> 6) & 0x3F), 0x80 | (v & 0x3F)])
            return "".join(byte_char(b) for b in raw), 5
        return chr(v), 5
    if c == "U":
        h = s[i + 1:i + 9]
        if len(h) < 8 or any(ch not in HEX_DIGITS for ch in h):
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
        return byte_char(v), 3
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


_RUN_PLAIN = re.compile("[^\\\\'\"" + re.escape(WHITESPACE) + "]+")
# A word without a quote or backslash, then whitespace or the end (nearly every word of a command line):
# what the loop below returns for it, in one match.
_PLAIN_WORD = re.compile("[" + re.escape(WHITESPACE) + "]*([^\\\\'\"" + re.escape(WHITESPACE) + "]+)(?:["
                         + re.escape(WHITESPACE) + "]+|\\Z)")
_RUN_IN_DOUBLE = re.compile('[^\\\\"]+')
_RUN_IN_SINGLE = re.compile("[^\\\\']+")


def extract_word(s: str, i: int, *, cunescape: bool = True, relax_escape: bool = False,
                 relax: bool = False) -> tuple[str | None, int]:
    """extract_first_word(p, WHITESPACE, EXTRACT_UNQUOTE [|CUNESCAPE] [|UNESCAPE_RELAX] [|RELAX]).

    Returns (word or None when no word is left, new index past the word and its trailing separators).
    Raises LexInvalid for -EINVAL.
    """
    plain = _PLAIN_WORD.match(s, i)
    if plain is not None:
        return join_bytes(plain.group(1)), plain.end()
    return _extract_word(s, i, cunescape, relax_escape, relax)


def _extract_word(s: str, i: int, cunescape: bool, relax_escape: bool, relax: bool) -> tuple[str | None, int]:
    """`extract_word`, character class by character class (quotes, escapes, whitespace)."""
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
                i += 1
            else:  # the run up to the next backslash or closing quote, in one step (linear, not per char)
                m = (_RUN_IN_DOUBLE if quote == '"' else _RUN_IN_SINGLE).match(s, i)
                assert m is not None  # s[i] is neither a backslash nor the quote: a run starts here
                out.append(m.group())
                i = m.end()
            continue
        if c in "'\"":
            quote = c
            i += 1
            continue
        if c in WHITESPACE:
            while i < n and s[i] in WHITESPACE:
                i += 1
            return join_bytes("".join(out)), i
        m = _RUN_PLAIN.match(s, i)
        assert m is not None  # s[i] is no backslash, quote or blank: a plain run starts here
        out.append(m.group())
        i = m.end()


def split_words_relaxed(s: str) -> list[str]:
    """strv_split_full(WHITESPACE, EXTRACT_RELAX|EXTRACT_UNQUOTE): used for whole-word $VAR expansion."""
    words: list[str] = []
    i = 0
    while True:
        w, i = extract_word(s, i, cunescape=False, relax=True)
        if w is None:
            return words
        words.append(w)
