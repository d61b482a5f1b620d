"""What one side's speculative decoding is: its algorithm, draft steps, topk and draft tokens
(`read_side`), read from the concepts whatever the engine calls its fields, and its measured accept
length. The estimates that compare two sides are in speculative.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import calibration as cal
from .base import ImpactContext, as_float, as_int, engine_label, is_runtime, side_metrics, side_runtime, side_value

ALGO, STEPS, TOPK, DRAFT = ("speculative.algorithm", "speculative.steps",
                            "speculative.topk", "speculative.draft_tokens")
MODEL_PATH = "model.path"
ACCEPT_KEYS = ("accept_length", "spec_accept_length", "accept_len")
_OFF_WORDS = ("", "NONE", "NULL", "OFF", "FALSE", "DISABLED")


def normalise_algorithm(value: Any) -> str | None:
    """Upper-cased algorithm, None when off; NEXTN (and MTP) read as EAGLE (SGLang treats NEXTN as
    EAGLE; MTP heads are EAGLE-style drafters)."""
    if value is None or value is False:
        return None
    if isinstance(value, str):
        s = value.strip().upper()
        if s in _OFF_WORDS:
            return None
        return "EAGLE" if s in ("NEXTN", "MTP") else s
    raise ValueError(f"speculative algorithm {value!r} is not a name")


@dataclass
class SpecSide:
    algorithm: str | None  # None = speculation off
    steps: int = 0
    topk: int = 1
    tokens: int = 1  # tokens verified per request per step (k + 1 with topk 1, else draft tokens)
    notes: list[str] = field(default_factory=list)  # assumed defaults, said in the detail

    @property
    def on(self) -> bool:
        return self.algorithm is not None

    def label(self) -> str:
        if not self.on:
            return "off"
        return f"E({self.steps})" if self.topk == 1 else f"E({self.steps}, topk {self.topk})"


def read_side(ctx: ImpactContext, side: str, name: str, given: Any) -> SpecSide | str:
    """The speculative configuration of one side, or a reason why it is unknown. ``name``/``given``:
    the concept the model was called for and that side's value of it."""
    runtime = side_runtime(ctx, side)
    raw_algo = side_value(ctx, side, ALGO, name, given)
    if is_runtime(raw_algo, ALGO, runtime):
        return f"the {side} speculative algorithm is computed at start-up"
    try:
        algo = normalise_algorithm(raw_algo)
    except ValueError as exc:
        return str(exc)
    if algo is None:
        return SpecSide(None)
    model_path = str(side_value(ctx, side, MODEL_PATH, name, None) or "").lower()
    d_steps, d_topk, d_draft = (cal.ARCH_DEFAULTS_LLAMA if ("llama" in model_path or "grok" in model_path)
                                else cal.ARCH_DEFAULTS_OTHER)
    notes: list[str] = []
    values = {}
    mapped = (ctx.baseline if side == "baseline" else ctx.current) or {}
    for concept in (STEPS, TOPK, DRAFT):
        if concept in (TOPK, DRAFT) and concept != name and isinstance(mapped, dict) and concept not in mapped:
            # the engine has no such setting (vLLM drafts a chain): nothing was assumed
            values[concept] = 1 if concept == TOPK else None
            continue
        raw = side_value(ctx, side, concept, name, given)
        if raw is None or is_runtime(raw, concept, runtime):
            values[concept] = None
            continue
        v = as_int(raw)
        if v is None or v < (0 if concept == STEPS else 1):
            return f"{concept} = {raw!r} on the {side} side is not a usable count"
        values[concept] = v
    steps, topk, draft = values[STEPS], values[TOPK], values[DRAFT]
    if steps is None:
        steps = d_steps
        notes.append(f"{side} steps unset: {engine_label(ctx)}'s architecture default {d_steps} assumed")
    if topk is None:
        topk = d_topk
        notes.append(f"{side} topk unset: {d_topk} assumed")
    if topk == 1:
        draft = steps + 1  # a chain verifies every draft plus the bonus token (SGLang forces it)
    elif draft is None:
        draft = d_draft
        notes.append(f"{side} draft tokens unset: {d_draft} assumed")
    return SpecSide(algo, steps, topk, draft if topk > 1 else steps + 1, notes)


def measured_accept_length(ctx: ImpactContext, side: str) -> float | None:
    metrics = side_metrics(ctx, side)
    for name in ACCEPT_KEYS:
        v = as_float(metrics.get(name))
        if v is not None and v >= 1.0:
            return v
    return None
