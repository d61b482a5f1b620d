"""`model_change`, `interpreter_change`, `engine_version`, `engine_change`: a different model, engine
build or engine.

Nothing in one build (or engine) predicts the other's speed: ratio None, with the reason.
"""
from __future__ import annotations

from typing import Any

from .base import LOW, NONE_DIM, Estimate, ImpactContext, show

_NO_ENGINE = ("", "none", "null", "unknown", "no known engine")  # EngineConfig.title says the last


def _build(ctx: ImpactContext) -> str:
    """ "SGLang build" when the engine is known, else "engine build"."""
    label = getattr(ctx, "engine", None)
    return f"{label.strip()} build" if isinstance(label, str) and label.strip() else "engine build"


def _engine(ctx: ImpactContext) -> str:
    label = getattr(ctx, "engine", None)
    return label.strip() if isinstance(label, str) and label.strip() else "engine"


def model_change(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                 params: dict) -> Estimate:
    return Estimate(None, LOW, f"{name} {show(baseline_value)} → {show(current_value)}: different model: "
                    f"throughput not comparable")


def interpreter_change(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                       params: dict) -> Estimate:
    if name == "engine.version":  # DW502 also names the release: its own words (impact of its defaults apart)
        return engine_version(name, baseline_value, current_value, ctx, params)
    if name == "launcher.runtime":  # between a container image and the host's Python environment
        return Estimate(None, LOW, f"The server now runs in {show(current_value)} instead of {show(baseline_value)}, "
                        f"hence possibly a different {_build(ctx)} and kernels; re-measure")
    return Estimate(None, LOW, f"{name} {show(baseline_value)} → {show(current_value)}: a different Python "
                    f"environment, hence possibly a different {_build(ctx)} and kernels; re-measure")


def engine_version(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                   params: dict) -> Estimate:
    engine = _engine(ctx)
    if show(baseline_value) == show(current_value):
        return Estimate(1.0, LOW, f"same {engine} version {show(current_value)}", NONE_DIM)
    return Estimate(None, LOW, f"{engine} {show(baseline_value)} → {show(current_value)}: a different {_build(ctx)}; "
                    f"its changed defaults that a model prices are findings of their own, its kernels and "
                    f"schedulers are not priced; re-measure")


def _engine_name(value: Any) -> str | None:
    if value is None or value is False:
        return None
    text = str(value).strip()
    return None if text.lower() in _NO_ENGINE else text


def engine_change(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                  params: dict) -> Estimate:
    """launcher.engine: the unit runs a different engine, or none driftwatch knows."""
    b, c = _engine_name(baseline_value), _engine_name(current_value)
    if b is not None and c is not None and b.lower() == c.lower():
        return Estimate(1.0, LOW, f"same engine {c}", NONE_DIM)
    if b and c:
        what = f"engine {b} → {c}: a different engine serves the model"
    elif b:
        what = f"engine {b} → none: the unit no longer starts an inference engine driftwatch knows"
    elif c:
        what = f"engine none → {c}: the unit now starts {c}, where it ran no engine driftwatch knows"
    else:
        what = "no inference engine driftwatch knows on either side"
    return Estimate(None, LOW, f"{what}: throughput not comparable; re-measure")
