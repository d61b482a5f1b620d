"""Constants shared by the speculative-decoding and concurrency models.

Every number here is documented, with its source or its calibration, in docs/impact.md.
"""

# Per-token acceptance prior α for chain drafting (topk 1) when no accept length was measured.
# EAGLE family (EAGLE, EAGLE3, NEXTN/MTP heads): DeepSeek-V3 report (arXiv 2412.19437, §5.4.3)
# gives 85-90 % acceptance for the second MTP token; we take the low end. STANDALONE (a separate
# small draft model) is lower. NGRAM acceptance depends on the workload: no prior.
ALPHA_PRIOR = {"EAGLE": 0.85, "EAGLE3": 0.85, "STANDALONE": 0.70, "MTP": 0.97}
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
ALLREDUCE_US = {"nvlink": 10.0, "pcie": 80.0, "network": 150.0, "none": 80.0}
# Fraction of an MoE layer's experts that decode routing effectively spreads over (roofline.experts_touched):
# 1.0 is uniform routing over all of them (the first-order model). Fitted 0.4 with the absolute
# step of seed 004's servers at batch 1 and batch 26 (docs/impact.md): uniform routing put their step at
# 18 and 48 ms where they ran 16 and 33 ms. A batch's tokens and a request's consecutive tokens favour
# the same experts (routing is trained to balance load over a corpus, not within one step's batch).
ROUTING_POOL = 0.4
EAGER_LAYER_US = 20.0  # per decoder layer per forward without CUDA graphs; at the grid's bottom (see docs/impact.md)
CONTEXT_TOKENS = 2048.0  # tokens of context per request when the workload is not known (KV reads)
