"""`kv_capacity`: kv.memory_fraction, kv.context_length, prefill.chunk_size, kv.max_total_tokens,
kv.page_size, batch.max_prefill_tokens, cuda_graph.max_batch (and engine fields with no concept, such
as SGLang's mamba_* state-cache settings). These change how many and how long requests fit, not one
stream's decode speed, except CUDA-graph batch limits below the running batch (decode falls back to
eager mode).
"""
from __future__ import annotations

from typing import Any

from . import roofline
from .base import (
    AGGREGATE,
    CAPACITY,
    HIGH,
    LOW,
    MEDIUM,
    STABILITY,
    Estimate,
    ImpactContext,
    as_float,
    as_int,
    concurrency_of,
    concurrency_stated,
    engine_label,
    is_runtime,
    param,
    show,
    show_side,
    side_runtime,
    single_stream_known,
    unknown_estimate,
)
from .workload import prefill_chunk_estimate

# Concurrency from which a smaller KV pool may limit the running batch (below: few requests fit
# in any pool that loads at all). A documented judgement, not a measurement.
POOL_PRESSURE_CONCURRENCY = 8
# Decode step without CUDA graphs vs with, for batches above cuda_graph_max_bs: launch overhead
# of eager PyTorch at decode batch sizes; prior, low confidence.
EAGER_DECODE_RATIO = 0.85

GRAPH_LIMIT = "cuda_graph.max_batch"
CONTEXT_LENGTH = "kv.context_length"
PREFILL_CHUNK = "prefill.chunk_size"
MEMORY_FRACTION = "kv.memory_fraction"
PREFILL_BUDGETS = (PREFILL_CHUNK, "batch.max_prefill_tokens")


def _prefill_budget(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext, change: str,
                    params: dict) -> Estimate:
    """Chunked-prefill size / prefill token budget. A prompt of P tokens is prefilled in ceil(P / chunk)
    forwards, each re-reading the weights and paying the per-step costs: a larger budget prefills long
    prompts in fewer forwards (never slower for a lone stream), decode speed is unchanged. How much
    tok/s moves depends on the prompt length, which the units do not give (measured ×1.41 on
    13.6K-token prompts for 8K → 16K, nothing on prompts below both budgets): no ratio."""
    b = None if is_runtime(baseline_value, name, side_runtime(ctx, "baseline")) else as_int(baseline_value)
    cur = None if is_runtime(current_value, name, side_runtime(ctx, "current")) else as_int(current_value)
    if b is not None and cur is not None and b > 0 and cur > 0 and b != cur:
        stated = prefill_chunk_estimate(change, b, cur, ctx, params)
        if stated is not None:
            return stated
        lo, hi = min(b, cur), max(b, cur)
        what = (f"prompts longer than {lo} tokens are now prefilled in {'fewer' if cur > b else 'more'} forward "
                f"passes (a {2 * lo}-token prompt: {2 if cur > b else 1} → {1 if cur > b else 2} chunk"
                f"{'s' if cur < b else ''} of up to {hi if cur > b else lo} tokens), each of which re-reads the "
                f"weights: time to first token {'down' if cur > b else 'up'} for long prompts, decode speed unchanged")
    else:
        what = "long prompts are prefilled in chunks of another size (time to first token); decode speed unchanged"
    return unknown_estimate(f"{change}: {what}; how much throughput moves depends on the prompt lengths "
                            f"(nothing below both budgets; prefill-bound long-prompt workloads gain or lose the "
                            f"most): not quantified — state the prompt length (--workload-prompt-tokens N)", CAPACITY)


def _graph_limit(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext, params: dict) -> Estimate:
    c = concurrency_of(ctx)
    b_base = None if is_runtime(baseline_value, name, side_runtime(ctx, "baseline")) else as_int(baseline_value)
    b_cur = None if is_runtime(current_value, name, side_runtime(ctx, "current")) else as_int(current_value)
    if (b_base is None or b_cur is None or not concurrency_stated(ctx)) and not single_stream_known(ctx):
        unsettled = _graph_limit_unsettled(ctx, params, b_base, b_cur, baseline_value, current_value)
        if unsettled is not None:
            return unsettled
    if b_base is None or b_cur is None:
        if single_stream_known(ctx):
            return Estimate(1.0, MEDIUM, f"CUDA-graph batch limit {show(baseline_value)} → {show(current_value)}: "
                            f"{engine_label(ctx)} always captures batch 1, so one stream keeps its graphs")
        batches = c if single_stream_known(ctx) or c > 1 else "the benchmark runs"
        return unknown_estimate(f"CUDA-graph batch limit {show(baseline_value)} → {show(current_value)}: "
                                f"unknown whether batches of {batches} "
                                f"still run with graphs" + ("" if concurrency_stated(ctx) else
                                                            " (concurrency not stated: pass --concurrency N)"))
    covered_base, covered_cur = c <= b_base, c <= b_cur
    if covered_base == covered_cur:
        return Estimate(1.0, HIGH, f"CUDA graphs {'cover' if covered_cur else 'miss'} batch {c} on both sides "
                        f"(limit {b_base} → {b_cur})")
    effect = roofline.graph_effect(ctx, c, params) if "eager_ratio" not in (params or {}) else None
    if effect is not None:
        graphs, eager, m, hw = effect
        ratio = graphs.total / eager.total if covered_base else eager.total / graphs.total
        launches = "launches every kernel from Python again" if covered_base else "replays captured graphs"
        return Estimate(ratio, LOW, f"batches of {c} {'no longer fit' if covered_base else 'now fit'} the CUDA-graph "
                        f"limit ({b_base} → {b_cur}), so decode {launches}: "
                        f"{eager.eager * 1e3:.1f} ms of launches on a step of {graphs.total * 1e3:.1f} ms of "
                        f"{roofline.hardware_words(m, hw)} ⇒ ×{ratio:.2f}. Details: with graphs {graphs.describe()}; "
                        f"eager {eager.describe()}", AGGREGATE,
                        roofline.graph_interval(ctx, c, params, not covered_base))
    pen = param(params, "eager_ratio", EAGER_DECODE_RATIO)
    ratio = pen if covered_base else 1.0 / pen
    return Estimate(ratio, LOW, f"CUDA-graph limit {b_base} → {b_cur} at batch {c}: decode "
                    f"{'loses' if covered_base else 'gains'} CUDA graphs; eager decode prior ×{pen:g} ⇒ ×{ratio:.2f}",
                    AGGREGATE)


def _graph_limit_unsettled(ctx: ImpactContext, params: dict, b_base: int | None, b_cur: int | None,
                           baseline_value: Any, current_value: Any) -> Estimate | None:
    """A CUDA-graph limit change where the running batch or one side's limit is unknown (an open-loop or
    offline benchmark; a limit the engine computes at start-up), with model facts: batches between the two
    limits gain (or lose) graphs, the others keep them. The interval holds ×1 (the batch outside that
    range) and the graphs ratio at the highest batch it may reach (graph_interval's ends); the point is
    that ratio at the fitted launch overhead. None without facts or a known direction of the change."""
    known = [v for v in (b_base, b_cur) if v is not None]
    if not known or (b_base is not None and b_cur is not None and b_base == b_cur):
        return None
    if b_base is not None and b_cur is not None:
        gaining = b_cur > b_base
    elif b_cur is not None:
        gaining = True  # an explicit limit replaces the engine's computed one: batches up to it get graphs
    else:
        gaining = False
    top = max(known)
    if concurrency_stated(ctx):
        top = min(top, concurrency_of(ctx))
    effect = roofline.graph_effect(ctx, top, params)
    iv = roofline.graph_interval(ctx, top, params, gaining)
    if effect is None or iv is None:
        return None
    graphs, eager, m, hw = effect
    point = eager.total / graphs.total if gaining else graphs.total / eager.total
    lo, hi = min(iv[0], 1.0, point), max(iv[1], 1.0, point)
    unknown_side = ("the baseline's limit is computed at start-up" if b_base is None else
                    "the current limit is computed at start-up" if b_cur is None else "no concurrency stated")
    return Estimate(point, LOW, f"CUDA-graph batch limit {show_side(ctx, 'baseline', GRAPH_LIMIT, baseline_value)} → "
                    f"{show_side(ctx, 'current', GRAPH_LIMIT, current_value)} ({unknown_side}): batches up to {top} "
                    f"{'now replay graphs' if gaining else 'may lose their graphs'} where they "
                    f"{'ran' if gaining else 'replayed them'} eager before, others are unchanged: ×{lo:.2f}–{hi:.2f}, "
                    f"most likely ×{point:.2f} if the running batch is near {top} ({eager.eager * 1e3:.1f} ms of "
                    f"launches on a step of {graphs.total * 1e3:.1f} ms of {roofline.hardware_words(m, hw)}); pass "
                    f"--concurrency N and the server's limit to settle it", AGGREGATE, (lo, hi))


def kv_capacity(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                params: dict) -> Estimate:
    if name == GRAPH_LIMIT:
        return _graph_limit(name, baseline_value, current_value, ctx, params)
    c = concurrency_of(ctx)
    change = (f"{name} {show_side(ctx, 'baseline', name, baseline_value)} → "
              f"{show_side(ctx, 'current', name, current_value)}")
    extra = ""
    if name == CONTEXT_LENGTH:
        extra = "; requests longer than the smaller limit are rejected"
    threshold = int(param(params, "pool_pressure_concurrency", POOL_PRESSURE_CONCURRENCY))
    if name == MEMORY_FRACTION and c >= threshold:
        physical = _memory_fraction_physical(ctx, params, baseline_value, current_value, c, change)
        if physical is not None:
            return physical
    if name in PREFILL_BUDGETS:
        return _prefill_budget(name, baseline_value, current_value, ctx, change, params)
    if c < threshold and (c > 1 or single_stream_known(ctx)):
        return Estimate(1.0, HIGH if c == 1 else MEDIUM,
                        f"{change}: this affects how many/how long requests fit, not one stream's speed "
                        f"(concurrency {c}){extra}", CAPACITY)
    return unknown_estimate(f"{change}: at concurrency {c} the KV pool may limit the running batch; the effect "
                            f"shows in max_running_requests and token usage, not predictable from the flag{extra}",
                            CAPACITY)


def _memory_fraction_physical(ctx: ImpactContext, params: dict, baseline_value: Any, current_value: Any, c: int,
                              change: str) -> Estimate | None:
    """kv.memory_fraction with model and GPU facts: the KV pool left after the weights (fraction ×
    GPU memory − weights per GPU), the requests of CONTEXT_TOKENS it holds, and the roofline step at
    the batch that fits. None when a fraction, the model or the GPU is unknown."""
    from . import calibration as cal
    fb = None if is_runtime(baseline_value) else as_float(baseline_value)
    fc = None if is_runtime(current_value) else as_float(current_value)
    m = roofline.model_of(ctx)
    hw = roofline.hardware_for(ctx)
    if fb is None or fc is None or not (0 < fb <= 1 and 0 < fc <= 1) or m is None or not hw.known:
        return None
    tp = hw.tp
    pp = roofline.side_int(ctx, "current", "parallel.pipeline")
    weights = roofline.weights_per_gpu_gb(m, tp, pp) * 1e9
    kv_split = 1 if m.attention == "mla" else min(tp, m.kv_heads or tp)
    per_request = (cal.CONTEXT_TOKENS * (m.kv_bytes_per_token or 0) / kv_split / pp
                   + (m.state_bytes_per_request or 0) / tp / pp)
    if per_request <= 0:
        return None
    fits = {}
    for side, frac in (("baseline", fb), ("current", fc)):
        pool = frac * hw.gpu.memory_gb * 1e9 - weights
        if pool <= 0:
            return unknown_estimate(f"{change}: {frac:g} × {hw.gpu.memory_gb:g} GB leaves no room beside "
                                    f"{weights / 1e9:.1f} GB of weights per GPU ({m.summary()}): the {side} server "
                                    f"cannot allocate a KV cache", STABILITY)
        fits[side] = int(pool // per_request)
    b_base, b_cur = max(1, min(c, fits["baseline"])), max(1, min(c, fits["current"]))
    how = (f"{fb:g} → {fc:g} of {hw.gpu.memory_gb:g} GB minus {weights / 1e9:.1f} GB of weights per GPU holds "
           f"~{fits['baseline']} → ~{fits['current']} requests of {cal.CONTEXT_TOKENS:.0f} tokens")
    if b_base == b_cur:
        return Estimate(1.0, LOW, f"{change}: {how}; at concurrency {c} both fit {b_cur} at once: no effect on "
                        f"throughput", CAPACITY)
    t_b = roofline.forward_time(m, hw, b_base, 1, params=params)
    t_c = roofline.forward_time(m, hw, b_cur, 1, params=params)
    ratio = (b_cur / t_c.total) / (b_base / t_b.total)
    return Estimate(ratio, LOW, f"{change}: {how}, so at concurrency {c} the server decodes {b_base} → {b_cur} "
                    f"requests at once; a step takes {t_b.total * 1e3:.1f} → {t_c.total * 1e3:.1f} ms on "
                    f"{roofline.hardware_words(m, hw)} ⇒ ×{ratio:.2f} (request length assumed; the engine's own "
                    f"reserves for activations and graphs are not modelled). Details: roofline at batch {b_base}: "
                    f"{t_b.describe()}; at batch {b_cur}: {t_c.describe()}", AGGREGATE)
