"""`model_change`, `interpreter_change`, `engine_version`: a different model or SGLang build.

Nothing in one build predicts the other's speed: ratio None, with the reason.
"""
from __future__ import annotations

from typing import Any

from .base import Estimate, ImpactContext, LOW, NONE_DIM, show


def model_change(key: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                 params: dict) -> Estimate:
    return Estimate(None, LOW, f"{key} {show(baseline_value)} → {show(current_value)}: different model: "
                    f"throughput not comparable")


def interpreter_change(key: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                       params: dict) -> Estimate:
    return Estimate(None, LOW, f"{key} {show(baseline_value)} → {show(current_value)}: a different Python "
                    f"environment, hence possibly a different SGLang build and kernels; re-measure")


def engine_version(key: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                   params: dict) -> Estimate:
    if show(baseline_value) == show(current_value):
        return Estimate(1.0, LOW, f"same SGLang version {show(current_value)}", NONE_DIM)
    return Estimate(None, LOW, f"SGLang {show(baseline_value)} → {show(current_value)}: a different SGLang build "
                    f"(defaults, kernels and schedulers change between releases); re-measure")
