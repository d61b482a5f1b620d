"""Changes whose effect rests on the workload: prefix caching (by the share of prompt tokens a
prefix cache can reuse) and the prefill chunk (by the prompt length).

The workload is what an operator states (`compare --workload-prefix-share`, `--workload-prompt-tokens`,
passed on as the metrics ``prefix_share`` / ``prompt_tokens``) or what the server measured (a prefix
cache hit rate). Without it these changes stay "not quantified", with what to measure. The ranges are
physics bounds (the share of server time spent in prefill is unknown: PREFILL_TIME_SHARE), so the
intervals are wide where the workload is only half known; constants in calibration.py, docs/impact.md.
"""
from __future__ import annotations

import math

from . import calibration as cal, roofline
from .base import AGGREGATE, LOW, Estimate, ImpactContext, prompt_tokens, single_stream_known, stated_metric

PREFIX_SHARE_KEYS = ("prefix_share",)
HIT_RATE_KEYS = ("prefix_cache_hit_rate", "cache_hit_rate")


def reusable_share(ctx: ImpactContext) -> tuple[float, str] | None:
    """The share of prompt tokens a prefix cache can skip: a measured hit rate (0-1, or a percentage)
    first, else the stated shared-prefix share."""
    hit = stated_metric(ctx, HIT_RATE_KEYS, 0.0, 100.0)
    if hit is not None:
        v = hit[0] / 100.0 if hit[0] > 1.0 else hit[0]
        return v, f"measured prefix-cache hit rate {v:.0%}"
    share = stated_metric(ctx, PREFIX_SHARE_KEYS, 0.0, 1.0)
    if share is not None:
        return share[0], f"stated shared-prefix share {share[0]:.0%}"
    return None


def prefix_cache_estimate(change: str, now_on: bool, ctx: ImpactContext) -> Estimate | None:
    """Prefix caching on/off at a stated or measured reusable share h: prefill work falls to (1 − h);
    if prefill takes a share f of the server's time, throughput moves by 1 ÷ (1 − f·h), f anywhere in
    PREFILL_TIME_SHARE; the cache's own bookkeeping costs up to PREFIX_CACHE_OVERHEAD. None when no
    share is known."""
    known = reusable_share(ctx)
    if known is None:
        return None
    h, how = known
    f_lo, f_hi = cal.PREFILL_TIME_SHARE
    overhead = math.exp(-cal.PREFIX_CACHE_OVERHEAD)
    gain = [1.0 / (1.0 - f * h) for f in (f_lo, math.sqrt(f_lo * f_hi), f_hi)]
    lo, point, hi = gain[0] * overhead, gain[1] * math.exp(-cal.PREFIX_CACHE_OVERHEAD / 2), gain[2]
    if h <= 0.0:
        lo, point, hi = overhead, math.exp(-cal.PREFIX_CACHE_OVERHEAD / 2), 1.0
    if not now_on:
        lo, point, hi = 1.0 / hi, 1.0 / point, 1.0 / lo
    what = (f"{how}: {'that share of prefill is now skipped' if now_on else 'that share is prefilled again'}; "
            f"with prefill taking {f_lo:.0%}–{f_hi:.0%} of the server's time")
    if h <= 0.0:
        what = f"{how}: nothing to reuse, only the cache's bookkeeping {'added' if now_on else 'saved'}"
    return Estimate(point, LOW, f"{change}: {what} ⇒ ×{lo:.2f}–{hi:.2f}, most likely ×{point:.2f} (measure the "
                    f"prefix-cache hit rate and the prefill share of server time to narrow it)", AGGREGATE, (lo, hi))


def prefill_chunk_estimate(change: str, before: int, after: int, ctx: ImpactContext, params: dict) -> Estimate | None:
    """A prefill budget `before` → `after` on prompts of a stated length P: ceil(P/before) →
    ceil(P/after) forwards. Each forward pays a fixed part (weights read once, per-step overheads) and
    a part per token: the prefill speeds up by between ×1 (all per-token) and the ratio of forward
    counts (all fixed); with model and GPU facts the roofline splits the two (the point), else the
    point is the middle of that range. A larger chunk also stalls running decodes longer
    (CHUNK_DECODE_STALL, the low end). None without a prompt length."""
    p = prompt_tokens(ctx)
    if p is None or before <= 0 or after <= 0:
        return None
    n_b, n_c = math.ceil(p / before), math.ceil(p / after)
    if n_b == n_c:
        return Estimate(1.0, LOW, f"{change}: a {p}-token prompt is prefilled in {n_b} forward pass"
                        f"{'es' if n_b != 1 else ''} either way: no change", AGGREGATE, (1.0, 1.0))
    bound = n_b / n_c  # > 1 when fewer forwards
    point = math.sqrt(bound)
    how = "the middle of that range (model facts would split a forward's fixed and per-token cost)"
    m = roofline.model_of(ctx)
    if m is not None:
        hw = roofline.hardware_for(ctx)

        def prefill(chunk: int, n: int) -> float:
            sizes = [chunk] * (n - 1) + [p - chunk * (n - 1)]
            return sum(roofline.forward_time(m, hw, 1, s, params=params).total for s in sizes)

        point = prefill(before, n_b) / prefill(after, n_c)
        how = f"the roofline of {roofline.hardware_words(m, hw)}"
    # one stream has no other decodes to stall behind a chunk
    stall = 1.0 if single_stream_known(ctx) else math.exp(-cal.CHUNK_DECODE_STALL)
    lo, hi = (stall, bound) if bound > 1 else (bound, 1.0 / stall)
    point = min(max(point, lo), hi)
    waits = "" if stall == 1.0 else f", running decodes wait {'longer' if after > before else 'less'} behind each chunk"
    return Estimate(point, LOW, f"{change}: a {p}-token prompt is prefilled in {n_b} → {n_c} forward passes; "
                    f"prefill-bound throughput moves by between ×1 (cost per token) and ×{bound:.2f} (cost per "
                    f"forward){waits}: ×{lo:.2f}–{hi:.2f}, most likely ×{point:.2f} by {how}", AGGREGATE, (lo, hi))
