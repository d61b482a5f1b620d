"""Model facts from a Hugging Face ``config.json``: shape, experts, parameter counts, bytes per weight.

Read, never downloaded: the collector finds the file on the host, ``compare --model-config FILE``
supplies it offline. Keys differ between families, so each fact is looked up under the names the
families use (``num_hidden_layers``/``n_layer``, ``num_experts``/``n_routed_experts``/
``num_local_experts``, …), in the top level or in ``text_config`` (multimodal wrappers such as
Qwen3.5). A fact the file does not give stays None. Parameter counts are computed from the shapes
(linear weights and embeddings; norms and biases left out, < 0.1 %), so they can be checked against
the published totals (tests/facts).

Counted per layer:
- attention: GQA/MHA q/k/v/o projections (q doubled with an output gate, Qwen3.5/3-Next), or MLA
  (DeepSeek-V2/V3: q LoRA, compressed KV, o); linear-attention layers (Gated DeltaNet: Qwen3-Next,
  Qwen3.5) have their own projections and a fixed-size recurrent state instead of a KV cache;
- MLP: dense SwiGLU (3 × hidden × intermediate) on dense layers; on MoE layers E routed experts of
  3 × hidden × moe_intermediate, shared experts, and the router.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..errors import InputError
from ..fileio import read_json

MAX_CONFIG_JSON_BYTES = 4 << 20  # a model's config.json is a few KB; a bigger one is not a config

# Bytes per weight for a dtype name (torch_dtype / dtype).
_DTYPE_BYTES = {"float32": 4.0, "fp32": 4.0, "float": 4.0, "bfloat16": 2.0, "bf16": 2.0, "float16": 2.0,
                "fp16": 2.0, "half": 2.0, "float8_e4m3fn": 1.0, "fp8": 1.0, "float8": 1.0}


@dataclass
class ModelFacts:
    """What a config.json says about a model. Counts are parameters (not bytes); None = not given."""

    source: str | None = None  # the file (or "snapshot") the facts came from
    architecture: str | None = None
    model_type: str | None = None
    layers: int | None = None
    hidden_size: int | None = None
    intermediate_size: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    vocab: int | None = None
    attention: str | None = None  # "gqa", "mha", "mqa", "mla", "hybrid-linear"
    full_attention_layers: int | None = None
    linear_attention_layers: int | None = None
    experts: int | None = None  # routed experts per MoE layer (None: dense)
    experts_per_token: int | None = None
    shared_experts: int | None = None
    moe_intermediate_size: int | None = None
    moe_layers: int | None = None
    mtp_layers: int | None = None  # multi-token-prediction heads shipped with the model (NEXTN/MTP)
    tie_word_embeddings: bool | None = None
    params: int | None = None  # total, embeddings included
    active_params: int | None = None  # per token (embedding row + lm_head counted)
    embedding_params: int | None = None  # one vocab × hidden matrix
    expert_params: int | None = None  # one routed expert
    # every non-routed-expert weight a forward reads (lm_head incl., input embedding excl.)
    dense_params: int | None = None
    kv_bytes_per_token: int | None = None  # KV cache of one token over all full-attention layers, 16-bit
    state_bytes_per_request: int | None = None  # recurrent state of the linear-attention layers (fp32)
    dtype: str | None = None
    quantization: str | None = None
    bytes_per_weight: float | None = None  # of the quantized linear layers (dtype bytes when not quantized)
    notes: list[str] = field(default_factory=list)

    @property
    def is_moe(self) -> bool:
        return bool(self.experts and self.experts > 1 and self.experts_per_token)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None and v != []}

    @classmethod
    def from_dict(cls, data: Any) -> ModelFacts | None:
        """Facts recorded in a snapshot (``to_dict`` output), or a ModelFacts; None for anything else."""
        if isinstance(data, ModelFacts):
            return data
        if not isinstance(data, dict) or not data:
            return None
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        try:
            facts = cls(**kwargs)
        except TypeError:
            return None
        if not isinstance(facts.notes, list):
            facts.notes = []
        return facts

    def summary(self) -> str:
        """One phrase an operator recognises: "128-expert MoE (8 active), 30.5B params (3.3B active), bf16"."""
        size = _billions(self.params)
        bits = []
        if self.is_moe:
            bits.append(f"{self.experts}-expert MoE ({self.experts_per_token} active"
                        + (f", {self.shared_experts} shared" if self.shared_experts else "") + ")")
        elif self.layers:
            bits.append("dense")
        if self.linear_attention_layers:
            bits.append(f"hybrid ({self.linear_attention_layers} linear-attention layers of {self.layers})")
        if size:
            act = _billions(self.active_params)
            bits.append(f"{size} params" + (f" ({act} active)" if self.is_moe and act else ""))
        prec = self.quantization or self.dtype
        if prec:
            bits.append(str(prec))
        return ", ".join(bits) or "model facts"


def _billions(n: int | None) -> str | None:
    if not n:
        return None
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"


def _int(cfg: dict, *names: str) -> int | None:
    for name in names:
        v = cfg.get(name)
        if isinstance(v, bool):
            continue
        if isinstance(v, int) and v >= 0:
            return v
        if isinstance(v, float) and v.is_integer() and v >= 0:
            return int(v)
    return None


def _text_config(config: dict) -> dict:
    """The language model's settings: ``text_config`` (or ``llm_config``) merged over the top level."""
    merged = dict(config)
    for key in ("text_config", "llm_config", "language_config"):
        sub = config.get(key)
        if isinstance(sub, dict):
            merged.update(sub)
    return merged


def _bytes_per_weight(cfg: dict, notes: list[str]) -> tuple[str | None, str | None, float | None, float | None]:
    """(dtype, quantization, bytes per quantized weight, bytes per unquantized weight)."""
    dtype = cfg.get("torch_dtype") or cfg.get("dtype")
    dtype = str(dtype).replace("torch.", "") if isinstance(dtype, str) else None
    base = _DTYPE_BYTES.get(dtype.lower()) if dtype else None
    q = cfg.get("quantization_config") or cfg.get("quantization")
    if not isinstance(q, dict):
        return dtype, None, base, base
    method = str(q.get("quant_method") or q.get("quant_algo") or q.get("mode") or "").lower()
    bits = _int(q, "bits", "w_bit", "num_bits", "weight_bits")
    if method in ("compressed-tensors", "compressed_tensors"):
        groups = q.get("config_groups") or {}
        for group in groups.values() if isinstance(groups, dict) else ():
            weights = group.get("weights") if isinstance(group, dict) else None
            if isinstance(weights, dict) and _int(weights, "num_bits"):
                bits = _int(weights, "num_bits")
                kind = str(weights.get("type") or "int")
                method = f"compressed-tensors {kind}{bits}"
                break
    algo = str(q.get("quant_algo") or "").upper()
    if "NVFP4" in algo or method in ("nvfp4", "modelopt_fp4"):
        return dtype, "nvfp4", 0.5 + 1 / 16, base  # 4-bit values + one fp8 scale per 16
    if method == "mxfp4" or "MXFP4" in algo:
        return dtype, "mxfp4", 0.5 + 1 / 32, base  # 4-bit values + one 8-bit scale per 32
    if method in ("fp8", "fbgemm_fp8") or "FP8" in algo or (
            method.startswith("compressed-tensors float") and bits == 8):
        return dtype, "fp8", 1.0, base
    if bits:
        group = _int(q, "group_size", "q_group_size") or 128
        scale = 4.0 / group if group > 0 else 0.0  # fp16 scale + zero per group
        name = method or "quantized"
        return dtype, f"{name} {bits}-bit", bits / 8 + scale, base
    if q.get("load_in_4bit"):
        return dtype, "bitsandbytes 4-bit", 0.5 + 2 / 64, base
    if q.get("load_in_8bit"):
        return dtype, "bitsandbytes 8-bit", 1.0, base
    notes.append(f"quantization_config {method or '?'} not understood: bytes per weight from the dtype")
    return dtype, method or None, base, base


def _layer_kinds(cfg: dict, layers: int) -> tuple[int, int]:
    """(full-attention layers, linear-attention layers)."""
    types = cfg.get("layer_types")
    if isinstance(types, list) and types and all(isinstance(t, str) for t in types):
        linear = sum(1 for t in types[:layers] if "linear" in t or "mamba" in t or "delta" in t)
        return layers - linear, linear
    interval = _int(cfg, "full_attention_interval")
    if interval and interval > 1 and (_int(cfg, "linear_num_value_heads") or cfg.get("linear_key_head_dim")):
        full = layers // interval
        return full, layers - full
    return layers, 0


def _moe_layer_count(cfg: dict, layers: int) -> int:
    dense_first = _int(cfg, "first_k_dense_replace") or 0
    step = _int(cfg, "decoder_sparse_step", "moe_layer_freq") or 1
    listed = cfg.get("mlp_only_layers")
    mlp_only = listed if isinstance(listed, list) else []
    count = 0
    for i in range(layers):
        if i < dense_first or i in mlp_only:
            continue
        if step > 1 and (i + 1) % step != 0:
            continue
        count += 1
    return count


def model_facts(config: Any, source: str | None = None) -> ModelFacts:
    """Facts from a parsed config.json (a dict). Raises InputError when it is not a model config."""
    if not isinstance(config, dict):
        raise InputError(f"{source or 'model config'}: not a JSON object")
    cfg = _text_config(config)
    notes: list[str] = []
    archs = config.get("architectures") or cfg.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    f = ModelFacts(source=source, architecture=arch, notes=notes,
                   model_type=cfg.get("model_type") if isinstance(cfg.get("model_type"), str) else None)
    f.layers = _int(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    f.hidden_size = h = _int(cfg, "hidden_size", "d_model", "n_embd", "dim")
    f.heads = _int(cfg, "num_attention_heads", "n_head", "n_heads", "num_heads")
    f.kv_heads = _int(cfg, "num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num")
    if f.kv_heads is None and f.heads:
        f.kv_heads = 1 if cfg.get("multi_query") is True else f.heads
    f.head_dim = _int(cfg, "head_dim", "kv_channels")
    if f.head_dim is None and h and f.heads:
        f.head_dim = h // f.heads
    f.vocab = _int(cfg, "vocab_size", "padded_vocab_size")
    f.intermediate_size = _int(cfg, "intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size")
    if f.intermediate_size is None and h and f.model_type in ("gpt2", "gpt_neox", "gptj", "opt", "bloom"):
        f.intermediate_size = 4 * h
    f.experts = _int(cfg, "num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts",
                     "num_routed_experts")
    f.experts_per_token = _int(cfg, "num_experts_per_tok", "num_experts_per_token", "moe_topk", "top_k",
                               "num_selected_experts")
    if f.experts is not None and f.experts <= 1:
        f.experts, f.experts_per_token = None, None
    f.moe_intermediate_size = _int(cfg, "moe_intermediate_size", "expert_intermediate_size")
    shared_size = _int(cfg, "shared_expert_intermediate_size")
    n_shared = _int(cfg, "n_shared_experts", "num_shared_experts")
    if f.is_moe and f.moe_intermediate_size is None:
        f.moe_intermediate_size = f.intermediate_size  # Mixtral: intermediate_size is per expert
    f.shared_experts = n_shared if n_shared else (1 if shared_size else (0 if f.is_moe else None))
    f.mtp_layers = _int(cfg, "num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers")
    tie = cfg.get("tie_word_embeddings")
    f.tie_word_embeddings = tie if isinstance(tie, bool) else None
    f.dtype, f.quantization, f.bytes_per_weight, embed_bytes = _bytes_per_weight(cfg, notes)

    if not (f.layers and h and f.heads and f.vocab):
        missing = [n for n, v in (("layers", f.layers), ("hidden size", h), ("attention heads", f.heads),
                                  ("vocabulary", f.vocab)) if not v]
        notes.append("no parameter count: the config does not give " + ", ".join(missing))
        return f

    layers, heads, kvh, hd = f.layers, f.heads, f.kv_heads or f.heads, f.head_dim or h // f.heads
    full, linear = _layer_kinds(cfg, layers)
    f.full_attention_layers, f.linear_attention_layers = full, linear

    # Attention of one full-attention layer, and its KV cache per token (16-bit).
    kv_lora = _int(cfg, "kv_lora_rank")
    if kv_lora:
        f.attention = "mla"
        q_lora = _int(cfg, "q_lora_rank")
        rope = _int(cfg, "qk_rope_head_dim") or 64
        nope = _int(cfg, "qk_nope_head_dim") or 128
        v_dim = _int(cfg, "v_head_dim") or nope
        q = (h * q_lora + q_lora * heads * (nope + rope)) if q_lora else h * heads * (nope + rope)
        attn = q + h * (kv_lora + rope) + kv_lora * heads * (nope + v_dim) + heads * v_dim * h
        kv_token = (kv_lora + rope) * 2
    else:
        gate = 2 if cfg.get("attn_output_gate") or f.model_type in ("qwen3_next", "qwen3_5", "qwen3_5_moe",
                                                                    "qwen3_5_text", "qwen3_5_moe_text") else 1
        attn = h * heads * hd * gate + 2 * h * kvh * hd + heads * hd * h
        kv_token = 2 * kvh * hd * 2
        f.attention = "mqa" if kvh == 1 else ("mha" if kvh == heads else "gqa")
    if linear:
        f.attention = "hybrid-linear"
    # Gated DeltaNet (Qwen3-Next / Qwen3.5): q, k, v, z, b, a projections, conv, out; state per head
    # key_dim × value_dim in fp32.
    lk_heads = _int(cfg, "linear_num_key_heads") or 16
    lv_heads = _int(cfg, "linear_num_value_heads") or 32
    lk_dim = _int(cfg, "linear_key_head_dim") or 128
    lv_dim = _int(cfg, "linear_value_head_dim") or 128
    key_total, value_total = lk_heads * lk_dim, lv_heads * lv_dim
    conv = _int(cfg, "linear_conv_kernel_dim") or 4
    linear_attn = (h * (2 * key_total + 2 * value_total) + h * 2 * lv_heads + (2 * key_total + value_total) * conv
                   + value_total * h)
    f.kv_bytes_per_token = kv_token * full
    f.state_bytes_per_request = (lv_heads * lk_dim * lv_dim * 4 + (2 * key_total + value_total) * conv * 2) * linear \
        if linear else 0

    # MLPs.
    inter = f.intermediate_size or 4 * h
    dense_mlp = 3 * h * inter
    embed = f.vocab * h
    f.embedding_params = embed
    lm_head = 0 if f.tie_word_embeddings else embed
    attn_total = attn * full + linear_attn * linear
    experts, per_token = f.experts, f.experts_per_token
    if f.is_moe and experts and per_token:  # is_moe says both are set; the names say so to the type checker
        moe_layers = _moe_layer_count(cfg, layers)
        f.moe_layers = moe_layers
        expert = 3 * h * (f.moe_intermediate_size or inter)
        f.expert_params = expert
        shared = (3 * h * shared_size) if shared_size else (n_shared or 0) * expert
        router = h * experts + (h if shared_size else 0)
        mlp_total = moe_layers * (experts * expert + shared + router) + (layers - moe_layers) * dense_mlp
        active_mlp = moe_layers * (per_token * expert + shared + router) + (layers - moe_layers) * dense_mlp
        dense_read = attn_total + moe_layers * (shared + router) + (layers - moe_layers) * dense_mlp + embed
    else:
        mlp_total = active_mlp = layers * dense_mlp
        dense_read = attn_total + mlp_total + embed
    f.params = int(attn_total + mlp_total + embed + lm_head)
    f.active_params = int(attn_total + active_mlp + embed + (0 if f.tie_word_embeddings else embed))
    f.dense_params = int(dense_read)  # lm_head (or the tied embedding) once; the input lookup reads one row
    if f.bytes_per_weight is None:
        notes.append("dtype not given: 2 bytes per weight (bf16) assumed")
    return f


def dtype_bytes(f: ModelFacts) -> float:
    """Bytes per weight of the unquantized tensors (embeddings, lm_head): the dtype's, else 2."""
    return _DTYPE_BYTES.get((f.dtype or "").lower(), 2.0)


def load_model_config(path: str) -> ModelFacts:
    """ModelFacts from a config.json file, or a model directory / Hugging Face cache folder holding one
    (``models--ORG--NAME/snapshots/*/config.json``). Never downloads."""
    found = find_config_json(path)
    if found is None:
        raise InputError(f"{path}: no config.json there (a file, a model directory or a Hugging Face cache "
                         "folder models--ORG--NAME)")
    try:
        data = read_json(found, "model config.json", limit=MAX_CONFIG_JSON_BYTES)
    except OSError as exc:
        raise InputError(f"{found}: cannot read ({exc.strerror or exc})") from None
    return model_facts(data, found)


def load_draft_config(path: str) -> ModelFacts:
    """ModelFacts of a speculative draft head's own config.json (EAGLE/EAGLE3 heads: often one decoder
    layer and a reduced draft vocabulary, `draft_vocab_size`, for their lm_head). The lm_head is what a
    draft pass reads besides its layers, so the draft vocabulary stands in for the vocabulary."""
    found = find_config_json(path)
    if found is None:
        raise InputError(f"{path}: no config.json there for the draft model")
    try:
        data = read_json(found, "draft model config.json", limit=MAX_CONFIG_JSON_BYTES)
    except OSError as exc:
        raise InputError(f"{found}: cannot read ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{found}: not a JSON object")
    draft_vocab = data.get("draft_vocab_size")
    if isinstance(draft_vocab, int) and not isinstance(draft_vocab, bool) and draft_vocab > 0:
        data = {**data, "vocab_size": draft_vocab}
        facts = model_facts(data, found)
        facts.notes.append(f"draft vocabulary {draft_vocab} (draft_vocab_size) for its lm_head")
        return facts
    return model_facts(data, found)


def find_config_json(path: str) -> str | None:
    """config.json for a path: the file itself, DIR/config.json, or the newest snapshot of an HF cache
    folder (models--ORG--NAME). The collector finds a served model's folder on the host itself."""
    if os.path.isfile(path):
        return path
    if not os.path.isdir(path):
        return None
    direct = os.path.join(path, "config.json")
    if os.path.isfile(direct):
        return direct
    snaps = os.path.join(path, "snapshots")
    if os.path.isdir(snaps):
        candidates = [os.path.join(snaps, d, "config.json") for d in os.listdir(snaps)]
        candidates = [c for c in candidates if os.path.isfile(c)]
        if candidates:
            return max(candidates, key=lambda c: (os.path.getmtime(c), c))
    return None
