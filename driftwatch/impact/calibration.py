"""Constants shared by the speculative-decoding and concurrency models.

Every number here is documented, with its source or its calibration, in docs/impact.md.
"""

# Per-token acceptance prior α for chain drafting (topk 1) when no accept length was measured.
# EAGLE family (EAGLE, EAGLE3, NEXTN/MTP heads): DeepSeek-V3 report (arXiv 2412.19437, §5.4.3)
# gives 85-90 % acceptance for the second MTP token; we take the low end. STANDALONE (a separate
# small draft model) is lower. NGRAM acceptance depends on the workload: no prior.
ALPHA_PRIOR = {"EAGLE": 0.70, "EAGLE3": 0.85, "STANDALONE": 0.70, "MTP": 0.97}
# EAGLE (EAGLE-1/2 heads): 0.70, the middle of the EAGLE paper's 0.6-0.8, chosen on the 60 public cases by
# tools/fit_calibration.py scorecard (every held-out source chose 0.70 too; issue 35, docs/impact.md).
# "MTP": the model's own multi-token-prediction layer (config.json ships mtp/nextn layers and the unit
# names no draft model), trained with the model; fitted on the calibration seeds (docs/impact.md), at the
# grid's top. Where an accept length was measured at fewer steps, it is the acceptance of the deeper,
# unobserved positions given the earlier ones were accepted (seed 000: 0.75 at position 1).

# The weakest acceptance still plausible for a deployed drafter (out-of-domain prompts, a mismatched
# head): where a prior decides the sign, the sign must hold down to this α, else the ratio is
# withheld (direction unknown). External heads: 0.5, a judgement. A model's own MTP head: 0.75, the
# lowest measured on the calibration seeds (seed 000: accept length 1.75 at 1 step).
ALPHA_FLOOR = 0.5
ALPHA_FLOOR_BY_PRIOR = {"MTP": 0.75}

# Cost of one draft pass, as a fraction of one target forward at batch 1 (memory-bound).
# EAGLE/MTP heads are one decoder layer plus the LM head: calibrated 0.02 on the seeds.
DRAFT_COST = {"EAGLE": 0.02, "EAGLE3": 0.02, "STANDALONE": 0.10, "NGRAM": 0.0}
DEFAULT_DRAFT_COST = 0.02

# Roofline knee: tokens per forward at which compute time equals the weight-load time.
# A forward over n tokens costs ≈ 1 + n / KNEE_TOKENS (in weight-load units). Calibrated on
# seed 004 (×1.18 at concurrency 64); ~ the bf16 ridge point of current GPUs (~250-300 FLOP/byte).
KNEE_TOKENS = 256.0

# Acceptance decay with draft position: α_i = α · DECAY^(i-1). 1.0 = no decay (the seeds show none).
DECAY = 1.0

# Architecture defaults SGLang picks when --speculative-num-steps/topk/draft are unset
# (speculative_hook.py): Llama and Grok1 (5, 4, 8); everything else (3, 1, 4).
ARCH_DEFAULTS_LLAMA = (5, 4, 8)
ARCH_DEFAULTS_OTHER = (3, 1, 4)

# --- Roofline step cost (roofline.py): the few free constants, fitted by tools/fit_calibration.py on
# tools/calibration_cases (docs/impact.md, "Calibration"). Efficiencies are fractions of the data sheet's
# peak; overheads are per forward pass with CUDA graphs. Grid bounds in the fit script; a value at a
# bound is marked.
BW_EFFICIENCY = 0.90  # achieved ÷ peak memory bandwidth for decode GEMVs
FLOPS_EFFICIENCY = 0.60  # achieved ÷ peak dense tensor throughput
STEP_OVERHEAD_MS = 2.0  # per target forward: scheduling, sampling, launch, host sync
DRAFT_OVERHEAD_MS = 0.1  # per draft pass of an EAGLE/MTP head (graph replay, top-k select)
# Per speculative iteration, once, whatever the number of draft passes: building the draft tree and
# its mask, the accept/reject pass and the host sync that reads how many tokens were accepted, the
# KV bookkeeping for the accepted tokens. Paid by a side that speculates, not by plain decode.
SPEC_STEP_OVERHEAD_MS = 2.0  # fitted (docs/impact.md)
# Per all-reduce call of a decode-sized message. pcie fitted (at the grid's top: it also carries the
# other costs of a multi-GPU PCIe box); nvlink and network are priors (NCCL small-message latency).
ALLREDUCE_US = {"nvlink": 10.0, "xgmi": 10.0, "pcie": 80.0, "network": 45.0, "none": 80.0}  # xgmi: as NVLink (prior)
# --- Inter-node collectives (roofline.Layout; issue 35 item 1). A tensor-parallel group larger than one node's
# GPUs all-reduces over the nodes' NICs (InfiniBand or RoCE); a pipeline split across nodes sends each stage
# boundary's activations over them. No public case measures a --nnodes change on one model and GPU (queries in
# docs/impact.md), so nothing here is fitted: each is a range from public NCCL and NIC figures, the point its
# geometric middle, and a step that crosses the network carries the whole range in its interval.
# Per all-reduce call of a decode-sized message (4-48 KB) across nodes, µs: NCCL's own tuning model predicts
# 26 µs for 4-8 KB on an H100 InfiniBand cluster and that cluster measured 75 µs (NVIDIA/nccl#1453); NCCL spent
# 54-64 µs per 48 KB all-reduce over 200 GbE RoCE between DGX Sparks (local-inference-lab/vllm#295).
NETWORK_ALLREDUCE_US_RANGE = (25.0, 80.0)
# Per GPU NIC bandwidth, GB/s: 100 Gb/s Ethernet (12.5) to 400 Gb/s NDR InfiniBand / ConnectX-7, one NIC per GPU
# on rail-optimised servers (50); the point is the 200 Gb/s class (HDR InfiniBand, DGX Spark's ConnectX-7 link).
# nccl-tests all_reduce busbw 70.8 GB/s over 4× 200 Gb/s between two GH200 nodes (vllm-project/vllm#6610) sits
# inside: ~70 % of the wire.
NETWORK_LINK_GBS = 25.0
NETWORK_LINK_GBS_RANGE = (12.5, 50.0)
# Per pipeline stage boundary crossing nodes, per forward: one send/recv of the boundary's activations, µs. From
# the fabric's floor (ib_write_lat 8.8 µs for 48 KB over 200 GbE RoCE, local-inference-lab/vllm#295) to NCCL's
# per-call cost with its proxy thread (the all-reduce figures above).
NETWORK_SENDRECV_US = 25.0
NETWORK_SENDRECV_US_RANGE = (9.0, 64.0)
# Fraction of an MoE layer's experts that decode routing effectively spreads over (roofline.experts_touched):
# 1.0 is uniform routing over all of them (the first-order model). Fitted 0.4 with the absolute
# step of seed 004's servers at batch 1 and batch 26 (docs/impact.md): uniform routing put their step at
# 18 and 48 ms where they ran 16 and 33 ms. A batch's tokens and a request's consecutive tokens favour
# the same experts (routing is trained to balance load over a corpus, not within one step's batch).
ROUTING_POOL = 0.4
EAGER_LAYER_US = 20.0  # per decoder layer per forward without CUDA graphs; at the grid's bottom (see docs/impact.md)
# The same on a workstation or consumer part (roofline.Hardware.launch_class "desktop": RTX, RTX PRO, GB10).
# Searched leave-one-source-out on the public graph on/off cases (issue 35, docs/impact.md): a larger desktop
# cost (160 µs, chosen by most sources) made the family's coverage and width worse, because on one GPU (RTX
# 4090) one source gained ≤ 6 % from graphs and another ×5.8: the launch cost is the host's and the batch's,
# not the GPU's. Kept equal to the datacenter one until public data separate them.
EAGER_LAYER_US_DESKTOP = 20.0
CONTEXT_TOKENS = 2048.0  # tokens of context per request when the workload is not known (KV reads)

# --- Intervals (uncertainty.py): every ratio carries an 80 % interval [lo, hi]. -------------------------
# Log half-width of the band a model without a modelled uncertainty gets, by its own confidence: a
# judgement (a high-confidence identity such as "topk 1 forces draft tokens" is ±2 %), checked on the
# calibration cases with the rest (docs/impact.md "Intervals").
DEFAULT_SPREAD = {"high": 0.02, "medium": 0.15, "low": 0.30}
# Confidence follows the interval's width hi ÷ lo: high up to ×1.25 (within ±12 %), medium up to ×1.6. A band of
# DEFAULT_SPREAD keeps the confidence its model gave (high ×1.04, medium ×1.35, low ×1.82).
CONFIDENCE_WIDTH = {"high": 1.25, "medium": 1.6}

# Per-token acceptance of chain drafting as a range (lo, hi) per drafter family; the point stays the
# family's ALPHA_PRIOR (or the family point below). Public figures, none fitted to one measurement:
# - MTP heads of DeepSeek-V3 / GLM (one MTP layer, reused recursively past depth 1): DeepSeek-V3 report
#   (arXiv 2412.19437 §5.4.3) 85-90 % for the second token; GLM's own MTP measured α≈0.82 (issue 24).
# - MTP heads of Qwen3.5 / Qwen3.6 / Qwen3-Next: seed 000 accept length 1.75 at 1 step (α 0.75 at
#   position 1); seed 001's 1 → 2 step gain needs α ≥ 0.9 at position 2.
# - Other models' MTP heads: the union of the two.
# - EAGLE (EAGLE-1/2 heads): EAGLE paper (arXiv 2401.15077) 0-α … 4-α ≈ 0.6-0.8 on chat benchmarks.
# - EAGLE3: EAGLE-3 paper (arXiv 2503.01840) acceptance ≈ 0.7-0.9, flatter with depth.
# - A head of unknown provenance (a local path, not a published checkpoint): self-trained heads accept
#   far less (a head measured at α≈0.56, issue 24): 0.4-0.85.
# - STANDALONE (a small draft model of the same family): 0.5-0.85.
ALPHA_RANGE = {"MTP": (0.70, 0.97), "MTP.deepseek": (0.70, 0.90), "MTP.qwen": (0.75, 0.97),
               "EAGLE": (0.60, 0.88), "EAGLE3": (0.65, 0.92), "SELF": (0.40, 0.85), "STANDALONE": (0.50, 0.85)}
# Point α of the family priors that ALPHA_PRIOR does not cover: DeepSeek/GLM MTP 0.82 (the published
# figures above), a head of unknown provenance 0.70 (the middle of its range; a judgement, not a fit).
# "MTP.unread": EAGLE with no draft model (the model's own NEXTN/MTP head) where config.json was not read:
# 0.85, the low end of the DeepSeek-V3 report's 85-90 % (the EAGLE prior before issue 35 split them).
ALPHA_PRIOR_FAMILY = {"MTP.deepseek": 0.82, "SELF": 0.70, "MTP.unread": 0.85}
# Model types whose MTP head belongs to each family (config.json's model_type).
MTP_FAMILY = {"deepseek": ("deepseek_v3", "deepseek_v32", "glm4_moe", "glm_moe_dsa", "glm5", "kimi_k2"),
              "qwen": ("qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text", "qwen3_6")}
# Decay of acceptance with draft position α_i = α·d^(i−1), as the low end of a range whose high end is
# 1 (no decay, the point): EAGLE heads decay mildly in the EAGLE paper's n-α table; EAGLE3 is trained
# for depth (flatter); a DeepSeek/GLM MTP layer reused past its trained depth decays most; the Qwen
# seeds show none at depth 2.
DECAY_LOW = {"MTP": 0.92, "MTP.deepseek": 0.85, "MTP.qwen": 0.95, "EAGLE": 0.92, "EAGLE3": 0.96,
             "SELF": 0.85, "STANDALONE": 0.90}
# Tree drafting (topk > 1): the extra candidates at a position are correlated with the first, so the
# widening is α_eff = 1 − (1 − α)^(topk^TREE_EXPONENT): 1 is independent candidates (every tree then
# accepts almost everything: all tree cases were over-predicted), 0 is no gain over the chain. Point
# 0.3 (0.5 before issue 35), range TREE_EXPONENT_RANGE.
TREE_EXPONENT = 0.3  # chosen on the 60 public cases (scorecard; issue 35)
TREE_EXPONENT_RANGE = (0.0, 0.8)
# Per draft pass of a tree (topk > 1), beside DRAFT_OVERHEAD_MS: selecting topk × topk candidates and extending
# the tree's attention mask (issue 35; chosen leave-one-source-out by tools/fit_calibration.py scorecard).
TREE_PASS_OVERHEAD_MS = 1.5
# A measured accept length is an average over a window: ±MEASURED_ACCEPT_SPREAD (relative).
MEASURED_ACCEPT_SPREAD = 0.03
# Step cost: the modelled change of the step cost ρ = cost_current ÷ cost_baseline is uncertain by
# ρ^(1 ± u): u by what the cost rests on. "facts" (config.json and the GPU) and "prior" (no config.json:
# the knee model) are fitted (tools/fit_calibration.py intervals --fit); "unknown_gpu" is added to
# "facts" when the GPU is not known (the reference GPU stands in): a judgement, not fitted, because no
# calibration case has a model's config.json without its GPU.
STEP_COST_SPREAD = {"facts": 0.75, "unknown_gpu": 0.5, "prior": 0.5}
# ... but by no more than ×e^0.2 (≈ ×1.22) either way: the proportional term is fitted where the
# modelled cost change is small (×1.1 on the seeds); where the roofline predicts a large change (a
# 128-expert MoE verifying 4 tokens reads ~3× the expert weights) that change is the physics the
# roofline does know, and a measured step that disagrees by more than half widens the interval by
# its own readings (MEASURED_STEP_TOLERANCE). A judgement, not fitted.
STEP_COST_SPREAD_CAP = 0.2
# A floor on every speculative interval (log half-width): what no term models (run-to-run noise of a
# single benchmark run, scheduler effects). Fitted with STEP_COST_SPREAD.
SPEC_BASE_SPREAD = 0.03
# Unstated concurrency: the speculative interval also holds the ratio at this running batch (an
# open-loop or offline benchmark runs many requests at once).
UNSTATED_BATCH = 16
# Where the sign of a speculative change rests on the unmeasured acceptance (the prior's reading and a
# weak drafter's point opposite ways), the interval is the hull of the two readings widened by this log
# half-width (issue 35; chosen leave-one-source-out by tools/fit_calibration.py scorecard).
UNSETTLED_SPREAD = 0.10
# A side whose steps, topk or draft tokens were assumed (unset in the unit: the engine's architecture
# default taken): the interval widens by this log half-width (a judgement; the default is a guess).
ASSUMED_SETTING_SPREAD = 0.15
# CUDA graphs on ↔ off (features.py, capacity.py's graph limit): the interval holds the ratio at both
# ends of the eager launch overhead per layer (EAGER_LAYER_US is fitted at its grid's bottom; kernel
# launches from Python cost ~5-10 µs each and a decoder layer launches ~10-20 of them, more on small
# models and busy hosts), widened by GRAPH_BASE_SPREAD (partial/piecewise graphs run slower on some
# architectures: the calibration's vLLM piecewise cases).
EAGER_LAYER_US_RANGE = (20.0, 150.0)
# The same ends on a desktop launch class (issue 35): the public RTX/A6000 cases put eager mode anywhere from
# 0.02 to 2 ms per layer; a wider desktop range was searched leave-one-source-out and did not pay (see above).
EAGER_LAYER_US_RANGE_DESKTOP = (20.0, 150.0)
GRAPH_BASE_SPREAD = 0.05

# --- Non-speculative changes (issue 24 item 5): physics bounds, each a judgement checked on the calibration
# cases of its family (docs/impact.md "Intervals"), none fitted to one measurement.
# CUDA graphs on ↔ off without model facts: the decode step with graphs vs eager, as a range. Low end: partial
# (piecewise) graphs measured slower than eager on some architectures (the calibration's vLLM piecewise cases,
# ×0.82-0.87); high end: the launch overhead of a model of a few billion parameters at small batches (a model
# under 1B gains more: give its config.json). The point is the eager prior of capacity.py (×1/0.85).
GRAPH_PRIOR_RANGE = (0.80, 1.60)
# Prefix caching at a stated share h of reusable prompt tokens: prefill takes a share f of server time, f in
# this range (decode-heavy chat ~0.1 to long-prompt RAG ~0.9), throughput ×1/(1 − f·h).
PREFILL_TIME_SHARE = (0.10, 0.90)
# The prefix cache's own bookkeeping (hashing, eviction) with nothing to reuse, log: vLLM measured −2 % with no
# shared prefix (calibration case vl-prefix-cache-on-no-shared-llama7b) and 0 to −3 % elsewhere in that PR.
PREFIX_CACHE_OVERHEAD = 0.03
# Prefix caching switched on with no stated share of reusable prompt tokens (features.py): at most this gain,
# the interval's top (issue 35; chosen leave-one-source-out by tools/fit_calibration.py scorecard on the public
# prefix-cache cases).
PREFIX_UNSTATED_GAIN = 2.0
# A larger prefill chunk stalls running decodes longer (log): about −3 % at 48 concurrent in the calibration's
# vl-batched-tokens case's other point; 0.05 holds it.
CHUNK_DECODE_STALL = 0.05
# KV-cache dtype 16-bit → fp8: bytes per cached token halve. Where the pool does not limit the batch the speed
# change is the kernel path's (−8 % … +5 %: the fp8 KV cases of the calibration); where it does (saturating
# load, known from model facts, GPU and concurrency), twice the requests fit and the roofline gives the gain.
KV_FP8_KERNEL_RANGE = (0.90, 1.05)
# A kernel or compile switch (attention/MoE backend, torch.compile; kernels.py): ×1 within ×e^±this, the spread
# of such switches in the public before/after runs (issue 35; chosen leave-one-source-out by
# tools/fit_calibration.py scorecard, its range across sources in docs/impact.md).
KERNEL_SWITCH_SPREAD = 0.6
