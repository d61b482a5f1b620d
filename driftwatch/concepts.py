"""The engine-neutral vocabulary: what a setting controls, whatever an engine calls it.

Engines map their native fields to these names (SGLang's `tp_size` and vLLM's
`tensor_parallel_size` are both `parallel.tensor`). Rules and impact models speak concepts, so one
rule serves every engine; findings carry both the native key and the concept.

A concept's value is engine-neutral too: booleans say whether the feature is *on*
(`kv.prefix_cache: true`), so an engine whose flag is `--disable-radix-cache` binds it inverted.
"""
from __future__ import annotations

from dataclasses import dataclass

# name -> what it controls (shown by `driftwatch rules` and in docs; keep each line short).
CONCEPTS: dict[str, str] = {
    # speculative decoding
    "speculative.algorithm": "speculative decoding algorithm (EAGLE, EAGLE3, NGRAM, …); unset = off",
    "speculative.steps": "draft steps per target forward pass",
    "speculative.topk": "draft candidates per step (tree width)",
    "speculative.draft_tokens": "draft tokens verified per target forward pass",
    "speculative.draft_model": "draft model (path or name)",
    "speculative.draft_model_revision": "draft model revision",
    "speculative.accept_threshold_single": "accept a drafted token whose target probability reaches this (1 = exact)",
    "speculative.accept_threshold_acc": "drafted token accepted with probability min(1, p / this) (1 = exact)",
    "speculative.acceptance_method": "how drafted tokens are verified (rejection sampling, typical, block, …)",
    "speculative.typical_threshold": "typical acceptance: posterior probability threshold ε",
    "speculative.typical_alpha": "typical acceptance: entropy-scaled threshold factor δ",
    "speculative.synthetic_accept_length": "synthetic acceptance: the forced mean accept length (benchmarking)",
    # batching and KV cache
    "batch.max_running_requests": "most requests decoded at once",
    "batch.max_prefill_tokens": "most tokens prefilled in one batch",
    "kv.context_length": "longest request (prompt + output) accepted",
    "kv.memory_fraction": "share of GPU memory for weights + KV cache",
    "kv.max_total_tokens": "tokens the KV pool holds",
    "kv.page_size": "tokens per KV-cache page (block)",
    "kv.cache_dtype": "number format of the KV cache",
    "kv.prefix_cache": "prefix (radix) cache on",
    "prefill.chunk_size": "chunked-prefill chunk size in tokens",
    "prefill.chunked": "chunked prefill on (long prompts split across steps)",
    # CUDA graphs and compilation
    "cuda_graph.enabled": "CUDA graphs captured for decode",
    "cuda_graph.max_batch": "largest batch decoded with a CUDA graph",
    "cuda_graph.batch_sizes": "batch sizes captured as CUDA graphs",
    "compile.torch_compile": "torch.compile on",
    # parallelism
    "parallel.tensor": "tensor-parallel GPUs per replica",
    "parallel.pipeline": "pipeline-parallel stages",
    "parallel.data": "data-parallel replicas",
    "parallel.nodes": "machines (nodes) one server's GPUs span (multi-node launch)",
    "parallel.executor": "how the workers are started (vLLM: mp, ray, uni, external_launcher); Ray may span nodes",
    "parallel.expert": "expert-parallel size",
    "parallel.expert_enabled": "expert parallelism on (MoE experts spread over the GPUs, not tensor-split)",
    "parallel.dp_attention": "data-parallel attention on",
    "parallel.attention_data": "data-parallel attention groups inside the tensor-parallel group",
    # kernels and numerics
    "kernel.attention_backend": "attention kernel implementation",
    "kernel.prefill_attention_backend": "prefill attention kernel implementation",
    "kernel.decode_attention_backend": "decode attention kernel implementation",
    "kernel.sampling_backend": "sampling kernel implementation",
    "kernel.moe_backend": "MoE expert-GEMM kernel implementation",
    "quant.method": "weight quantization method",
    "model.dtype": "number format of weights and activations",
    # scheduler
    "scheduler.overlap": "CPU scheduling overlapped with GPU work",
    "scheduler.policy": "order in which waiting requests are scheduled",
    # the model and how it is served
    "model.path": "the target model (path or hub name)",
    "model.tokenizer": "tokenizer path",
    "model.revision": "model revision",
    "model.served_name": "model name clients ask for",
    "server.host": "address the server listens on",
    "server.port": "port the server listens on",
    "server.api_key": "API key clients must send",
    "server.log_level": "log verbosity",
}


@dataclass(frozen=True)
class Binding:
    """How one native field expresses a concept: the concept's name, and whether a true native
    value means the concept is *off* (`disable_cuda_graph` binds `cuda_graph.enabled` inverted)."""

    concept: str
    invert: bool = False

    def to_concept_value(self, value):
        """The concept's value for a native value (booleans flipped when inverted)."""
        if self.invert and isinstance(value, bool):
            return not value
        return value


def is_concept(name: str) -> bool:
    return name in CONCEPTS


def check_bindings(bindings: dict[str, Binding], origin: str) -> None:
    """Refuse a concept map that names a concept outside the vocabulary (a typo would silently
    stop every rule that speaks the concept from matching)."""
    unknown = sorted({b.concept for b in bindings.values() if b.concept not in CONCEPTS})
    if unknown:
        from .errors import CatalogError
        raise CatalogError(f"{origin}: unknown concept(s) {', '.join(unknown)} (see driftwatch/concepts.py)")
