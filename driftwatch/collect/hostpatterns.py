"""Regular expressions in host patterns (``--limit '~regex'``), kept to a shape that cannot backtrack
without bound, and the exact pattern that names a set of hosts briefly (the report's restore hint).

Python's `re` backtracks: ``~(a+)+b`` against a long name runs for minutes before any host is
contacted. A linear engine would be a new dependency (``re2`` has no wheels on many platforms), so
the shape is checked instead: at most `MAX_REGEX` characters, no backreference, no repeat inside a
repeat, no repeat of an alternation, at most `MAX_UNBOUNDED` unbounded repeats. A refused pattern is
one line (an InputError) naming the rule it breaks.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import Any

from ..errors import InputError

MAX_REGEX = 256
MAX_UNBOUNDED = 4  # ".*a.*b.*c.*d": polynomial, but its degree stays small on a host name

if sys.version_info >= (3, 11):  # re._parser; before it, sre_parse (deprecated since 3.11)
    from re import _constants as _sre_c, _parser as _sre_p
else:  # pragma: no cover - older Pythons
    import sre_constants as _sre_c
    import sre_parse as _sre_p

_REPEATS = {_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT} | ({_sre_c.POSSESSIVE_REPEAT}
                                                     if hasattr(_sre_c, "POSSESSIVE_REPEAT") else set())


def _walk(items: Any, inside_repeat: bool, counts: list[int]) -> str | None:
    """The first rule the parsed pattern `items` breaks, or None."""
    for op, arg in items:
        if op in (_sre_c.GROUPREF, _sre_c.GROUPREF_EXISTS):
            return "a backreference"
        if op in _REPEATS:
            low, high, body = arg
            if high > 1 and inside_repeat:
                return "a repeat inside a repeat (such as (a+)+)"
            if high == _sre_c.MAXREPEAT:
                counts[0] += 1
            if high > 1 and any(sub_op == _sre_c.BRANCH or (sub_op == _sre_c.SUBPATTERN and _has_branch(sub_arg[-1]))
                                for sub_op, sub_arg in body):
                return "a repeat of an alternation (such as (a|ab)*)"
            why = _walk(body, inside_repeat or high > 1, counts)
        elif op == _sre_c.SUBPATTERN:
            why = _walk(arg[-1], inside_repeat, counts)
        elif op == _sre_c.BRANCH:
            why = next((w for w in (_walk(b, inside_repeat, counts) for b in arg[1]) if w), None)
        elif op in (_sre_c.ASSERT, _sre_c.ASSERT_NOT):
            why = _walk(arg[1], inside_repeat, counts)
        elif hasattr(_sre_c, "ATOMIC_GROUP") and op == _sre_c.ATOMIC_GROUP:
            why = _walk(arg, inside_repeat, counts)
        else:
            why = None
        if why:
            return why
    return None


def _has_branch(items: Any) -> bool:  # a parsed pattern (re._parser.SubPattern)
    return any(op == _sre_c.BRANCH or (op == _sre_c.SUBPATTERN and _has_branch(arg[-1])) for op, arg in items)


def compile_host_regex(text: str, where: str) -> re.Pattern:
    """`text` (a ``~regex`` term without its ``~``) compiled, or one InputError saying why not.
    `where` starts the message (``--limit '…'``)."""
    if len(text) > MAX_REGEX:
        raise InputError(f"{where}: regular expression of {len(text)} characters (at most {MAX_REGEX})")
    try:
        parsed = _sre_p.parse(text)
        compiled = re.compile(text)
    except (re.error, RecursionError, OverflowError) as exc:
        raise InputError(f"{where}: bad regular expression {text!r}: {exc}") from None
    counts = [0]
    why = _walk(parsed.data if hasattr(parsed, "data") else parsed, False, counts)
    if why is None and counts[0] > MAX_UNBOUNDED:
        why = f"{counts[0]} unbounded repeats (at most {MAX_UNBOUNDED})"
    if why:
        raise InputError(f"{where}: regular expression {text!r} refused: {why} can backtrack for minutes; "
                         f"list the hosts, use a glob or a simpler expression")
    return compiled


# ------------------------------------------------------------------ an exact pattern for a set of names

def _digits_range(lo: str, hi: str) -> str:
    """A regex matching exactly the decimal strings of len(lo) from lo to hi (lo <= hi, same length)."""
    if lo == hi:
        return lo
    if len(lo) == 1:
        return f"[{lo}-{hi}]"
    if lo[0] == hi[0]:
        return lo[0] + _digits_range(lo[1:], hi[1:])
    n = len(lo) - 1
    parts = []
    start, end = int(lo[0]), int(hi[0])
    if lo[1:] != "0" * n:
        parts.append(lo[0] + _digits_range(lo[1:], "9" * n))
        start += 1
    tail = None
    if hi[1:] != "9" * n:
        tail = hi[0] + _digits_range("0" * n, hi[1:])
        end -= 1
    if start <= end:
        parts.append((str(start) if start == end else f"[{start}-{end}]") + "[0-9]" * n)
    if tail:
        parts.append(tail)
    return parts[0] if len(parts) == 1 else "(" + "|".join(parts) + ")"  # no "(?:": --limit splits on ':'


_NUMBERED = re.compile(r"(.*?)([0-9]+)\Z", re.S)


def names_regex(names: Iterable[str]) -> str | None:
    """A regular expression (without the ``~``) that matches exactly `names` among all strings, shorter
    than the names joined by ``:`` and accepted by `compile_host_regex`; None when there is none.
    Numbered names (gpu000 … gpu999) fold to ranges: 4 000 hosts of a rack become one short pattern."""
    names = list(dict.fromkeys(names))
    if len(names) < 2 or any(c in n for n in names for c in ":,"):  # --limit splits terms on both
        return None
    runs: dict[tuple[str, int], list[int]] = {}
    others: list[str] = []
    for name in names:
        m = _NUMBERED.match(name)
        if m:
            runs.setdefault((m.group(1), len(m.group(2))), []).append(int(m.group(2)))
        else:
            others.append(name)
    alternatives: list[str] = [re.escape(n) for n in others]
    for (prefix, width), numbers in runs.items():
        numbers.sort()
        spans: list[list[int]] = []
        for n in numbers:
            if spans and n == spans[-1][1] + 1:
                spans[-1][1] = n
            else:
                spans.append([n, n])
        for lo, hi in spans:
            alternatives.append(re.escape(prefix) + _digits_range(f"{lo:0{width}d}", f"{hi:0{width}d}"))
    text = "(" + "|".join(alternatives) + r")\Z"
    if len(text) > MAX_REGEX or len(text) + 1 >= len(":".join(names)):
        return None
    try:
        compile_host_regex(text, "")
    except InputError:
        return None
    return text


__all__ = ["MAX_REGEX", "MAX_UNBOUNDED", "compile_host_regex", "names_regex"]
