"""`feature_toggle`: radix cache, overlap schedule, schedule policy and similar scheduler switches."""
from __future__ import annotations

from typing import Any

from .base import (AGGREGATE, LOW, MEDIUM, SINGLE, Estimate, ImpactContext, as_bool, concurrency_of, param,
                   show, unknown_estimate)

# SGLang v0.4 release notes: the zero-overhead (overlap) batch scheduler gave ~1.1× throughput.
# Turning it off therefore costs ≈ 1/1.1. Prior, low confidence; smaller when GPU time dominates.
OVERLAP_SPEEDUP = 1.1


def feature_toggle(key: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                   params: dict) -> Estimate:
    c = concurrency_of(ctx)
    change = f"{key} {show(baseline_value)} → {show(current_value)}"
    if key == "disable_overlap_schedule":
        b, cv = as_bool(baseline_value), as_bool(current_value)
        if b is None or cv is None:
            return unknown_estimate(f"{change}: not a boolean")
        if b == cv:
            return Estimate(1.0, MEDIUM, f"{change}: overlap schedule unchanged")
        s = param(params, "overlap_speedup", OVERLAP_SPEEDUP)
        ratio = 1.0 / s if cv else s
        return Estimate(ratio, LOW, f"overlap scheduler {'off' if cv else 'on'}: CPU batch scheduling "
                        f"{'no longer' if cv else 'now'} hidden behind GPU work; prior ×{s:g} from SGLang's "
                        f"zero-overhead scheduler ⇒ ×{ratio:.2f}")
    if key == "disable_radix_cache":
        if c == 1:
            return Estimate(1.0, MEDIUM, f"{change}: decode speed of one stream is unchanged; prompts sharing a "
                            f"prefix are prefilled again (time to first token up)", SINGLE)
        return unknown_estimate(f"{change}: prefix reuse across requests changes; the effect depends on how much "
                                f"prompts share (chat history, system prompts)", AGGREGATE)
    if key == "schedule_policy":
        if c == 1:
            return Estimate(1.0, MEDIUM, f"{change}: with one request there is nothing to reorder", SINGLE)
        return unknown_estimate(f"{change}: request order changes prefix-cache hits and fairness at "
                                f"concurrency {c}; no sound number", AGGREGATE)
    return unknown_estimate(f"{change}: a scheduler feature changed; no sound number")
