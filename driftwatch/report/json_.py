"""JSON: the document itself (`driftwatch.compare/v1`, `driftwatch.report/v1`, `driftwatch.history/v1`),
for scripts."""
from __future__ import annotations

import json

from .interface import Format


def dump(doc: dict) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"


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
