"""`parallelism`: parallel.tensor, .data, .pipeline, .expert, .dp_attention / .attention_data (and
engine fields with no concept, such as SGLang's moe_a2a_backend: "no sound number").

No sound general number: it depends on the interconnect (NVLink vs PCIe), the model's size and
whether it still fits. For a tensor-parallel change at low concurrency we give a rough prior:
decode is memory-bound, each GPU reads 1/tp of the weights, but all-reduces eat part of the gain:
per-stream speed ∝ tp^TP_EXPONENT (tp 2 → 1 ⇒ ×0.66, inside the 0.5-0.7 seen on PCIe boxes).
"""
from __future__ import annotations

from typing import Any

from . import roofline
from .base import (
    AGGREGATE,
    LOW,
    MEDIUM,
    SINGLE,
    STABILITY,
    Estimate,
    ImpactContext,
    as_int,
    concurrency_of,
    is_runtime,
    param,
    show,
    side_runtime,
    unknown_estimate,
)

TP_EXPONENT = 0.6  # rough prior, low confidence

TENSOR, DATA, PIPELINE, EXPERT = "parallel.tensor", "parallel.data", "parallel.pipeline", "parallel.expert"
EXPERT_ENABLED = "parallel.expert_enabled"
DP_ATTENTION = ("parallel.dp_attention", "parallel.attention_data")


def _int(ctx: ImpactContext, side: str, name: str, value: Any) -> int | None:
    if is_runtime(value, name, side_runtime(ctx, side)):
        return None
    return as_int(value)


def parallelism(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                params: dict) -> Estimate:
    c = concurrency_of(ctx)
    change = f"{name} {show(baseline_value)} → {show(current_value)}"
    gpus = as_int(ctx.gpus)
    if name == TENSOR:
        tb, tc = _int(ctx, "baseline", name, baseline_value), _int(ctx, "current", name, current_value)
        if tb is None or tc is None or tb < 1 or tc < 1:
            return unknown_estimate(f"{change}: tensor parallelism unknown on one side")
        if gpus is not None and tc > gpus:
            return unknown_estimate(f"{change}: needs {tc} GPUs but the host has {gpus}: the server will not start",
                                    STABILITY)
        if tc == tb:
            return Estimate(1.0, MEDIUM, f"{change}: same tensor parallelism")
        physical = _tensor_physical(ctx, params, tb, tc, c, change)
        if physical is not None:
            return physical
        exp = param(params, "tp_exponent", TP_EXPONENT)
        ratio = (tc / tb) ** exp
        fit = " (and the weights must still fit in fewer GPUs)" if tc < tb else ""
        if c > 1:
            return unknown_estimate(f"{change}: per-token latency scales roughly ×{ratio:.2f} (rough prior "
                                    f"(tp ratio)^{exp:g}) but aggregate throughput at concurrency {c} also depends "
                                    f"on the KV pool per GPU{fit}", AGGREGATE)
        return Estimate(ratio, LOW, f"{change}: each GPU reads 1/tp of the weights, all-reduces eat part of the gain; "
                        f"rough prior (tp ratio)^{exp:g} ⇒ ×{ratio:.2f}{fit}", SINGLE)
    if name == DATA:
        db, dc = _int(ctx, "baseline", name, baseline_value), _int(ctx, "current", name, current_value)
        if c == 1 and db is not None and dc is not None:
            return Estimate(1.0, MEDIUM, f"{change}: one stream runs on one replica, its speed is unchanged "
                            f"(more replicas help only at concurrency above 1)", SINGLE)
        return unknown_estimate(f"{change}: more data-parallel replicas raise aggregate throughput at high "
                                f"concurrency (at most ×{dc}/{db}) but each needs its own GPUs and KV pool"
                                if db and dc else f"{change}: data parallelism unknown on one side", AGGREGATE)
    if name in DP_ATTENTION:
        return _layout_switch(f"{change}: DP attention shards the KV cache by request; it raises aggregate "
                              f"throughput of large MoE models at high concurrency and usually slows a single stream",
                              AGGREGATE if c > 1 else SINGLE)
    if name == PIPELINE:
        return unknown_estimate(f"{change}: pipeline parallelism adds per-stage latency for one stream and "
                                f"helps only with many requests in flight; no sound number")
    if name in (EXPERT, EXPERT_ENABLED):
        return _layout_switch(f"{change}: expert parallelism changes MoE all-to-all traffic; which way depends on "
                              f"the interconnect and on how many requests share a step",
                              AGGREGATE if c > 1 else SINGLE)
    return unknown_estimate(f"{change}: parallel layout changed; no sound number")


def _layout_switch(text: str, dim: str) -> Estimate:
    """An expert-parallel or DP-attention switch on the same GPUs: like a kernel switch, ×1 within the public
    spread of such switches (calibration.KERNEL_SWITCH_SPREAD; issue 35), direction unknown."""
    from .kernels import kernel_switch
    est = kernel_switch(text, None)
    est.dimension = dim
    return est


def _tensor_physical(ctx: ImpactContext, params: dict, tb: int, tc: int, c: int, change: str) -> Estimate | None:
    """tp change with model facts: the roofline step at each tp (weights, FLOPs and KV split tp ways;
    two all-reduces per layer), and whether the weights fit the GPU's memory."""
    m = roofline.model_of(ctx)
    if m is None:
        return None
    hw_b = roofline.hardware_for(ctx, tp=tb)
    hw_c = roofline.hardware_for(ctx, tp=tc)
    pp = roofline.side_int(ctx, "current", PIPELINE)
    need = roofline.weights_per_gpu_gb(m, tc, pp)
    if hw_c.known and need > hw_c.gpu.memory_gb:
        return unknown_estimate(f"{change}: {m.summary()} needs {need:.0f} GB of weights per GPU at tp {tc}"
                                f"{f' × pp {pp}' if pp > 1 else ''}, more than the {hw_c.gpu.memory_gb:g} GB of a "
                                f"{hw_c.gpu.name}: the server will not start", STABILITY)
    batch = roofline.decode_batch(ctx)
    t_b = roofline.forward_time(m, hw_b, batch, 1, params=params)
    t_c = roofline.forward_time(m, hw_c, batch, 1, params=params)
    ratio = t_b.total / t_c.total
    link = hw_c.link_words()
    lead = (f"each GPU now reads 1/{tc} instead of 1/{tb} of the weights ({t_b.weights * 1e3:.1f} → "
            f"{t_c.weights * 1e3:.1f} ms per step) while all-reduces over {link} cost {t_b.allreduce * 1e3:.1f} → "
            f"{t_c.allreduce * 1e3:.1f} ms, on {roofline.hardware_words(m, hw_c)} at batch {batch}")
    details = (f"Details: roofline at tp {tb}: {t_b.describe()}; at tp {tc}: {t_c.describe()}; weights "
               f"{roofline.weights_per_gpu_gb(m, tb, pp):.1f} → {need:.1f} GB per GPU")
    if c > 1:
        return unknown_estimate(f"{lead}: a step takes ×{1 / ratio:.2f} the time, but aggregate throughput at "
                                f"concurrency {c} also depends on the KV pool per GPU. {details}", AGGREGATE)
    return Estimate(ratio, LOW, f"{lead} ⇒ ×{ratio:.2f}. {details}", SINGLE)
