"""JSON compare report: the driftwatch.compare/v1 document."""
from __future__ import annotations

import json

from ..compare import Comparison, comparison_to_dict


def render(c: Comparison) -> str:
    return json.dumps(comparison_to_dict(c), indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"
