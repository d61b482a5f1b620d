"""`no_impact` (host, port, log level, served model name, API key, ...) and `unknown`."""
from __future__ import annotations

from typing import Any

from .base import HIGH, LOW, NONE_DIM, Estimate, ImpactContext


def no_impact(key: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
              params: dict) -> Estimate:
    return Estimate(1.0, HIGH, f"{key} does not affect throughput", NONE_DIM)


def unknown(key: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
            params: dict) -> Estimate:
    return Estimate(None, LOW, f"no rule knows this setting ({key}); impact unknown")
