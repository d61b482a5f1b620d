"""JSON: the document itself (`driftwatch.compare/v1`, `driftwatch.report/v1`, `driftwatch.history/v1`),
for scripts."""
from __future__ import annotations

import json
import math
from json.encoder import encode_basestring as _string  # the C encoder (ensure_ascii=False)
from typing import TYPE_CHECKING

from .interface import Format

if TYPE_CHECKING:
    from .document import ComparisonDoc, DocumentLike, FleetReportDoc, HistoryDoc


def strict(value):
    """`value` with every non-finite float (nan, inf) as a string: strict JSON never holds NaN/Infinity,
    and a value that slipped through validation must not crash the output."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def dump(doc: DocumentLike, flat: frozenset[str] = frozenset()) -> str:
    """`doc` as indented JSON; the records in a list under a key named in `flat` one per line (see
    `indented`)."""
    try:
        return indented(doc, flat) + "\n"
    except ValueError:  # a non-finite float somewhere: written as text, never as NaN/Infinity
        safe = strict(doc)
    try:
        return indented(safe, flat) + "\n"
    except ValueError:  # a key that is not a string under a flat list: the json module, indented throughout
        return json.dumps(safe, indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"


# history's records: a change (or a finding's history) per line. A whole-fleet `--since` answer holds
# thousands; one line each is as readable to a person scanning it, greppable, and written by the json
# module's C encoder instead of its pure-Python indenting one (0.08 of 0.37 s CPU on 151 units).
HISTORY_RECORDS = frozenset({"changes", "findings"})
_LINE = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=False)  # no indent: the C encoder


class _Unusual(Exception):
    """A value `indented` leaves to the json module (a key that is not a string, a cycle)."""


def indented(doc, flat: frozenset[str] = frozenset()) -> str:
    """``json.dumps(doc, indent=2, ensure_ascii=False, default=str, allow_nan=False)``, byte for
    byte, in half its time: the json module indents with its pure-Python encoder (0.05 s of a
    whole-fleet ``history --since``); here strings go through its C encoder and containers are
    joined in one pass. With `flat`, each element of a non-empty list under one of those keys is
    written on one line instead (``json.dumps(item, ensure_ascii=False)``: ``", "`` and ``": "``
    separators), the list still one element per line. ValueError on a non-finite float, as json.dumps."""
    out: list[str] = []
    try:
        _put(doc, "\n", out, flat)
    except (_Unusual, RecursionError):
        if flat:
            raise ValueError("not a plain document") from None  # dump: written again from strict(doc)
        return json.dumps(doc, indent=2, ensure_ascii=False, default=str, allow_nan=False)
    return "".join(out)


def _put(value, pad: str, out: list[str], flat: frozenset[str] = frozenset()) -> None:
    leaf = _scalar(value)
    if leaf is not None:
        out.append(leaf)
    elif isinstance(value, str):  # a subclass of str, int or float: as the json module writes it
        out.append(_string(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        out.append(float.__repr__(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = pad + "  "
        if all(type(key) is str for key in value):  # {"baseline": 1, "current": null} x thousands: one join each
            leaves = _leaves(value.values()) or _leaf_records(value.values(), inner)
            if leaves is not None:
                out.append("{" + inner + ("," + inner).join(
                    f"{_string(key)}: {leaf}" for key, leaf in zip(value, leaves, strict=True)) + pad + "}")
                return
        sep = "{" + inner
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Unusual
            out.append(sep + _string(key) + ": ")
            if key in flat and isinstance(item, list) and item:
                rows = inner + "  "
                out.append("[" + rows + ("," + rows).join(map(_LINE.encode, item)) + inner + "]")
            else:
                _put(item, inner, out, flat)
            sep = "," + inner
        out.append(pad + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = pad + "  "
        if all(type(item) is str for item in value):  # an argv of thousands of words: one join, no call per word
            out.append("[" + inner + ("," + inner).join(map(_string, value)) + pad + "]")
            return
        leaves = _leaves(value)
        if leaves is not None:
            out.append("[" + inner + ("," + inner).join(leaves) + pad + "]")
            return
        sep = "[" + inner
        for item in value:
            out.append(sep)
            _put(item, inner, out, flat)
            sep = "," + inner
        out.append(pad + "]")
    else:
        _put(str(value), pad, out)  # default=str


def _scalar(value) -> str | None:
    """A plain scalar (exactly str, int, finite float, bool or None) as JSON; None for anything else."""
    kind = type(value)
    if kind is str:
        return _string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    return None


def _leaves(values) -> list[str] | None:
    """Each value as `_put` writes it, when all are plain scalars (`_scalar`); else None, and the
    caller writes them one by one (a subclass, a container, nan: as before)."""
    out = []
    for value in values:
        leaf = _scalar(value)
        if leaf is None:
            return None
        out.append(leaf)
    return out


def _leaf_records(values, pad: str) -> list[str] | None:
    """Each value as `_put` writes it at `pad`, when all are dicts of plain scalars under string keys
    (a folded finding's {flag: {"baseline": …, "current": …}} x thousands: one join each); else None."""
    out = []
    inner = pad + "  "
    for value in values:
        if type(value) is not dict or not all(type(key) is str for key in value):
            return None
        if not value:
            out.append("{}")
            continue
        leaves = _leaves(value.values())
        if leaves is None:
            return None
        out.append("{" + inner + ("," + inner).join(
            f"{_string(key)}: {leaf}" for key, leaf in zip(value, leaves, strict=True)) + pad + "}")
    return out


class JsonFormat(Format):
    name = "json"
    media_type = "application/json"
    suffix = ".json"

    def render_comparison(self, doc: ComparisonDoc) -> str:
        return dump(doc)

    def render_fleet(self, doc: FleetReportDoc, brief: bool = False) -> str:
        return dump(doc)  # one layout: the document itself

    def render_history(self, doc: HistoryDoc) -> str:
        return dump(doc, HISTORY_RECORDS)
