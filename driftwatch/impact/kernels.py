"""`kernel_choice`: attention backend, quantization, kv_cache_dtype, sampling/MoE backends.

Kernel speed depends on GPU generation, model shape and release: no sound general number, so the
ratio is None with a plain explanation of the direction.
"""
from __future__ import annotations

from typing import Any

from .base import Estimate, ImpactContext, LOW, show

_WHY = {
    "attention_backend": "attention kernels (flashinfer, fa3, triton, ...) differ by GPU generation and model; "
                         "decode speed can move from a few percent to ~2×, and some backends disable features",
    "quantization": "weight precision changes bytes read per token (fp8/int4 decode faster when memory-bound) "
                    "and can change output quality and speculative acceptance",
    "kv_cache_dtype": "an fp8 KV cache doubles the tokens that fit and reads fewer bytes per step, "
                      "at some accuracy cost; speed change is small and kernel-dependent",
    "sampling_backend": "the sampling kernel is a small part of a decode step",
    "moe_runner_backend": "MoE GEMM kernels differ by GPU generation and expert shapes",
    "dtype": "activation/weight dtype changes the kernels used and bytes read per token",
}


def kernel_choice(key: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                  params: dict) -> Estimate:
    why = _WHY.get(key, "a different kernel implementation; its speed depends on GPU, model and release")
    return Estimate(None, LOW, f"{key} {show(baseline_value)} → {show(current_value)}: {why}; no sound number "
                    f"— re-measure")
