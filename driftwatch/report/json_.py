"""JSON: the document itself (`driftwatch.compare/v1`, `driftwatch.report/v1`, `driftwatch.history/v1`),
for scripts."""
from __future__ import annotations

import json
import math

from .interface import Format


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


def dump(doc: dict) -> str:
    try:
        return json.dumps(doc, indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"
    except ValueError:  # a non-finite float somewhere: written as text, never as NaN/Infinity
        return json.dumps(strict(doc), indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"


class JsonFormat(Format):
    name = "json"
    media_type = "application/json"
    suffix = ".json"

    def render_comparison(self, doc: dict) -> str:
        return dump(doc)

    def render_fleet(self, doc: dict) -> str:
        return dump(doc)

    def render_history(self, doc: dict) -> str:
        return dump(doc)
