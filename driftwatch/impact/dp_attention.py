"""`dp_attention`: DP attention and expert parallelism on the same GPUs, priced by concurrency (issue 35).

What changes per decode step (read from the engines' code; docs/impact.md "DP attention and expert
parallelism"):

- **DP attention** (SGLang `--enable-dp-attention --dp a`, 0.5.23 `--attn-dp-size a`): the t GPUs of the TP
  group form a attention groups of t/a GPUs, each running attention for its own 1/a of the requests, while
  the MoE/dense MLP layers stay tensor-parallel over all t GPUs on the gathered tokens (dp_attention.py:
  all-gather before the MLP, reduce-scatter after it, instead of TP's two all-reduces per layer). So per GPU:
  the attention weights are split t/a ways instead of t (replicated a times), the KV read is the busiest
  group's ceil(B/a) requests — an MLA model's latent KV is not split by TP, so this divides the KV read by
  ~a; a GQA model's KV heads are split either way, so it does not —, the gathered batch is padded to
  a × the busiest group's (MAX_LEN mode), and a group with no request still runs the step (idle batch). At
  concurrency 1 DP attention only costs; at high concurrency on an MLA model the KV reads, and the KV pool
  (each GPU holds only its group's requests), make it gain. SGLang turns the flag off when the DP size is 1
  (server_args `_handle_data_parallelism`, since PR #4390): then it changes nothing.
- **Expert parallelism** (vLLM `--enable-expert-parallel`: EP size = TP × DP, experts' TP size 1; SGLang
  `--ep-size`): each GPU holds E/ep whole experts instead of a 1/tp slice of every expert. With attention
  still TP (DP 1) the tokens are already on every GPU and the MoE output is still all-reduced, so the
  traffic is unchanged; the bytes each GPU reads are the touched experts it owns: equal on average, but the
  step waits for the busiest GPU, which at small batch holds more than its share of the k touched experts
  (at large batch every GPU's share is full). The GEMMs are fewer and larger (whole experts instead of 1/tp
  slices), which the roofline does not see: kernel uncertainty, carried as KERNEL_SWITCH_SPREAD.

The step times come from roofline.forward_time; the DP-attention and EP terms are added to its parts. The
80 % interval is the hull of the ratio over the inputs that are not known (context length when the
workload is not stated, the collective latency, the routing pool, the DP sync cost, the GPU when unknown),
widened by the kernel term. Where it holds 1 the direction is unknown and the words give the break-even
concurrency. Without model facts or a stated concurrency: ×1 within KERNEL_SWITCH_SPREAD, as before.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from typing import Any

from . import calibration as cal, roofline
from .base import (
    AGGREGATE,
    HIGH,
    LOW,
    RUNTIME,
    SINGLE,
    STABILITY,
    Estimate,
    ImpactContext,
    as_bool,
    as_int,
    concurrency_of,
    concurrency_stated,
    is_runtime,
    show,
    side_runtime,
    side_value,
    unknown_estimate,
)
from .parallelism import parallelism

# --- Constants (docs/impact.md "DP attention and expert parallelism"; judgements unless said) -------------
# Context tokens per request when no workload is stated: the roofline's CONTEXT_TOKENS prior (2048) is the
# point, the interval holds both ends (short chat turns to long documents; KV reads, and so DP attention's
# gain, scale with it).
CONTEXT_RANGE = (1024.0, 4096.0)
# Latency of one gather / scatter / all-reduce call, as a multiple of the roofline's ALLREDUCE_US for the link
# (NCCL small-message latency varies ×2 either way with message size, protocol and symmetric memory).
LINK_LATENCY_RANGE = (0.5, 2.0)
# Routing pool the interval holds (roofline ROUTING_POOL is the point; its fitted grid's ends, docs/impact.md).
ROUTING_POOL_RANGE = (0.25, 1.0)
# Per decode step, a DP-attention server synchronises its attention groups' batch sizes before the gather
# (SGLang prepares the global token counts of every group each step): 0-1 ms, point 0.5.
DP_SYNC_MS = 0.5
DP_SYNC_MS_RANGE = (0.0, 1.0)
# Log half-width for what the roofline does not see under DP attention: attention kernels at t/a instead of
# t-way head splits (MLA absorbed kernels run more heads per GPU), CUDA-graph padding, scheduler balance.
DPA_BASE_SPREAD = 0.15
# A switch the engine ignores (DP attention with DP size 1, expert parallelism on a dense model): ×1 within
# the run-to-run noise of one serving benchmark (identical servers measured up to ~8 % apart publicly).
NOOP_SPREAD = 0.10
# Expected largest of n standard normal draws (n = GPUs), for the busiest GPU's share of the touched experts
# under expert parallelism (normal approximation of the multinomial split).
_MAX_Z = {1: 0.0, 2: 0.564, 4: 1.029, 8: 1.424, 16: 1.766, 32: 2.070, 64: 2.335}
# The busiest GPU's excess over its mean share, as a multiple of the random split's: 0 is a perfect balance
# (EPLB), 1.5 hot experts clustering on one GPU (concentrated decode routing).
EP_IMBALANCE_RANGE = (0.0, 1.5)
# Real decode steps run longer than the roofline's (big MoE models at small batch most: a server in the public
# cases stepped 5× the roofline's, docs/impact.md), and a longer step makes the switch's added or saved time weigh
# less: the interval also holds both sides paying an unmodelled (GAP − 1) × the plain step.
ROOFLINE_STEP_GAP = 3.0
# Batches scanned for the break-even concurrency.
_SCAN = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 4096)

DP_ATTENTION, ATTENTION_DATA, DATA = "parallel.dp_attention", "parallel.attention_data", "parallel.data"
EXPERT, EXPERT_ENABLED = "parallel.expert", "parallel.expert_enabled"
ATTN_KEYS = (DP_ATTENTION, ATTENTION_DATA, "attn_dp_size")
EP_KEYS = (EXPERT, EXPERT_ENABLED, "enable_ep_moe")
# Which finding carries a DP-attention change when several of its settings differ at once (the others say
# they are counted there, so the product of the findings counts it once).
_CARRIERS = (DP_ATTENTION, ATTENTION_DATA, DATA)


def dp_attention(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext, params: dict) -> Estimate:
    """DP attention and expert-parallel switches priced by concurrency; every other parallel setting is
    `parallelism`'s (so rules can point their whole parallel group here)."""
    change = f"{name} {show(baseline_value)} → {show(current_value)}"
    if name in ATTN_KEYS or (name == DATA and _dp_attention_involved(ctx, name, baseline_value, current_value)):
        return _attention(name, baseline_value, current_value, ctx, params, change)
    if name in EP_KEYS:
        return _experts(name, baseline_value, current_value, ctx, params, change)
    return parallelism(name, baseline_value, current_value, ctx, params)


# --- Reading the settings -------------------------------------------------------------------------------

def _value(ctx: ImpactContext, side: str, concept: str, name: str, given: Any) -> Any:
    """The side's value of `concept` (the model's argument when called for it); RUNTIME when the engine
    computes it at start-up, which no reading below takes for a number or a switch."""
    key = ATTENTION_DATA if name == "attn_dp_size" else name
    v = side_value(ctx, side, concept, key, given)
    return RUNTIME if is_runtime(v, concept, side_runtime(ctx, side)) else v


def attention_groups(ctx: ImpactContext, side: str, name: str = "", given: Any = None) -> int | None:
    """Attention-DP groups on one side: `--attn-dp-size` when above 1, else the DP size when DP attention is on
    (SGLang 0.5.23 deprecates that switch for `--attn-dp-size <dp-size>`; SGLang turns it off at DP size 1),
    else 1; None when a setting it rests on is unknown."""
    groups = as_int(_value(ctx, side, ATTENTION_DATA, name, given))
    if groups is not None and groups > 1:  # 1 is 0.5.23's default: the deprecated switch may still set it
        return groups
    raw = _value(ctx, side, DP_ATTENTION, name, given)
    on = as_bool(raw)
    if on is None:
        return None
    if not on:
        return 1
    dp = _value(ctx, side, DATA, name, given)
    size = 1 if dp is None else as_int(dp)  # unset: SGLang's default DP size 1
    return size if size is not None and size >= 1 else None


def _dp_attention_involved(ctx: ImpactContext, name: str, baseline_value: Any, current_value: Any) -> bool:
    return any(as_bool(_value(ctx, side, DP_ATTENTION, name, v)) is True
               or (as_int(_value(ctx, side, ATTENTION_DATA, name, v)) or 1) > 1
               for side, v in (("baseline", baseline_value), ("current", current_value)))


def _differs(ctx: ImpactContext, concept: str) -> bool:
    """The two sides set `concept` differently (unset is off for the switch, 1 for a size)."""
    def norm(v: Any) -> Any:
        if concept == DP_ATTENTION:
            return as_bool(v) is True
        return 1 if v is None else (as_int(v) if as_int(v) is not None else v)
    return norm((ctx.baseline or {}).get(concept)) != norm((ctx.current or {}).get(concept))


def _carried_elsewhere(name: str, ctx: ImpactContext) -> str | None:
    key = ATTENTION_DATA if name == "attn_dp_size" else name
    for concept in _CARRIERS:
        if concept == key:
            return None
        if _differs(ctx, concept):
            return concept
    return None


def _ep_size(ctx: ImpactContext, side: str, name: str, given: Any, tp: int) -> int | None:
    """GPUs the experts are spread over: vLLM's switch spreads them over TP × DP; SGLang's `--ep-size`."""
    key = EXPERT_ENABLED if name == "enable_ep_moe" else name
    raw = _value(ctx, side, key, key, given)
    if key == EXPERT_ENABLED:
        on = as_bool(raw)
        if on is None or raw == RUNTIME:
            return None
        dp = as_int(_value(ctx, side, DATA, key, None)) or 1
        return tp * max(1, dp) if on else 1
    size = as_int(raw)
    return size if size is not None and size >= 1 else (1 if raw is None else None)


# --- The physics --------------------------------------------------------------------------------------

def attention_params(m: Any) -> float:
    """Attention weights of the model (parameters): GQA/MHA projections from the shape; MLA (and whatever the
    shape does not give) as what dense_params holds beside the lm_head, dense MLPs, shared experts and router."""
    h = m.hidden_size or 0
    rest = float(m.dense_params or 0) - float(m.embedding_params or 0)
    moe = (m.moe_layers or 0) if m.is_moe else 0
    rest -= ((m.layers or 0) - moe) * 3.0 * h * (m.intermediate_size or 0)
    if m.is_moe:
        rest -= moe * ((m.shared_experts or 0) * float(m.expert_params or 0) + (m.experts or 0) * h)
    if m.attention != "mla" and m.heads and m.head_dim and m.full_attention_layers:
        shaped = m.full_attention_layers * h * m.head_dim * (2.0 * m.heads + 2.0 * (m.kv_heads or m.heads))
        return min(shaped, max(0.0, float(m.dense_params or 0)))
    return max(0.0, rest)


def _bandwidth(st: roofline.StepTime) -> float | None:
    """Bytes per second the roofline read the weights at (dense + expert bytes ÷ weight time)."""
    return (st.dense_bytes + st.expert_bytes) / st.weights if st.weights > 0 else None


@dataclasses.dataclass(frozen=True)
class Knobs:
    """The inputs the interval varies: context tokens, link latency factor, routing pool, DP sync (ms), EP
    imbalance, and the hardware the step runs on."""

    context: float
    latency: float = 1.0
    pool: float | None = None
    sync_ms: float = DP_SYNC_MS
    imbalance: float = 1.0
    hw: roofline.Hardware | None = None
    gap: float = 1.0


def _params(params: dict, knobs: Knobs, hw: roofline.Hardware) -> dict:
    p = {**params, "context_tokens": knobs.context}
    table = cal.ALLREDUCE_US
    p[f"allreduce_us_{hw.interconnect}"] = table.get(hw.interconnect, table["pcie"]) * knobs.latency
    if knobs.pool is not None:
        p["routing_pool"] = knobs.pool
    return p


def dpa_step(m: Any, hw: roofline.Hardware, batch: int, groups: int, knobs: Knobs, params: dict) -> float:
    """Seconds per decode step over `batch` requests with `groups` attention-DP groups on hw.tp GPUs
    (groups 1: plain TP, the roofline's own step)."""
    p = _params(params, knobs, hw)
    st = roofline.forward_time(m, hw, batch, 1, params=p)
    if groups <= 1:
        return st.total
    t = hw.tp
    width = max(1, t // groups)  # attention TP inside a group
    busiest = math.ceil(batch / groups)
    bw = _bandwidth(st) or 1.0
    bpw = m.bytes_per_weight or 2.0
    weights = st.weights + attention_params(m) * bpw * (1.0 / width - 1.0 / t) / bw
    split_tp = 1 if m.attention == "mla" else min(t, m.kv_heads or t)
    split_dp = 1 if m.attention == "mla" else min(width, m.kv_heads or width)
    kv = st.kv * busiest / batch * split_tp / split_dp
    state = st.state * busiest * groups / batch
    if getattr(hw, "tp_over_network", False):  # the TP group spans nodes: its collectives cross the NICs
        link, lat = hw.network.link_gbs * 1e9, hw.network.allreduce_us * 1e-6 * knobs.latency
    else:
        link, lat = (hw.gpu.link_gbs or 32.0) * 1e9, roofline.allreduce_latency(hw.interconnect, p)
    h2 = (m.hidden_size or 0) * 2.0

    def reduce(n: float, ranks: int) -> float:  # one all-reduce of n tokens over `ranks` GPUs
        return lat + n * h2 * 2.0 * (ranks - 1) / ranks / link if ranks > 1 else 0.0

    layers = m.layers or 1
    comm = layers * (reduce(groups * busiest, t) + lat) + (layers * reduce(busiest, width) if width > 1 else 0.0)
    comm += reduce(groups * busiest, t)  # lm_head over the gathered tokens, as TP
    return max(weights, st.compute) + kv + state + comm + _rest(st) + knobs.sync_ms * 1e-3


def _max_share(touched: float, gpus: int, imbalance: float, experts: int) -> float:
    """Expected touched experts on the busiest of `gpus` GPUs, each owning 1/gpus of the `experts` (the
    hypergeometric split's spread: no imbalance once every expert is touched)."""
    if gpus <= 1:
        return touched
    z = _MAX_Z.get(gpus) or math.sqrt(2.0 * math.log(gpus))
    mean = touched / gpus
    finite = max(0.0, (experts - touched) / (experts - 1)) if experts > 1 else 0.0
    spread = math.sqrt(touched * (1.0 / gpus) * (1.0 - 1.0 / gpus) * finite)
    return min(touched, mean + imbalance * z * spread)


def ep_step(m: Any, hw: roofline.Hardware, batch: int, ep: int, knobs: Knobs, params: dict) -> float:
    """Seconds per decode step with the experts spread whole over `ep` GPUs (ep 1: sliced tp ways)."""
    p = _params(params, knobs, hw)
    st = roofline.forward_time(m, hw, batch, 1, params=p)
    if ep <= 1 or not st.experts_touched or not st.expert_bytes:
        return st.total
    bw = _bandwidth(st) or 1.0
    share = _max_share(st.experts_touched, ep, knobs.imbalance, m.experts or 0) / st.experts_touched
    expert_bytes = st.expert_bytes * hw.tp * share  # the busiest GPU's whole experts
    weights = st.weights + (expert_bytes - st.expert_bytes) / bw
    return max(weights, st.compute) + st.kv + st.state + st.allreduce + _rest(st)


def _rest(st: roofline.StepTime) -> float:
    """The step's terms neither layout changes: overhead, eager launches, pipeline send/recv, …"""
    return st.total - max(st.weights, st.compute) - st.kv - st.state - st.allreduce


# --- Fit in memory ------------------------------------------------------------------------------------

def _fits(m: Any, hw: roofline.Hardware, groups: int, context: float, ctx: ImpactContext) -> int | None:
    """Requests of `context` tokens the KV pools of the t GPUs hold together, or None when the GPU is not
    known (the pool is then not modelled). 0: the weights do not fit."""
    if not hw.known or not m.kv_bytes_per_token:
        return None
    from .kv_dtype import POOL_FRACTION
    t = hw.tp
    width = max(1, t // max(1, groups))
    frac = None
    raw = (ctx.current or {}).get("kv.memory_fraction") if isinstance(ctx.current, dict) else None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and 0 < raw <= 1:
        frac = float(raw)
    weights = roofline.weights_per_gpu_gb(m, t) * 1e9
    weights += attention_params(m) * (m.bytes_per_weight or 2.0) * (1.0 / width - 1.0 / t)
    pool = (frac or POOL_FRACTION) * hw.gpu.memory_gb * 1e9 - weights
    if pool <= 0:
        return 0
    split = 1 if m.attention == "mla" else min(width, m.kv_heads or width)
    per_request = context * m.kv_bytes_per_token / split
    return int(pool // per_request) * max(1, groups)


# --- DP attention -----------------------------------------------------------------------------------

def _attention(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext, params: dict,
               change: str) -> Estimate:
    carrier = _carried_elsewhere(name, ctx)
    if carrier is not None:
        return Estimate(1.0, HIGH, f"{change}: part of the DP-attention change, priced in the {carrier} "
                        f"finding (counted once)", None, (1.0, 1.0), counted_in=carrier)
    a_b = attention_groups(ctx, "baseline", name, baseline_value)
    a_c = attention_groups(ctx, "current", name, current_value)
    c = concurrency_of(ctx)
    dim = AGGREGATE if c > 1 or not concurrency_stated(ctx) else SINGLE
    if a_b is not None and a_c is not None and a_b == a_c:
        why = ("the engine turns DP attention off when the DP size is 1 (set --dp/--attn-dp-size to use it)"
               if a_b == 1 else f"both sides run {a_b} attention-DP groups")
        return Estimate(1.0, LOW, f"{change}: {why}, so nothing changes per step; ×{math.exp(-NOOP_SPREAD):.2f}–"
                        f"{math.exp(NOOP_SPREAD):.2f} (one benchmark run's noise)", dim,
                        (math.exp(-NOOP_SPREAD), math.exp(NOOP_SPREAD)))
    m = roofline.model_of(ctx)
    hw = roofline.hardware_for(ctx)
    words = ("DP attention gives each GPU 1/a of the requests' attention: it gains where the KV reads and pool "
             "dominate (an MLA model such as DeepSeek at high concurrency: the latent KV is not split by TP) and "
             "costs at low concurrency (attention weights replicated, hidden states gathered around every MLP, "
             "idle groups still step)")
    if a_b is None or a_c is None or m is None:
        missing = "the attention-DP groups on one side" if a_b is None or a_c is None else "the model's config.json"
        return _switch(f"{change}: {words}; {missing} unknown", dim)
    for groups, side in ((a_b, "baseline"), (a_c, "current")):
        t = roofline.side_int(ctx, side, "parallel.tensor")
        if groups > 1 and (t < groups or t % groups):
            return unknown_estimate(f"{change}: {groups} attention-DP groups must divide the TP size {t} on the "
                                    f"{side} side: the server will not start", STABILITY)

    def ratio_at(batch_b: int, batch_c: int, knobs: Knobs) -> float:
        h = knobs.hw or hw
        return _aggregate(m, h, (batch_b, a_b), (batch_c, a_c), knobs, params, ctx, dpa_step)

    stated = roofline.with_workload(ctx, {}).get("context_tokens")
    point_knobs = Knobs(context=float(stated or params.get("context_tokens") or cal.CONTEXT_TOKENS))
    even = _break_even(lambda b: ratio_at(b, b, point_knobs), a_c > a_b)
    lead = (f"{change}: attention-DP groups {a_b} → {a_c} on {roofline.hardware_words(m, hw)}"
            f"{' (MLA: latent KV not split by TP)' if m.attention == 'mla' else ''}")
    if not concurrency_stated(ctx):
        return _switch(f"{lead}; {words}; the concurrency was not stated{_even_words(even, a_c > a_b)}", dim)
    b_b, b_c = roofline.decode_batch(ctx, "baseline"), roofline.decode_batch(ctx, "current")
    point = ratio_at(b_b, b_c, point_knobs)
    grid = _grid(ctx, hw, point_knobs, stated is not None, ep=False)
    values = [ratio_at(b_b, b_c, k) for k in grid]
    return _answer(lead, point, values, DPA_BASE_SPREAD, c, even, b_b == b_c == 1, dim,
                   _step_words(m, hw, (b_b, a_b), (b_c, a_c), point_knobs, params, ctx))


def _aggregate(m: Any, hw: roofline.Hardware, base: tuple[int, int], cur: tuple[int, int], knobs: Knobs,
               params: dict, ctx: ImpactContext, step: Callable[..., float]) -> float:
    """current ÷ baseline tokens per second: each side's running batch (capped by what its KV pools hold)
    over its step time."""
    rates = []
    for batch, layout in (base, cur):
        fits = _fits(m, hw, layout, knobs.context, ctx) if step is dpa_step else None
        if fits == 0:
            return float("nan")
        running = max(1, min(batch, fits)) if fits is not None else batch
        unmodelled = (knobs.gap - 1.0) * step(m, hw, running, 1, knobs, params) if knobs.gap > 1.0 else 0.0
        rates.append(running / (step(m, hw, running, layout, knobs, params) + unmodelled))
    return rates[1] / rates[0]


def _step_words(m: Any, hw: roofline.Hardware, base: tuple[int, int], cur: tuple[int, int], knobs: Knobs,
                params: dict, ctx: ImpactContext) -> str:
    out = []
    for (batch, groups), side in ((base, "baseline"), (cur, "current")):
        fits = _fits(m, hw, groups, knobs.context, ctx)
        running = max(1, min(batch, fits)) if fits else batch
        capped = f" (the KV pools hold ~{fits} requests)" if fits is not None and fits < batch else ""
        ms = dpa_step(m, hw, running, groups, knobs, params) * 1e3
        out.append(f"{side}: {groups} group{'s' if groups > 1 else ''}, batch {running}{capped}, step {ms:.1f} ms")
    return f"roofline at {knobs.context:.0f} context tokens per request: " + "; ".join(out)


# --- Expert parallelism -------------------------------------------------------------------------------

def _experts(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext, params: dict,
             change: str) -> Estimate:
    c = concurrency_of(ctx)
    dim = AGGREGATE if c > 1 or not concurrency_stated(ctx) else SINGLE
    m = roofline.model_of(ctx)
    hw = roofline.hardware_for(ctx)
    words = ("expert parallelism puts whole experts on each GPU instead of a slice of every expert: the same "
             "bytes on average, fewer and larger GEMMs, but a step waits for the GPU holding the most touched "
             "experts (at small batch) and, with attention DP, all-to-all traffic replaces the all-reduce")
    if m is not None and not m.is_moe:
        return Estimate(1.0, LOW, f"{change}: {m.summary()} has no routed experts: expert parallelism changes "
                        f"nothing; ×{math.exp(-NOOP_SPREAD):.2f}–{math.exp(NOOP_SPREAD):.2f} (one benchmark "
                        f"run's noise)", dim, (math.exp(-NOOP_SPREAD), math.exp(NOOP_SPREAD)))
    e_b = _ep_size(ctx, "baseline", name, baseline_value, hw.tp)
    e_c = _ep_size(ctx, "current", name, current_value, hw.tp)
    if m is None or e_b is None or e_c is None or not concurrency_stated(ctx):
        why = ("the model's config.json unknown" if m is None else
               "the expert-parallel size unknown on one side" if e_b is None or e_c is None else
               "the concurrency was not stated (a lone stream pays the imbalance, a large batch does not)")
        return _switch(f"{change}: {words}; {why}", dim, "the kernels, the interconnect and how many requests "
                       "share a step")
    if _attention_on(ctx) or any(roofline.side_int(ctx, side, DATA) > 1 for side in ("baseline", "current")):
        return _switch(f"{change}: {words}; with attention data-parallel (DP attention, or vLLM's DP on an MoE), "
                       f"the dispatch/combine all-to-all sets the traffic (not modelled)", dim,
                       "the all-to-all backend and the interconnect")
    b_b, b_c = roofline.decode_batch(ctx, "baseline"), roofline.decode_batch(ctx, "current")
    stated = roofline.with_workload(ctx, {}).get("context_tokens")
    point_knobs = Knobs(context=float(stated or params.get("context_tokens") or cal.CONTEXT_TOKENS))

    def ratio_at(knobs: Knobs) -> float:
        return _aggregate(m, knobs.hw or hw, (b_b, e_b), (b_c, e_c), knobs, params, ctx, ep_step)

    point = ratio_at(point_knobs)
    values = [ratio_at(k) for k in _grid(ctx, hw, point_knobs, stated is not None, ep=True)]
    p = _params(params, point_knobs, hw)
    st = roofline.forward_time(m, hw, b_c, 1, params=p)
    touched = st.experts_touched or 0.0
    wide = max(e_b, e_c)
    lead = (f"{change}: experts spread over {e_b} → {e_c} GPU{'s' if e_c > 1 else ''} on "
            f"{roofline.hardware_words(m, hw)}; at batch {b_c} a MoE layer touches ~{touched:.0f} experts, the "
            f"busiest of {wide} GPUs holds ~{_max_share(touched, wide, 1.0, m.experts or 0):.1f} of them where "
            f"the tensor split gives each {touched / max(1, hw.tp):.1f} experts' worth")
    return _answer(lead, point, values, cal.KERNEL_SWITCH_SPREAD, c, None, False, dim,
                   "the kernel term (fewer, larger expert GEMMs) is the public spread of kernel switches")


def _attention_on(ctx: ImpactContext) -> bool:
    return any((attention_groups(ctx, side) or 1) > 1 for side in ("baseline", "current"))


# --- Intervals and words ------------------------------------------------------------------------------

def _grid(ctx: ImpactContext, hw: roofline.Hardware, point: Knobs, context_stated: bool, ep: bool) -> list[Knobs]:
    contexts = (point.context,) if context_stated else CONTEXT_RANGE
    hardware: list[roofline.Hardware | None] = [None]
    if not hw.known:  # an unknown GPU: the table's slowest and fastest stand in as well (same layout)
        from ..facts.gpu import gpu_table
        rows = sorted(gpu_table(), key=lambda r: r.bandwidth_gbs)
        hardware += [dataclasses.replace(hw, gpu=r, interconnect=r.interconnect, known=True)
                     for r in (rows[0], rows[-1])]
    out = []
    for h in hardware:
        for context in contexts:
            for pool in ROUTING_POOL_RANGE:
                for gap in (1.0, ROOFLINE_STEP_GAP):
                    if ep:
                        out += [Knobs(context, 1.0, pool, 0.0, imb, h, gap) for imb in EP_IMBALANCE_RANGE]
                    else:
                        out += [Knobs(context, lat, pool, sync, 1.0, h, gap) for lat in LINK_LATENCY_RANGE
                                for sync in DP_SYNC_MS_RANGE]
    return out


def _break_even(ratio: Callable[[int], float], gaining: bool) -> int | None:
    """The smallest scanned concurrency from which the switch pays (gaining: the current side has more
    groups), or None when it never changes sides in the scan."""
    last = None
    for b in _SCAN:
        r = ratio(b)
        if not math.isfinite(r):
            continue
        pays = r > 1.0 if gaining else r < 1.0
        if last is not None and pays != last:
            return b
        last = pays
    return None


def _even_words(even: int | None, gaining: bool) -> str:
    if even is None:
        return ""
    return (f"; on this model and these GPUs it pays from ~{even} concurrent requests"
            if gaining else f"; on this model and these GPUs turning it off pays below ~{even} concurrent requests")


def _finite(values: Iterable[float]) -> list[float]:
    return [v for v in values if isinstance(v, float) and math.isfinite(v) and v > 0]


def _answer(lead: str, point: float, values: list[float], spread: float, c: int, even: int | None,
            single: bool, dim: str, details: str) -> Estimate:
    """The point, and the hull of the readings widened by `spread` as the 80 % interval. `single`: one request
    on both sides, where the layout switch cannot make the step shorter."""
    vals = _finite([point, *values])
    if not math.isfinite(point) or not vals:
        return unknown_estimate(f"{lead}: the weights leave no room for a KV cache on one side: the server will "
                                f"not start", STABILITY)
    lo, hi = min(vals) * math.exp(-spread), max(vals) * math.exp(spread)
    if single and max(vals) <= 1.0:  # one request: nothing to split, the layout can only add work
        hi = min(hi, 1.0)
    if hi <= 1.0 and lo < 1.0 and single:
        sign = f"one stream can only lose: ×{lo:.2f}–{hi:.2f}"
    elif lo < 1.0 < hi:
        sign = (f"which way is unknown at concurrency {c} (×{lo:.2f}–{hi:.2f})"
                + (f"; break-even ~{even} concurrent requests" if even else ""))
    else:
        sign = f"×{lo:.2f}–{hi:.2f} at concurrency {c}"
    return Estimate(point, LOW, f"{lead} ⇒ ×{point:.2f}; {sign}. Details: {details}", dim, (lo, hi))


def _switch(text: str, dim: str, depends: str | None = "the model, the concurrency and the interconnect") -> Estimate:
    """×1 within the public spread of kernel/layout switches (KERNEL_SWITCH_SPREAD), direction unknown."""
    from .kernels import kernel_switch
    est = kernel_switch(text, depends)
    est.dimension = dim
    return est


__all__ = ["dp_attention", "attention_groups", "attention_params", "dpa_step", "ep_step"]
