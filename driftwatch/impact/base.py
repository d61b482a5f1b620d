"""Shared types and defensive helpers for the impact models.

Every model is a pure function ``(name, baseline_value, current_value, ctx, params) -> Estimate``.
``name`` is the difference's concept (``parallel.tensor``, see driftwatch/concepts.py) when one
applies, else its native key (``env.NCCL_P2P_DISABLE``, an engine field with no concept); the values
are then concept-space values (booleans mean "feature on"). Models speak concepts, never an engine's
field names, so one model serves every engine. Models never raise on odd values: the helpers below
turn anything unusable into ``None``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

RUNTIME = "runtime"  # value the engine computes at start-up (unknown to us)

HIGH, MEDIUM, LOW = "high", "medium", "low"
_CONF_ORDER = {LOW: 0, MEDIUM: 1, HIGH: 2}

# Impact dimensions (design.md): single-stream, aggregate, capacity, stability, none.
SINGLE, AGGREGATE, CAPACITY, STABILITY, NONE_DIM = "single-stream", "aggregate", "capacity", "stability", "none"


@dataclass
class ImpactContext:
    """Both sides of a comparison as the models see them.

    ``baseline``/``current``: concept -> concept-space value for every field the side's engine maps
    (not only the differing ones). ``*_runtime``: the concepts whose value that side's engine
    computes at start-up. Metrics keep their own names (``accept_length``, ``throughput``,
    ``max_running_requests``, ``concurrency``). ``engine``: how people write the engine ("SGLang"),
    None when unknown or not the same on both sides ("the engine" in details). ``model_facts`` /
    ``baseline_model_facts``: what the current/baseline model's config.json says (driftwatch.facts
    ModelFacts), ``gpu_facts``: the current host's GPUs (GPUFacts); None = unknown, and the models
    fall back to their priors (roofline.py, docs/impact.md). ``concurrency_known``: False when nobody stated
    the client concurrency (no ``--concurrency``, no ``concurrency`` metric) and ``concurrency`` is
    only the default 1: models then make no "one stream" claim (an open-loop or offline benchmark
    runs many requests at once). ``current_reported``: the concepts whose current value came from the
    server (start-up log, --probe) rather than the unit or a release default."""

    baseline: dict[str, Any]
    current: dict[str, Any]
    baseline_runtime: set[str] = field(default_factory=set)
    current_runtime: set[str] = field(default_factory=set)
    baseline_metrics: dict[str, float] = field(default_factory=dict)
    current_metrics: dict[str, float] = field(default_factory=dict)
    concurrency: int = 1
    gpus: int | None = None
    engine: str | None = None
    model_facts: Any = None
    baseline_model_facts: Any = None
    gpu_facts: Any = None
    concurrency_known: bool = True
    current_reported: frozenset = frozenset()  # concepts whose current value the server itself reported
    draft_model_facts: Any = None  # the current draft head's own config.json (ModelFacts), when its path was read
    baseline_draft_model_facts: Any = None


@dataclass
class Estimate:
    throughput_ratio: float | None  # current / baseline for this change alone; None = no sound model
    confidence: str  # high | medium | low
    detail: str  # one plain sentence with the numbers
    dimension: str | None = None  # overrides the rule's dimension when set
    # The 80 % interval [lo, hi] of the ratio (uncertainty.py); None when there is no ratio. Models that
    # model their own uncertainty set it; impact/__init__.py gives every other ratio one by confidence.
    interval: tuple[float, float] | None = None
    # The concept whose estimate already holds this change (two flags of one effect are priced once):
    # its ratio is then 1.0 and reports say "counted in #N" instead of "speed unchanged".
    counted_in: str | None = None

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["interval"] = None if self.interval is None else list(self.interval)
        return d


Model = Callable[[str, Any, Any, ImpactContext, dict], Estimate]


def min_conf(*levels: str) -> str:
    """The weakest of the given confidence levels."""
    return min(levels, key=lambda c: _CONF_ORDER.get(c, 0))


def as_int(value: Any) -> int | None:
    """An int from an int, an integral float or a numeric string; None otherwise (bools too)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value == int(value) else None
    if isinstance(value, str):
        try:
            f = float(value.strip())
        except ValueError:
            return None
        return int(f) if math.isfinite(f) and f == int(f) else None
    return None


def as_float(value: Any) -> float | None:
    """A finite float from a number or numeric string; None otherwise (bools too)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        f = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("1", "true", "yes", "on"):
            return True
        if v in ("0", "false", "no", "off", ""):
            return False
    return None


def is_runtime(value: Any, name: str | None = None, runtime_set: set[str] | None = None) -> bool:
    """Whether a value is computed at start-up: the "runtime" marker, or ``name`` (a concept) in the
    side's runtime set."""
    try:
        listed = name is not None and runtime_set is not None and bool(runtime_set) and name in runtime_set
    except TypeError:
        listed = False
    return (isinstance(value, str) and value.strip().lower() == RUNTIME) or listed


def side_value(ctx: ImpactContext, side: str, concept: str, name: str, given: Any) -> Any:
    """The value of ``concept`` on one side: the model's argument when the model was called for that
    concept (``name``), else the side's dict in ctx."""
    if concept == name:
        return given
    values = (ctx.baseline if side == "baseline" else ctx.current) or {}
    try:
        return values.get(concept)
    except AttributeError:
        return None


def engine_label(ctx: ImpactContext) -> str:
    """The engine as people write it ("SGLang"), or "the engine" when unknown."""
    label = getattr(ctx, "engine", None)
    return label.strip() if isinstance(label, str) and label.strip() else "the engine"


def on_off(value: Any) -> str:
    """A feature flag in words: on / off (concept-space booleans mean "feature on")."""
    b = None if value is None else as_bool(value)
    return show(value) if b is None or is_runtime(value) else ("on" if b else "off")


def side_runtime(ctx: ImpactContext, side: str) -> set[str]:
    s = ctx.baseline_runtime if side == "baseline" else ctx.current_runtime
    return s if isinstance(s, set) else set(s or ())


def side_metrics(ctx: ImpactContext, side: str) -> dict:
    m = ctx.baseline_metrics if side == "baseline" else ctx.current_metrics
    return m if isinstance(m, dict) else {}


def concurrency_of(ctx: ImpactContext) -> int:
    c = as_int(getattr(ctx, "concurrency", 1))
    return c if c is not None and c >= 1 else 1


def concurrency_stated(ctx: ImpactContext) -> bool:
    """Somebody stated the client concurrency (--concurrency or a concurrency metric): it is not only
    the default 1 standing in for an unknown one."""
    return getattr(ctx, "concurrency_known", True) is not False


def single_stream_known(ctx: ImpactContext) -> bool:
    """Concurrency 1 as stated, not as the default standing in for an unstated concurrency."""
    return concurrency_of(ctx) == 1 and concurrency_stated(ctx)


def param(params: Any, name: str, default: float) -> float:
    """A numeric parameter from a rule's params, falling back to the documented default."""
    if isinstance(params, dict):
        v = as_float(params.get(name))
        if v is not None:
            return v
    return default


def show(value: Any) -> str:
    if is_runtime(value):
        return "computed at start-up"
    if value is None:
        return "unset"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def show_side(ctx: ImpactContext, side: str, name: str, value: Any) -> str:
    """A side's value in words; an unset value the engine computes at start-up says so."""
    if value is None and name in side_runtime(ctx, side):
        return "computed at start-up"
    return show(value)


def unknown_estimate(detail: str, dimension: str | None = None) -> Estimate:
    return Estimate(None, LOW, detail, dimension)


PROMPT_KEYS = ("prompt_tokens", "input_tokens")


def stated_metric(ctx: ImpactContext, keys: Iterable[str], lo: float, hi: float) -> tuple[float, str] | None:
    """The first of `keys` within [lo, hi] on the current side, else the baseline side: (value, where)."""
    for side in ("current", "baseline"):
        metrics = side_metrics(ctx, side)
        for k in keys:
            v = as_float(metrics.get(k))
            if v is not None and lo <= v <= hi:
                return v, k
    return None


def prompt_tokens(ctx: ImpactContext) -> int | None:
    """The typical prompt length the comparison was asked about (--workload-prompt-tokens, or a
    `prompt_tokens`/`input_tokens` metric), else None: shared by the roofline and the workload models."""
    v = stated_metric(ctx, PROMPT_KEYS, 1.0, 1e8)
    return None if v is None else int(v[0])
