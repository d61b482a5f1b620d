"""`feature_toggle`: scheduler.overlap, kv.prefix_cache, scheduler.policy, cuda_graph.enabled and
similar switches.

Concept booleans mean "feature on" whatever the engine's flag is called: SGLang's
`--disable-overlap-schedule` arrives as `scheduler.overlap` False, a vLLM-style enable flag as the
same; a model never sees the engine's polarity.
"""
from __future__ import annotations

import math
from typing import Any

from ..concepts import is_concept
from . import calibration as cal, roofline
from .base import (
    AGGREGATE,
    LOW,
    MEDIUM,
    SINGLE,
    Estimate,
    ImpactContext,
    concurrency_of,
    concurrency_stated,
    on_off,
    param,
    show,
    single_stream_known,
    unknown_estimate,
)
from .workload import prefix_cache_estimate

# SGLang v0.4 release notes: the zero-overhead (overlap) batch scheduler gave ~1.1× throughput.
# Turning it off therefore costs ≈ 1/1.1. Prior, low confidence; smaller when GPU time dominates.
OVERLAP_SPEEDUP = 1.1

OVERLAP, PREFIX_CACHE, POLICY, CUDA_GRAPHS = ("scheduler.overlap", "kv.prefix_cache", "scheduler.policy",
                                              "cuda_graph.enabled")
# SGLang's decode-side radix cache in prefill/decode disaggregation (no concept): the decode worker reuses
# the KV of shared prefixes instead of receiving it again.
DECODE_RADIX = "disaggregation_decode_enable_radix_cache"


def _flag(value: Any) -> bool | None:
    """A concept boolean (True = feature on); None when the value is not a clear on/off."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("1", "true", "yes", "on"):
            return True
        if v in ("0", "false", "no", "off"):
            return False
    return None


def _change(name: str, baseline_value: Any, current_value: Any) -> str:
    b, c = _flag(baseline_value), _flag(current_value)
    if is_concept(name) and b is not None and c is not None:
        return f"{name} {on_off(b)} → {on_off(c)}"
    return f"{name} {show(baseline_value)} → {show(current_value)}"


def feature_toggle(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                   params: dict) -> Estimate:
    c = concurrency_of(ctx)
    change = _change(name, baseline_value, current_value)
    if name == OVERLAP:
        b, cv = _flag(baseline_value), _flag(current_value)
        if b is None or cv is None:
            return unknown_estimate(f"{change}: not a boolean")
        if b == cv:
            return Estimate(1.0, MEDIUM, f"{change}: overlap schedule unchanged")
        s = param(params, "overlap_speedup", OVERLAP_SPEEDUP)
        ratio = s if cv else 1.0 / s
        return Estimate(ratio, LOW, f"overlap scheduler {'on' if cv else 'off'}: CPU batch scheduling "
                        f"{'now' if cv else 'no longer'} hidden behind GPU work; prior ×{s:g} (measured for "
                        f"SGLang v0.4's zero-overhead scheduler) ⇒ ×{ratio:.2f}")
    if name in (PREFIX_CACHE, DECODE_RADIX):
        now_on = _flag(current_value)
        if single_stream_known(ctx) and name == PREFIX_CACHE:
            how = ("prompts sharing a prefix now skip its prefill (time to first token down)" if now_on else
                   "prompts sharing a prefix are prefilled again (time to first token up)")
            return Estimate(1.0, MEDIUM, f"{change}: decode speed of one stream is unchanged; {how}", SINGLE)
        if now_on is not None and now_on != _flag(baseline_value):
            stated = prefix_cache_estimate(change, now_on, ctx)
            if stated is not None:
                return stated
        unstated = _prefix_unstated(change, now_on, _flag(baseline_value))
        if unstated is not None:
            return unstated
        return unknown_estimate(f"{change}: prefix reuse across requests changes; the effect depends on how much "
                                f"prompts share (chat history, system prompts): not quantified — state the shared "
                                f"share of prompt tokens (--workload-prefix-share) or measure the prefix-cache hit "
                                f"rate", AGGREGATE)
    if name == POLICY:
        if single_stream_known(ctx):
            return Estimate(1.0, MEDIUM, f"{change}: with one request there is nothing to reorder", SINGLE)
        return unknown_estimate(f"{change}: request order changes prefix-cache hits and fairness at "
                                f"concurrency {c}; no sound number", AGGREGATE)
    if name == CUDA_GRAPHS:
        now_on = _flag(current_value)
        how = ("decode steps replay captured graphs instead of launching each kernel" if now_on else
               "every decode step launches each kernel from Python again")
        physical = _graphs_physical(ctx, params, _flag(baseline_value), now_on, how)
        if physical is not None:
            return physical
        prior = _graphs_prior(ctx, _flag(baseline_value), now_on, how, change)
        if prior is not None:
            return prior
        return unknown_estimate(f"{change}: {how}; the launch overhead weighs most on small batches and small "
                                f"models; no sound number")
    return unknown_estimate(f"{change}: a scheduler feature changed; no sound number")


def _prefix_unstated(change: str, now_on: bool | None, before: bool | None) -> Estimate | None:
    """Prefix caching switched with no stated share of reusable prompt tokens (issue 35): the direction is
    bounded (with nothing to reuse it costs only its bookkeeping, PREFIX_CACHE_OVERHEAD) and the size by the
    public spread (PREFIX_UNSTATED_GAIN); the point is the geometric middle of the two ends."""
    if now_on is None or before is None or now_on == before:
        return None
    lo, hi = math.exp(-cal.PREFIX_CACHE_OVERHEAD), cal.PREFIX_UNSTATED_GAIN
    if not now_on:
        lo, hi = 1.0 / hi, 1.0 / lo
    point = math.sqrt(lo * hi)
    way, nothing, most = ("faster", lo, hi) if now_on else ("slower", hi, lo)
    return Estimate(point, LOW, f"{change}: how much {way} depends on how much prompts share (chat history, "
                    f"system prompts): ×{nothing:.2f} with nothing shared, up to ×{most:.2f} (as far as public "
                    f"before/after runs moved), most likely ×{point:.2f} — state the shared share of prompt tokens "
                    f"(--workload-prefix-share) or measure the prefix-cache hit rate to narrow it", AGGREGATE, (lo, hi))


def _graphs_physical(ctx: ImpactContext, params: dict, before: bool | None, now: bool | None,
                     how: str) -> Estimate | None:
    """CUDA graphs on ↔ off with model facts: the eager launch overhead against this model's step
    (roofline.py) at the running batch; None without facts or a clear on/off."""
    if before is None or now is None or before == now:
        return None
    batch = roofline.decode_batch(ctx)
    effect = roofline.graph_effect(ctx, batch, params)
    if effect is None:
        return None
    graphs, eager, m, hw = effect
    ratio = eager.total / graphs.total if now else graphs.total / eager.total
    where = roofline.hardware_words(m, hw)
    bound = "" if concurrency_stated(ctx) else " (no concurrency stated: batch 1, the bound of the effect)"
    lead = (f"{how}: {eager.eager * 1e3:.1f} ms of launches on a decode step of {graphs.total * 1e3:.1f} ms of "
            f"{where} at batch {batch}{bound} (one step: {m.layers} layers)")
    interval = roofline.graph_interval(ctx, batch, params, bool(now))
    return Estimate(ratio, LOW, f"{lead} ⇒ ×{ratio:.2f} (the launch overhead is fitted, larger on small models "
                    f"and batches, and some architectures run slower with partial graphs: re-measure). Details: "
                    f"roofline with graphs {graphs.describe()}; eager {eager.describe()} (eager launch overhead "
                    f"{eager.eager / max(m.layers or 1, 1) * 1e6:.0f} µs per layer)",
                    AGGREGATE if concurrency_of(ctx) > 1 else SINGLE, interval)


def _graphs_prior(ctx: ImpactContext, before: bool | None, now: bool | None, how: str, change: str) -> Estimate | None:
    """CUDA graphs on ↔ off without model facts: the eager prior (capacity.EAGER_DECODE_RATIO) as the
    point, GRAPH_PRIOR_RANGE as the interval (direction unknown: partial graphs run slower than eager on
    some architectures)."""
    if before is None or now is None or before == now:
        return None
    from .capacity import EAGER_DECODE_RATIO
    lo, hi = cal.GRAPH_PRIOR_RANGE
    point = 1.0 / EAGER_DECODE_RATIO
    if not now:
        lo, hi, point = 1.0 / hi, 1.0 / lo, EAGER_DECODE_RATIO
    return Estimate(point, LOW, f"{change}: {how}; without the model's config.json the launch overhead's weight is "
                    f"a prior: ×{lo:.2f}–{hi:.2f}, most likely ×{point:.2f} (partial graphs run slower than eager "
                    f"on some architectures; a small model at small batches gains more): --model-config narrows it",
                    AGGREGATE if concurrency_of(ctx) > 1 else SINGLE, (lo, hi))
