"""The roofline step cost shared by the impact models: how long one forward pass takes on this
model and these GPUs.

    time(b, t) = max(weight bytes read ÷ bandwidth, FLOPs ÷ compute) + KV and state reads
                 + all-reduces + per-step overhead (+ eager launch overhead without CUDA graphs)

for a batch of b requests verifying t tokens each (n = b·t tokens in the forward). Weight bytes
read: every non-expert weight once (attention, dense MLPs, shared experts, router, lm_head); on an
MoE, per MoE layer the distinct experts the n tokens touch, P·(1 − (1 − k/P)^n) for routing spread
evenly over an effective pool P = min(E, max(k, ROUTING_POOL·E)) of the E experts (k per token; pool
1 is uniform routing over all of them; decode routing is concentrated, so fewer experts are read).
Tensor parallelism divides the weights, FLOPs and KV heads by tp and adds two all-reduces per layer.
KV reads: each request's context over the full-attention layers, once per forward (verifying t tokens
reads it once). Linear-attention (Gated DeltaNet) layers read their fixed-size state and write it back
for each verified token. The constants (efficiencies, overheads, all-reduce latency) are fitted in
tools/fit_calibration.py; docs/impact.md lists them with the residuals.

Everything here is pure arithmetic on ModelFacts/GPUFacts; models that lack facts use their priors.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, overload

from ..facts.gpu import GPUFacts, GPUSpec
from ..facts.model import ModelFacts, dtype_bytes
from . import calibration as cal

if TYPE_CHECKING:  # base imports this module's users; the context is only named here
    from .base import ImpactContext

# A reference GPU for a model whose facts are known on a host whose GPU is not: the ratios then
# depend on the model's shape and a typical ridge point (prior; the speculative interval widens).
# Its link: PCIe up to TP 4 (workstation boxes), NVLink at TP 8 and above (8-GPU servers are NVLink
# or Infinity Fabric boxes: PCIe there would charge ~15 ms of all-reduce per step); the speculative
# interval holds the other link's reading too.
REFERENCE_GPU = GPUSpec(key="reference", name="a reference GPU (1 TB/s, 200 dense BF16 TFLOPS)",
                        match=(), memory_gb=48, bandwidth_gbs=1000, bf16_tflops=200, fp8_tflops=400,
                        interconnect="pcie", link_gbs=32, source="prior")
REFERENCE_NVLINK_TP = 8


@dataclass(frozen=True)
class Network:
    """The inter-node fabric a collective crossing nodes pays (calibration.NETWORK_*): µs per all-reduce call,
    GB/s per GPU's NIC, µs per pipeline send/recv. The default is the point of each public range; the
    interval code prices the ends (`Network.ends`)."""

    allreduce_us: float = cal.ALLREDUCE_US["network"]
    link_gbs: float = cal.NETWORK_LINK_GBS
    sendrecv_us: float = cal.NETWORK_SENDRECV_US

    @staticmethod
    def ends() -> tuple[Network, Network]:
        """The fast and the slow fabric of the public ranges (low latency with a wide NIC, and the reverse)."""
        return (Network(cal.NETWORK_ALLREDUCE_US_RANGE[0], cal.NETWORK_LINK_GBS_RANGE[1],
                        cal.NETWORK_SENDRECV_US_RANGE[0]),
                Network(cal.NETWORK_ALLREDUCE_US_RANGE[1], cal.NETWORK_LINK_GBS_RANGE[0],
                        cal.NETWORK_SENDRECV_US_RANGE[1]))


@dataclass(frozen=True)
class Layout:
    """Where one side's GPUs sit (issue 35 item 1): the nodes the server spans, the GPUs of each node, the
    pipeline depth. `gpus_per_node` None: unknown (then no collective is priced over the network, and
    `unknown` says what to read). `how`: where the GPUs per node came from, for the sentence."""

    nodes: int = 1
    gpus_per_node: int | None = None
    pipeline: int = 1
    unknown: str = ""  # why the layout cannot be known ("" when it can)
    how: str = ""

    def tp_crosses(self, tp: int) -> bool:
        """A tensor-parallel group larger than one node's GPUs all-reduces over the network."""
        return self.nodes > 1 and self.gpus_per_node is not None and tp > self.gpus_per_node

    def network_boundaries(self, tp: int) -> int:
        """Pipeline stage boundaries whose send/recv crosses nodes in one forward: the stages are laid
        node after node, so with more stages than nodes nodes − 1 of them do (with a TP group that already
        spans nodes, each boundary does)."""
        if self.pipeline <= 1 or self.nodes <= 1 or self.gpus_per_node is None:
            return 0
        if self.tp_crosses(tp):
            return self.pipeline - 1
        return min(self.pipeline, self.nodes) - 1

    def words(self, tp: int) -> str:
        """"TP 16 across 2 nodes of 8 GPUs" / "TP 8 on one node"."""
        if self.nodes <= 1:
            return f"TP {tp} on one node"
        per = (f" of {self.gpus_per_node} GPU{'s' if self.gpus_per_node > 1 else ''}" if self.gpus_per_node
               else "")
        pp = f" × PP {self.pipeline}" if self.pipeline > 1 else ""
        return f"TP {tp}{pp} across {self.nodes} nodes{per}"


SINGLE_NODE = Layout()


@dataclass
class Hardware:
    """What the forward runs on: one GPU model, the tensor-parallel degree, the link, graphs or not, and
    (multi-node) where the GPUs sit and the fabric between the nodes."""

    gpu: GPUSpec
    tp: int = 1
    interconnect: str = "pcie"
    graphs: bool = True
    known: bool = True  # False: the reference GPU stands in for an unknown one
    link_known: bool = False  # the link was read on the host (`nvidia-smi topo -m`), not the table's usual one
    layout: Layout = SINGLE_NODE
    network: Network = field(default_factory=Network)

    @classmethod
    def of(cls, facts: GPUFacts | None, tp: int = 1, graphs: bool = True, layout: Layout = SINGLE_NODE) -> Hardware:
        if facts is None:
            link = "nvlink" if tp >= REFERENCE_NVLINK_TP else REFERENCE_GPU.interconnect
            return cls(REFERENCE_GPU, max(1, tp), link, graphs, known=False, layout=layout)
        return cls(facts.spec, max(1, tp), facts.interconnect, graphs, known=True,
                   link_known=facts.interconnect_known, layout=layout)

    @property
    def tp_over_network(self) -> bool:
        return self.layout.tp_crosses(self.tp)

    @property
    def launch_class(self) -> str:
        """"desktop" for a workstation or consumer part (RTX, RTX PRO, DGX Spark's GB10): a desktop CPU and
        a single-box host launch kernels slower than a server's, so eager mode costs more per layer
        (calibration.EAGER_LAYER_US_BY_CLASS); "datacenter" for the rest and for an unknown GPU."""
        key = self.gpu.key if self.known else ""
        return "desktop" if key.startswith(("rtx-", "gb10", "l4", "a10", "a40")) else "datacenter"

    def link_words(self) -> str:
        """"pcie (nvidia-smi topo -m on the host)" or "nvlink (assumed: …)": where the all-reduce cost's
        link came from. The matrix is the host's: "pcie" when any pair of its GPUs meets over PCIe."""
        if self.link_known:
            return f"{self.interconnect} (nvidia-smi topo -m on the host)"
        if not self.known:
            return f"{self.interconnect} (assumed)"
        return f"{self.interconnect} (assumed: the {self.gpu.name}'s usual link; the host's topology was not read)"


@dataclass
class StepTime:
    """One forward's time in seconds, by term."""

    weights: float
    compute: float
    kv: float
    state: float
    allreduce: float
    overhead: float
    eager: float = 0.0
    sendrecv: float = 0.0  # pipeline stage boundaries crossing nodes (Layout.network_boundaries)
    tokens: int = 1  # n = b·t tokens in the forward
    experts_touched: float | None = None  # distinct experts read per MoE layer
    expert_bytes: float = 0.0  # per GPU
    dense_bytes: float = 0.0  # per GPU
    parts: dict = field(default_factory=dict)

    @property
    def total(self) -> float:
        return (max(self.weights, self.compute) + self.kv + self.state + self.allreduce + self.overhead + self.eager
                + self.sendrecv)

    @property
    def bound(self) -> str:
        return "compute" if self.compute > self.weights else "memory"

    def describe(self) -> str:
        ms = lambda s: f"{s * 1e3:.2f}"  # noqa: E731
        out = (f"{ms(self.total)} ms = max(weights {ms(self.weights)}, compute {ms(self.compute)}) + KV {ms(self.kv)}"
               + (f" + state {ms(self.state)}" if self.state else "")
               + (f" + all-reduce {ms(self.allreduce)}" if self.allreduce else "")
               + (f" + pipeline send/recv {ms(self.sendrecv)}" if self.sendrecv else "")
               + f" + overhead {ms(self.overhead)}" + (f" + eager launches {ms(self.eager)}" if self.eager else ""))
        return out


def experts_touched(experts: int, per_token: int, tokens: float, pool: float | None = None) -> float:
    """Expected distinct experts that `tokens` (≥ 1 in a forward) tokens route to, each picking
    `per_token` experts uniformly from an effective pool of P = min(E, max(k, pool·E)) of the
    `experts`: P·(1 − (1 − k/P)^n).

    pool 1 is uniform routing over all E. Real decode routing is concentrated (a batch's tokens,
    and a request's consecutive tokens, favour the same experts), so fewer distinct experts are read
    than uniform routing predicts; `cal.ROUTING_POOL` is that fraction, fitted (docs/impact.md). A pool
    outside (0, 1] (or not a number) is not a pool: the shipped one is used."""
    if experts <= 0 or per_token <= 0 or not tokens > 0:
        return 0.0
    if per_token >= experts:
        return float(experts)
    share = cal.ROUTING_POOL if pool is None else pool
    if not (isinstance(share, (int, float)) and 0.0 < share <= 1.0):
        share = cal.ROUTING_POOL
    size = min(float(experts), max(float(per_token), share * experts))
    return size * (1.0 - (1.0 - per_token / size) ** tokens)


@overload
def _param(params: dict | None, name: str, default: float) -> float: ...


@overload
def _param(params: dict | None, name: str, default: None) -> float | None: ...


def _param(params: dict | None, name: str, default: float | None) -> float | None:
    if isinstance(params, dict):
        v = params.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return default


def allreduce_latency(interconnect: str, params: dict | None = None) -> float:
    """Seconds per all-reduce call of a small (decode-sized) message."""
    table = cal.ALLREDUCE_US
    us = _param(params, f"allreduce_us_{interconnect}", table.get(interconnect, table["pcie"]))
    return us * 1e-6


@dataclass(frozen=True)
class Pass:
    """What one forward runs beside the batch: the model's whole stack with its lm_head (the default), or a
    draft head's share of it. `layers` < m.layers models a draft head (one decoder layer of the target's
    shape: MTP/EAGLE); `moe=False` makes that layer dense (an external EAGLE head on an MoE target);
    `context` tokens read per request (None: CONTEXT_TOKENS), `kv_bytes` per cached value (None: 16-bit),
    `overhead_s` per forward (None: STEP_OVERHEAD_MS)."""

    context: float | None = None
    kv_bytes: float | None = None
    layers: float | None = None
    lm_head: bool = True
    overhead_s: float | None = None
    moe: bool = True


WHOLE = Pass()  # the target's own forward


def forward_time(m: ModelFacts, hw: Hardware, batch: float, tokens: float = 1, *, shape: Pass = WHOLE,
                 params: dict | None = None) -> StepTime:
    """Time of one forward over `batch` requests × `tokens` tokens each, of the `shape` it runs (Pass)."""
    context, kv_bytes, layers, lm_head = shape.context, shape.kv_bytes, shape.layers, shape.lm_head
    overhead_s, moe = shape.overhead_s, shape.moe
    bw = hw.gpu.bandwidth_gbs * 1e9 * _param(params, "bw_efficiency", cal.BW_EFFICIENCY)
    fp8 = hw.gpu.fp8_tflops if (m.bytes_per_weight or 2.0) <= 1.0 else None  # fp8 weights on fp8 cores
    peak = (fp8 or hw.gpu.bf16_tflops) * 1e12
    flops_rate = peak * _param(params, "flops_efficiency", cal.FLOPS_EFFICIENCY)
    tp = max(1, hw.tp)
    n = max(1.0, float(batch) * float(tokens))
    L = m.layers or 1
    share = 1.0 if layers is None else min(1.0, max(0.0, layers / L))
    bpw = m.bytes_per_weight or 2.0

    # Weights: non-expert weights (the lm_head at the unquantized dtype), then the experts touched.
    embed = m.embedding_params or 0
    head_bpw = dtype_bytes(m)
    dense = max(0.0, (m.dense_params or 0) - embed) * bpw * share + (embed * head_bpw if lm_head else 0.0)
    active_body = max(0.0, (m.active_params or 0) - embed * (1 if m.tie_word_embeddings else 2))
    expert_bytes, touched = 0.0, None
    experts, per_token = m.experts, m.experts_per_token
    if m.is_moe and experts and per_token and m.expert_params and m.moe_layers:  # is_moe: both are set
        moe_layers = m.moe_layers * share
        if moe:
            touched = experts_touched(experts, per_token, n, _param(params, "routing_pool", None))
            expert_bytes = moe_layers * touched * m.expert_params * bpw
        else:  # a dense head of the same width: an MLP of the model's intermediate size
            mlp = 3 * (m.hidden_size or 0) * (m.intermediate_size or 0)
            dense += share * L * mlp * bpw
            active_body += L * mlp - m.moe_layers * per_token * m.expert_params  # × share below
    weights = (dense + expert_bytes) / tp / bw

    # FLOPs: 2 per active weight per token (+ attention over the context).
    ctx_len = _param(params, "context_tokens", cal.CONTEXT_TOKENS) if context is None else max(0.0, float(context))
    active = active_body * share + (embed if lm_head else 0.0)
    attn_flops = 0.0
    if m.heads and m.head_dim and m.full_attention_layers:
        attn_flops = 4.0 * n * ctx_len * m.heads * m.head_dim * m.full_attention_layers * share
    compute = (2.0 * active * n + attn_flops) / tp / flops_rate

    # KV cache and recurrent state traffic (per request: context read once; state read + t writes).
    kv_token = (m.kv_bytes_per_token or 0) * ((kv_bytes or 2.0) / 2.0) * share
    kv_split = min(tp, m.kv_heads or tp) if m.attention != "mla" else 1  # MLA's latent KV is not split
    kv = float(batch) * ctx_len * kv_token / kv_split / bw
    state = float(batch) * (m.state_bytes_per_request or 0) * share * (1.0 + float(tokens)) / tp / bw

    # All-reduces: two per layer under TP (attention out, MLP out), latency + payload; over the nodes' NICs
    # when the TP group is larger than one node (Layout), where NCCL's hierarchical all-reduce is bound by them.
    allreduce = 0.0
    activations = n * (m.hidden_size or 0) * 2.0  # bytes of one boundary's hidden states (16-bit)
    if tp > 1:
        calls = 2.0 * L * share + (1.0 if lm_head else 0.0)
        if hw.tp_over_network:
            link, latency = hw.network.link_gbs * 1e9, hw.network.allreduce_us * 1e-6
        else:
            link, latency = (hw.gpu.link_gbs or 32.0) * 1e9, allreduce_latency(hw.interconnect, params)
        payload = activations * 2.0 * (tp - 1) / tp / link
        allreduce = calls * (latency + payload)
    # Pipeline stages on different nodes: one send/recv of the activations per boundary crossing them.
    sendrecv = 0.0
    if layers is None:  # the whole stack (a draft head runs on the last stage only)
        sendrecv = hw.layout.network_boundaries(tp) * (hw.network.sendrecv_us * 1e-6
                                                       + activations / (hw.network.link_gbs * 1e9))

    over = (_param(params, "step_overhead_ms", cal.STEP_OVERHEAD_MS) * 1e-3) if overhead_s is None else overhead_s
    eager = 0.0 if hw.graphs else _param(params, "eager_layer_us", eager_layer_us(hw)) * 1e-6 * L * share
    return StepTime(weights=weights, compute=compute, kv=kv, state=state, allreduce=allreduce, overhead=over,
                    eager=eager, sendrecv=sendrecv, tokens=int(round(n)), experts_touched=touched,
                    expert_bytes=expert_bytes / tp, dense_bytes=dense / tp)


def eager_layer_us(hw: Hardware) -> float:
    """The eager launch overhead per decoder layer (µs) on this hardware's launch class."""
    if hw.launch_class == "desktop":
        return cal.EAGER_LAYER_US_DESKTOP
    return cal.EAGER_LAYER_US


def eager_layer_range(hw: Hardware) -> tuple[float, float]:
    """The ends of the eager launch overhead per layer the graph interval holds, by launch class."""
    return cal.EAGER_LAYER_US_RANGE_DESKTOP if hw.launch_class == "desktop" else cal.EAGER_LAYER_US_RANGE


def draft_time(m: ModelFacts, hw: Hardware, batch: float, width: int = 1, *, native_mtp: bool = True,
               params: dict | None = None) -> StepTime:
    """One draft pass of an EAGLE/MTP head: one decoder layer of the target's shape plus the lm_head,
    over `batch` × `width` tokens (width = topk for a tree). A native MTP layer of an MoE model is
    an MoE layer; an external EAGLE head is dense."""
    return forward_time(m, hw, batch, width, shape=Pass(layers=1, lm_head=True, moe=native_mtp, overhead_s=_param(
        params, "draft_overhead_ms", cal.DRAFT_OVERHEAD_MS) * 1e-3), params=params)


# --- Reading the context ------------------------------------------------------------------------

def model_of(ctx: ImpactContext, side: str = "current") -> ModelFacts | None:
    """The side's ModelFacts when it has a usable shape (layers, hidden size, parameter counts)."""
    m = getattr(ctx, "model_facts" if side == "current" else "baseline_model_facts", None)
    if not isinstance(m, ModelFacts):
        m = ModelFacts.from_dict(m) if isinstance(m, dict) else None
    if m is None or not (m.layers and m.hidden_size and m.params and m.dense_params is not None):
        return None
    return m


def gpu_of(ctx: ImpactContext) -> GPUFacts | None:
    g = getattr(ctx, "gpu_facts", None)
    return g if isinstance(g, GPUFacts) else None


def side_int(ctx: ImpactContext, side: str, concept: str, default: int = 1) -> int:
    from .base import as_int, is_runtime, side_runtime
    values = (ctx.baseline if side == "baseline" else ctx.current) or {}
    raw = values.get(concept) if isinstance(values, dict) else None
    if raw is None or is_runtime(raw, concept, side_runtime(ctx, side)):
        return default
    v = as_int(raw)
    return v if v is not None and v >= 1 else default


def side_graphs(ctx: ImpactContext, side: str) -> bool:
    """CUDA graphs on for decode on that side (the concept's default is on)."""
    values = (ctx.baseline if side == "baseline" else ctx.current) or {}
    raw = values.get("cuda_graph.enabled") if isinstance(values, dict) else None
    return raw is not False


def hardware_for(ctx: ImpactContext, side: str = "current", *, tp: int | None = None,
                 graphs: bool | None = None, layout: Layout | None = None) -> Hardware:
    """The side's hardware: the current host's GPUs, the side's tp (or `tp`), its graphs and its layout
    over nodes (layout_of; or `layout`)."""
    tp = side_int(ctx, side, "parallel.tensor") if tp is None else tp
    return Hardware.of(gpu_of(ctx), tp, side_graphs(ctx, side) if graphs is None else graphs,
                       layout_of(ctx, side) if layout is None else layout)


NODES = "parallel.nodes"
EXECUTOR = "parallel.executor"
RAY_EXECUTORS = (None, "ray")  # vLLM: no backend named picks Ray when the group exceeds the node's GPUs


def ray_may_span(values: dict) -> bool:
    """vLLM's Ray executor (named, or none named: vLLM picks Ray for a group larger than the node's GPUs)
    with --nnodes at 1 places the group over as many nodes as it needs: a multi-node server, not one that
    will not start. Only a side whose engine maps `parallel.executor` (vLLM) can say so."""
    from .base import as_int
    return (EXECUTOR in values and values.get(EXECUTOR) in RAY_EXECUTORS
            and as_int(values.get(NODES, 1)) == 1)


def layout_of(ctx: ImpactContext, side: str = "current") -> Layout:
    """Where the side's GPUs sit. `parallel.nodes` (SGLang's and vLLM ≥ 0.12's --nnodes) set: each node runs
    tp·pp·dp ÷ nodes GPUs (DP attention's dp lives inside the TP group); not mapped by the side's engine
    release (vLLM before 0.12 spans nodes through Ray, with no flag): a group larger than the current
    host's GPU count (nvidia-smi, --gpu) must span ceil(total ÷ that count) nodes of that count. A value the
    engine computes at start-up, or one that does not divide, leaves the layout unknown (`Layout.unknown`).
    vLLM's `--distributed-executor-backend` ray, or none named (vLLM then picks Ray for a group larger than
    the node's GPUs), with --nnodes 1: as a release without --nnodes."""
    from .base import as_int, is_runtime, side_runtime
    values = (ctx.baseline if side == "baseline" else ctx.current) or {}
    if not isinstance(values, dict):
        values = {}
    tp, pp = side_int(ctx, side, "parallel.tensor"), side_int(ctx, side, "parallel.pipeline")
    dp = 1 if values.get("parallel.dp_attention") is True else side_int(ctx, side, "parallel.data")
    total = tp * pp * dp
    host = gpu_of(ctx)
    host_gpus = host.count if host is not None and side == "current" else None
    raw = values.get(NODES)
    nodes = None if is_runtime(raw, NODES, side_runtime(ctx, side)) else as_int(raw)
    ray = nodes == 1 and ray_may_span(values)
    if NODES not in values or ray:
        if host_gpus and total > host_gpus:
            spans = -(-total // host_gpus)
            why = ("the engine release has no --nnodes" if NODES not in values
                   else "vLLM's Ray executor places the group (--nnodes 1)")
            return Layout(spans, host_gpus, pp, how=f"{host_gpus} GPUs per node: the host's count; {why}, so "
                          f"{total} GPUs span {spans} nodes")
        return Layout(1, host_gpus or total, pp) if NODES in values else Layout(pipeline=pp)
    if nodes is None or nodes < 1:
        return Layout(pipeline=pp, unknown=f"--nnodes {raw!r} is not a node count the model can read; state it "
                      f"in the unit")
    if nodes == 1:
        return Layout(1, host_gpus or total, pp)
    if total % nodes:
        return Layout(nodes, None, pp, unknown=f"{total} GPUs (tp {tp} × pp {pp} × dp {dp}) do not divide over "
                      f"{nodes} nodes; read nvidia-smi on each node")
    return Layout(nodes, total // nodes, pp, how=f"{total // nodes} GPUs per node: tp·pp·dp ÷ --nnodes")


def hardware_words(m: ModelFacts, hw: Hardware) -> str:
    """"this 128-expert MoE (30.5B params, 3.4B active) on NVIDIA H200 SXM" """
    what = f"{m.experts}-expert MoE" if m.is_moe else "dense model"
    if m.linear_attention_layers:
        what = ("hybrid " + what) if m.is_moe else "hybrid dense model"
    size = [f"{m.params / 1e9:.1f}B params"] if m.params else []
    if m.is_moe and m.active_params:
        size.append(f"{m.active_params / 1e9:.1f}B active")
    gpu = hw.gpu.name if hw.known else "an unknown GPU (reference GPU assumed)"
    on = f"{hw.tp}× {gpu}" if hw.known and hw.tp > 1 else gpu
    return (f"this {what}" + (f" ({', '.join(size)})" if size else "") + f" on {on}"
            + (f", TP {hw.tp}" if hw.tp > 1 and not hw.known else ""))


def decode_batch(ctx: ImpactContext, side: str = "current", concurrency: int | None = None) -> int:
    """The running batch of one side: the client concurrency (or `concurrency`, e.g. the one a
    baseline was measured at) capped by that side's known batch.max_running_requests (its value,
    else a measured max_running_requests metric)."""
    from .base import as_int, concurrency_of, is_runtime, side_metrics, side_runtime
    c = concurrency if concurrency is not None else concurrency_of(ctx)
    values = ctx.baseline if side == "baseline" else ctx.current
    raw = values.get("batch.max_running_requests") if isinstance(values, dict) else None
    cap = None if is_runtime(raw, "batch.max_running_requests", side_runtime(ctx, side)) else as_int(raw)
    if cap is None:
        cap = as_int(side_metrics(ctx, side).get("max_running_requests"))
    return min(c, cap) if cap is not None and cap >= 1 else c


def graph_effect(ctx: ImpactContext, batch: int,
                 params: dict | None = None) -> tuple[StepTime, StepTime, ModelFacts, Hardware] | None:
    """(graph step, eager step, model, hardware) for a plain decode step at `batch`, or None without
    model facts. Eager mode launches every layer's kernels from Python (EAGER_LAYER_US per layer)."""
    m = model_of(ctx)
    if m is None:
        return None
    params = with_workload(ctx, params)
    with_graphs = forward_time(m, hardware_for(ctx, graphs=True), batch, 1, params=params)
    eager = forward_time(m, hardware_for(ctx, graphs=False), batch, 1, params=params)
    return with_graphs, eager, m, hardware_for(ctx)


def with_workload(ctx: ImpactContext, params: dict | None) -> dict:
    """`params` plus the stated prompt length as the context each request's KV reads hold
    (compare --workload-prompt-tokens; else CONTEXT_TOKENS)."""
    from .base import prompt_tokens
    p = prompt_tokens(ctx)
    return {**(params or {}), **({"context_tokens": float(p)} if p and "context_tokens" not in (params or {}) else {})}


def weights_per_gpu_gb(m: ModelFacts, tp: int, pp: int = 1) -> float:
    """GB of weights each GPU holds (all experts resident)."""
    if m.params is None:  # model_of gives only facts with a parameter count
        raise TypeError("weights per GPU need the model's parameter count")
    bpw = m.bytes_per_weight or 2.0
    embed = m.embedding_params or 0
    embeds = embed * (1 if m.tie_word_embeddings else 2)
    total = (m.params - embeds) * bpw + embeds * dtype_bytes(m)
    return total / max(1, tp) / max(1, pp) / 1e9


def graph_interval(ctx: ImpactContext, batch: int, params: dict | None, gaining: bool) -> tuple[float, float] | None:
    """The 80 % interval of a CUDA-graphs change at `batch` (gaining: the current side has the graphs):
    the ratio at both ends of EAGER_LAYER_US_RANGE, widened by GRAPH_BASE_SPREAD; None without facts."""
    import dataclasses
    import math
    contexts = [ctx]
    if not hardware_for(ctx).known:  # an unknown GPU: the table's slowest and fastest stand in as well
        from ..facts.gpu import gpu_table
        rows = sorted(gpu_table(), key=lambda r: r.bandwidth_gbs)
        tp = side_int(ctx, "current", "parallel.tensor")
        contexts += [dataclasses.replace(ctx, gpu_facts=GPUFacts(r, tp, r.name, r.interconnect))
                     for r in (rows[0], rows[-1])]
    values = []
    for c in contexts:
        for us in eager_layer_range(hardware_for(c)):
            effect = graph_effect(c, batch, {**(params or {}), "eager_layer_us": us})
            if effect is None:
                return None
            graphs, eager = effect[0].total, effect[1].total
            values.append(eager / graphs if gaining else graphs / eager)
    # the roofline's graph step itself is uncertain as the speculative step cost is (the same fitted term,
    # STEP_COST_SPREAD, capped), and where it was checked it ran long (seed 004's servers: 16 and 33 ms
    # measured against 18 and 48; the RTX 5090 decode-graph case: 2.6 ms measured): a shorter real step
    # makes the launch overhead weigh more, so the term widens the far end only, and never flips the sign
    u = cal.STEP_COST_SPREAD["facts"] + (0.0 if hardware_for(ctx).known else cal.STEP_COST_SPREAD["unknown_gpu"])
    far = [v * math.exp(math.copysign(min(u * abs(math.log(v)), cal.STEP_COST_SPREAD_CAP), math.log(v)))
           for v in values]
    lo, hi = min(values + far), max(values + far)
    # SGLang captures whole decode steps: the same batch is never slower with graphs. Elsewhere (vLLM's
    # piecewise graphs) some architectures ran slower with graphs than eager: the band covers both ways.
    full_graphs = (getattr(ctx, "engine", None) or "").lower() == "sglang"
    below = cal.SPEC_BASE_SPREAD if full_graphs else cal.GRAPH_BASE_SPREAD  # a single run's noise at least
    if gaining:
        return lo * math.exp(-below), hi * math.exp(cal.GRAPH_BASE_SPREAD)
    return lo * math.exp(-cal.GRAPH_BASE_SPREAD), hi * math.exp(below)
