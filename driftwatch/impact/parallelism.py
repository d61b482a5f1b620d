"""`parallelism`: parallel.tensor, .data, .pipeline, .expert, .dp_attention / .attention_data (and
engine fields with no concept, such as SGLang's moe_a2a_backend: "no sound number").

No sound general number: it depends on the interconnect (NVLink vs PCIe), the model's size and
whether it still fits. For a tensor-parallel change at low concurrency we give a rough prior:
decode is memory-bound, each GPU reads 1/tp of the weights, but all-reduces eat part of the gain:
per-stream speed ∝ tp^TP_EXPONENT (tp 2 → 1 ⇒ ×0.66, inside the 0.5-0.7 seen on PCIe boxes).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from . import calibration as cal, roofline
from .base import (
    AGGREGATE,
    HIGH,
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
NODES = roofline.NODES  # parallel.nodes: SGLang's and vLLM ≥ 0.12's --nnodes
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
        layout = roofline.layout_of(ctx)
        per_node = layout.gpus_per_node if layout.nodes > 1 else tc
        if gpus is not None and per_node is not None and per_node > gpus:
            need = f"{per_node} GPUs on each of {layout.nodes} nodes" if layout.nodes > 1 else f"{tc} GPUs"
            return unknown_estimate(f"{change}: needs {need} but the host has {gpus}: the server will not start",
                                    STABILITY)
        if tc == tb:
            return Estimate(1.0, MEDIUM, f"{change}: same tensor parallelism")
        physical = _tensor_physical(ctx, params, tb, tc, c, change)
        if physical is not None:
            return physical
        crossing = _network_words(ctx, tb, tc)
        if crossing:
            return unknown_estimate(f"{change}: {crossing}; what they cost against the smaller share of the weights "
                                    f"each GPU reads needs the model's layers and width (--model-config, or "
                                    f"`snapshot` on the host)", SINGLE if c == 1 else AGGREGATE)
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
    if name == NODES:
        return _nodes_change(ctx, params, change, c)
    if name == PIPELINE:
        tb, tc = (roofline.side_int(ctx, s, TENSOR) for s in ("baseline", "current"))
        if tb != tc and roofline.model_of(ctx) is not None:
            return Estimate(1.0, HIGH, f"{change}: counted with the tensor-parallel change (one estimate of the "
                            f"whole layout, not twice)", None, (1.0, 1.0), counted_in=TENSOR)
        if c == 1 and roofline.model_of(ctx) is not None and _network_words(ctx, tb, tc):
            return _layout_estimate(ctx, params, change, c)  # a stage boundary crosses nodes on a side
        return unknown_estimate(f"{change}: pipeline parallelism adds per-stage latency for one stream and "
                                f"helps only with many requests in flight; no sound number")
    if name in (EXPERT, EXPERT_ENABLED):
        return _layout_switch(f"{change}: expert parallelism changes MoE all-to-all traffic; which way depends on "
                              f"the interconnect and on how many requests share a step",
                              AGGREGATE if c > 1 else SINGLE)
    if name == roofline.EXECUTOR:
        return unknown_estimate(f"{change}: each GPU does the same work per step either way; what changes is where "
                                f"the workers may run (Ray can place a group larger than one node's GPUs on other "
                                f"nodes: the tensor-parallel finding prices the layout) and the start-up and "
                                f"scheduling path; no sound number for that", AGGREGATE if c > 1 else SINGLE)
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
    two all-reduces per layer, over the network where the TP group spans nodes), and whether the weights
    fit the GPU's memory. The whole layout (tp, pp, nodes) of each side is priced here, once."""
    m = roofline.model_of(ctx)
    if m is None:
        return None
    hw_b = roofline.hardware_for(ctx, "baseline", tp=tb)
    hw_c = roofline.hardware_for(ctx, tp=tc)
    pp = roofline.side_int(ctx, "current", PIPELINE)
    need = roofline.weights_per_gpu_gb(m, tc, pp)
    if hw_c.known and need > hw_c.gpu.memory_gb:
        return unknown_estimate(f"{change}: {m.summary()} needs {need:.0f} GB of weights per GPU at tp {tc}"
                                f"{f' × pp {pp}' if pp > 1 else ''}, more than the {hw_c.gpu.memory_gb:g} GB of a "
                                f"{hw_c.gpu.name}: the server will not start", STABILITY)
    unknown = hw_b.layout.unknown or hw_c.layout.unknown
    if unknown:
        return unknown_estimate(f"{change}: where the GPUs sit is unknown ({unknown}), so whether the all-reduces "
                                f"cross the network is too")
    if hw_b.tp_over_network or hw_c.tp_over_network or _sendrecv(hw_b) or _sendrecv(hw_c):
        return _layout_estimate(ctx, params, change, c, tp=(tb, tc))
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


def _sendrecv(hw: roofline.Hardware) -> int:
    return hw.layout.network_boundaries(hw.tp)


def _network_words(ctx: ImpactContext, tb: int, tc: int) -> str:
    """"TP 16 across 2 nodes of 8 GPUs: its 2 all-reduces per layer now cross the network" when a side's TP
    group spans nodes (or a pipeline boundary does); "" when neither side's does."""
    lay_b, lay_c = roofline.layout_of(ctx, "baseline"), roofline.layout_of(ctx)
    cross_b, cross_c = lay_b.tp_crosses(tb), lay_c.tp_crosses(tc)
    if cross_c:
        if cross_b:
            return f"{lay_b.words(tb)} → {lay_c.words(tc)}: the 2 all-reduces per layer still cross the network"
        before = (f" instead of {roofline.hardware_for(ctx, 'baseline', tp=tb).interconnect}" if tb > 1
                  else " (TP 1 had none)")
        return f"{lay_c.words(tc)}: its 2 all-reduces per layer now cross the network (InfiniBand/RoCE){before}"
    if cross_b:
        return f"{lay_b.words(tb)} → {lay_c.words(tc)}: the 2 all-reduces per layer no longer cross the network"
    boundaries = (lay_b.network_boundaries(tb), lay_c.network_boundaries(tc))
    if any(boundaries):
        return (f"{lay_b.words(tb)} → {lay_c.words(tc)}: {boundaries[0]} → {boundaries[1]} pipeline stage boundaries "
                f"cross the network per step")
    return ""


def _nodes_change(ctx: ImpactContext, params: dict, change: str, c: int) -> Estimate:
    """--nnodes changed. With tp or pp changed too, the tensor-parallel (or pipeline) finding prices the whole
    layout; alone (the same TP spread over more or fewer nodes) the roofline prices each side's layout at the
    running batch: the KV pool per GPU is unchanged, so the step ratio is the throughput ratio at any load."""
    tb, tc = (roofline.side_int(ctx, s, TENSOR) for s in ("baseline", "current"))
    pb, pc = (roofline.side_int(ctx, s, PIPELINE) for s in ("baseline", "current"))
    lay_b, lay_c = roofline.layout_of(ctx, "baseline"), roofline.layout_of(ctx)
    unknown = lay_b.unknown or lay_c.unknown
    if unknown:
        return unknown_estimate(f"{change}: where the GPUs sit is unknown ({unknown}), so whether the all-reduces "
                                f"cross the network is too")
    if tb != tc or pb != pc:
        which = "tensor-parallel" if tb != tc else "pipeline"
        return Estimate(1.0, HIGH, f"{change}: {lay_b.words(tb)} → {lay_c.words(tc)}; counted with the {which} "
                        f"change (one estimate of the whole layout, not twice)", None, (1.0, 1.0),
                        counted_in=TENSOR if tb != tc else PIPELINE)
    words = _network_words(ctx, tb, tc)
    if not words:
        return Estimate(1.0, MEDIUM, f"{change}: {lay_b.words(tb)} → {lay_c.words(tc)}: no collective crosses the "
                        f"network on either side", SINGLE if c == 1 else AGGREGATE)
    if roofline.model_of(ctx) is None:
        return unknown_estimate(f"{change}: {words}; what that costs per step needs the model's layers and width "
                                f"(--model-config, or `snapshot` on the host)", SINGLE if c == 1 else AGGREGATE)
    return _layout_estimate(ctx, params, change, c)


def _layout_estimate(ctx: ImpactContext, params: dict, change: str, c: int,
                     tp: tuple[int, int] | None = None) -> Estimate:
    """The roofline step of each side's whole layout (tp, pp, nodes) at the running batch, at the point of the
    network's public ranges and at both ends (calibration.NETWORK_*): the interval holds the fast and the slow
    fabric, each end widened by the roofline's own step uncertainty (STEP_COST_SPREAD, capped) and one run's
    noise. Single-stream at concurrency 1; at higher load a tp or pp change also moves the KV pool per GPU, so
    only a nodes-only change keeps its number there."""
    m = roofline.model_of(ctx)
    assert m is not None  # callers check
    tb, tc = tp or (roofline.side_int(ctx, "baseline", TENSOR), roofline.side_int(ctx, "current", TENSOR))
    batch = roofline.decode_batch(ctx)
    hw_b, hw_c = roofline.hardware_for(ctx, "baseline", tp=tb), roofline.hardware_for(ctx, tp=tc)
    t_b = roofline.forward_time(m, hw_b, batch, 1, params=params)
    t_c = roofline.forward_time(m, hw_c, batch, 1, params=params)
    ratio = t_b.total / t_c.total
    ends = []
    for net in roofline.Network.ends():
        b = roofline.forward_time(m, dataclasses.replace(hw_b, network=net), batch, 1, params=params).total
        cur = roofline.forward_time(m, dataclasses.replace(hw_c, network=net), batch, 1, params=params).total
        ends.append(b / cur)
    u = cal.STEP_COST_SPREAD["facts"] + (0.0 if hw_c.known else cal.STEP_COST_SPREAD["unknown_gpu"])
    widen = [min(u * abs(math.log(v)), cal.STEP_COST_SPREAD_CAP) + cal.SPEC_BASE_SPREAD for v in [ratio, *ends]]
    values = [ratio, *ends]
    lo = min(v * math.exp(-w) for v, w in zip(values, widen, strict=True))
    hi = max(v * math.exp(w) for v, w in zip(values, widen, strict=True))
    lay_b, lay_c = hw_b.layout, hw_c.layout
    calls = 2 * (m.layers or 0) + 1
    words = _network_words(ctx, tb, tc) or f"{lay_b.words(tb)} → {lay_c.words(tc)}"
    nics = f"{cal.NETWORK_LINK_GBS_RANGE[0]:g}–{cal.NETWORK_LINK_GBS_RANGE[1]:g} GB/s NICs"
    if hw_b.tp_over_network or hw_c.tp_over_network:
        fabric = (f"{calls} all-reduces per step at {cal.NETWORK_ALLREDUCE_US_RANGE[0]:g}–"
                  f"{cal.NETWORK_ALLREDUCE_US_RANGE[1]:g} µs each over {nics}")
    else:
        fabric = (f"one send/recv per boundary at {cal.NETWORK_SENDRECV_US_RANGE[0]:g}–"
                  f"{cal.NETWORK_SENDRECV_US_RANGE[1]:g} µs over {nics}")
    lead = (f"{words} ({fabric}, the public range; the NICs were not read): all-reduces "
            f"{t_b.allreduce * 1e3:.1f} → {t_c.allreduce * 1e3:.1f} ms"
            + (f", pipeline send/recv {t_b.sendrecv * 1e3:.2f} → {t_c.sendrecv * 1e3:.2f} ms"
               if t_b.sendrecv or t_c.sendrecv else "")
            + f", weights {t_b.weights * 1e3:.1f} → {t_c.weights * 1e3:.1f} ms per step, on "
            f"{roofline.hardware_words(m, hw_c)} at batch {batch}: a step takes {t_b.total * 1e3:.1f} → "
            f"{t_c.total * 1e3:.1f} ms")
    how = "; ".join(dict.fromkeys(w for w in (lay_b.how, lay_c.how) if w))
    details = (f"Details: {lay_b.words(tb)}: {t_b.describe()}; {lay_c.words(tc)}: {t_c.describe()}; fast fabric "
               f"×{ends[0]:.2f}, slow fabric ×{ends[1]:.2f}" + (f"; {how}" if how else ""))
    layout_only = tb == tc and roofline.side_int(ctx, "baseline", PIPELINE) == roofline.side_int(ctx, "current",
                                                                                                    PIPELINE)
    if c > 1 and not layout_only:
        return unknown_estimate(f"{lead} (×{ratio:.2f} per step), but aggregate throughput at concurrency {c} also "
                                f"depends on the KV pool per GPU. {details}", AGGREGATE)
    return Estimate(ratio, LOW, f"{lead} ⇒ ×{ratio:.2f} (×{lo:.2f}–{hi:.2f} over the fabric's range). {details}",
                    SINGLE if c == 1 else AGGREGATE, (lo, hi))
