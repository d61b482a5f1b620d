"""When two values are the same setting: spelling (0.8 vs 0.80, JSON key order, /x/ vs /x) is not drift."""
from __future__ import annotations

import posixpath
import re
from typing import Any

from ..fileio import loads_json
from .config import FlagValue

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _norm(value: Any) -> Any:
    """Comparable form: numbers (also numeric strings) as floats, tuples as lists, strings stripped."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an integer beyond a float (inside a JSON text value): compared as written
            return value
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER.match(text):
            return float(text)
        if text[:1] in "[{":  # a JSON value written with other spacing or key order
            try:
                return _norm(loads_json(text))
            except ValueError:
                return text
        if text.startswith("/") and len(text) > 1:
            return posixpath.normpath(text)  # /models/x/ is /models/x
        return text
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _norm(v) for k, v in value.items()}
    return str(value)


def _flag_state(value: FlagValue | None) -> tuple[Any, str]:
    if value is None:
        return None, "absent"
    return value.value, value.source


_DIGITS = 12  # DeepDiff's significant digits under ignore_numeric_type_changes: 0.1 + 0.2 is 0.3


def _changed(a: Any, b: Any) -> bool:
    """Whether two values are different settings. Scalars (most values) compare directly once
    normalised; lists and mappings go through DeepDiff, imported only then (it costs ~40 ms)."""
    na, nb = _norm(a), _norm(b)
    if not isinstance(na, (list, dict)) and not isinstance(nb, (list, dict)):
        if isinstance(na, (int, float)) and isinstance(nb, (int, float)):  # bool is an int, as for DeepDiff
            if na != na and nb != nb:
                return False  # nan and nan: the same value written twice
            return round(na, _DIGITS) != round(nb, _DIGITS)
        return na != nb  # "1" and 1.0 are both 1.0 after _norm
    if _identical(na, nb):  # DeepDiff can only agree (20 000 equal keys of a JSON value took it 0.3 s)
        return False
    from deepdiff import DeepDiff  # lazy: expensive to import, and most compares never get here
    return bool(DeepDiff(na, nb, ignore_numeric_type_changes=True, ignore_order=False))


def _identical(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down: no difference for DeepDiff or anyone."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(_identical(value, b[key]) for key, value in a.items())
    if type(a) is list:
        return len(a) == len(b) and all(map(_identical, a, b))
    return a == b
