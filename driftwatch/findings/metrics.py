"""A measured accept length against what the unit's speculative steps can accept.

An accept length above the steps + 1 tokens one speculative step can accept would be clamped into a
confident, wrong estimate: it is refused (exit 2) instead. The figures' names and plain bounds are
the records' (snapshots/metrics.py).
"""
from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..snapshots.metrics import ALIASES


def accept_length_of(metrics: dict[str, float]) -> tuple[str, float] | None:
    for name in ("accept_length", *ALIASES):
        if metrics.get(name) is not None:
            return name, metrics[name]
    return None


def max_accept_length(config: Any) -> tuple[int, str] | None:
    """(steps + 1, the setting that says so) for a unit with speculative decoding on and a known
    number of steps; None when speculation is off or the steps are not known before start-up."""
    from ..impact.speculative import ALGO, STEPS, normalise_algorithm
    try:
        values, runtime = config.concept_values()
        if normalise_algorithm(values.get(ALGO)) is None or STEPS in runtime:
            return None
    except (AttributeError, ValueError):
        return None
    steps = values.get(STEPS)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        return None
    flag = next((k for k, b in getattr(config, "bindings", {}).items() if b.concept == STEPS), "steps")
    spec = getattr(config, "flags", {}).get(flag)
    shown = (spec.flag if spec is not None and spec.flag else flag)
    return steps + 1, f"{shown} {steps}"


def check_accept_length(metrics: dict[str, float], config: Any, where: str) -> None:
    """Refuse an accept length above the steps + 1 tokens one step of this unit can accept."""
    found = accept_length_of(metrics)
    limit = max_accept_length(config)
    if found is None or limit is None:
        return
    name, value = found
    most, setting = limit
    if value > most + 1e-9:
        raise InputError(f"{where}: {name}={value:g} is impossible with {setting}: one step accepts at most "
                         f"{most} tokens (steps + 1)")
