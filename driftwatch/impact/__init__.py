"""Impact models: estimate the throughput effect of one configuration difference.

A model is ``(name, baseline_value, current_value, ctx, params) -> Estimate``: ``name`` is the
difference's concept when one applies (``parallel.tensor``; values then in concept space), else its
native key; ``throughput_ratio`` is current ÷ baseline for that change alone, None when there is no
sound model. Models are looked up by name (the names rules/*.yaml use). Assumptions and constants:
docs/impact.md.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Protocol, cast

from ..errors import DriftwatchError
from .base import LOW, Estimate, ImpactContext, Model
from .capacity import kv_capacity
from .combine import combine
from .concurrency import concurrency_cap
from .dp_attention import dp_attention
from .environment import environment
from .expected_tokens import alpha_from_accept_length, expected_tokens, step_cost
from .features import feature_toggle
from .kernels import kernel_choice
from .none import command_change, no_impact, unknown
from .parallelism import parallelism
from .relaxed import relaxed_acceptance
from .speculative import speculative_steps, speculative_toggle
from .uncertainty import combine_intervals, direction, finish
from .versions import engine_change, engine_version, interpreter_change, model_change

__all__ = ["ImpactContext", "Estimate", "Model", "MODELS", "get_model", "combine", "combine_intervals", "direction",
           "expected_tokens", "alpha_from_accept_length", "step_cost"]


class GuardedModel(Protocol):
    """A model as MODELS holds it: called like any `Model`, with the unwrapped model as `raw` (for tests)."""

    raw: Model

    def __call__(self, name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                 params: dict | None = None) -> Estimate: ...


def _never_raises(name: str, fn: Model) -> GuardedModel:
    """Odd values degrade to 'no estimate' instead of an exception; odd ratios are dropped. Every
    ratio leaves with its 80 % interval and the confidence its width earns (uncertainty.finish)."""

    @functools.wraps(fn)
    def wrapper(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                params: dict | None = None) -> Estimate:
        try:
            est = fn(name, baseline_value, current_value, ctx, params if isinstance(params, dict) else {})
        except Exception as exc:  # noqa: BLE001 - a model must never break a comparison
            return Estimate(None, LOW, f"model {name} could not use these values "
                            f"({type(exc).__name__}: {exc}); impact unknown")
        r = est.throughput_ratio
        if r is not None and (isinstance(r, bool) or not isinstance(r, (int, float))
                              or not math.isfinite(r) or r <= 0):
            return Estimate(None, LOW, f"model {name} gave no usable ratio; {est.detail}", est.dimension)
        return finish(est)

    guarded = cast(GuardedModel, wrapper)  # a function given the attribute the protocol names
    guarded.raw = fn  # the unwrapped model, for tests
    return guarded


MODELS: dict[str, Model] = {name: _never_raises(name, fn) for name, fn in {
    "speculative_steps": speculative_steps,
    "speculative_toggle": speculative_toggle,
    "relaxed_acceptance": relaxed_acceptance,
    "concurrency_cap": concurrency_cap,
    "kv_capacity": kv_capacity,
    "parallelism": parallelism,
    "dp_attention": dp_attention,
    "kernel_choice": kernel_choice,
    "feature_toggle": feature_toggle,
    "model_change": model_change,
    "interpreter_change": interpreter_change,
    "engine_version": engine_version,
    "engine_change": engine_change,
    "command_change": command_change,
    "environment": environment,
    "no_impact": no_impact,
    "unknown": unknown,
}.items()}


def get_model(name: str) -> Model:
    try:
        return MODELS[name]
    except (KeyError, TypeError):
        raise DriftwatchError(f"unknown impact model '{name}'") from None
