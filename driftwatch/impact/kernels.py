"""`kernel_choice`: kernel.* backends (attention, prefill/decode attention, sampling, MoE),
quant.method, kv.cache_dtype, model.dtype (and engine fields with no concept: a generic sentence).

Kernel speed depends on GPU generation, model shape and release: no sound general number, so the
ratio is None with a plain explanation of the direction.
"""
from __future__ import annotations

from typing import Any

from .base import Estimate, ImpactContext, LOW, show
from .kv_dtype import kv_dtype_estimate

_WHY = {
    "kernel.attention_backend": "attention kernels (flashinfer, fa3, triton, ...) differ by GPU generation and "
                                "model; decode speed can move from a few percent to ~2×, and some backends "
                                "disable features",
    "quant.method": "weight precision changes bytes read per token (fp8/int4 decode faster when memory-bound) "
                    "and can change output quality and speculative acceptance",
    "kv.cache_dtype": "an fp8 KV cache doubles the tokens that fit and reads fewer bytes per step, "
                      "at some accuracy cost; speed change is small and kernel-dependent",
    "kernel.sampling_backend": "the sampling kernel is a small part of a decode step",
    "kernel.moe_backend": "MoE GEMM kernels differ by GPU generation and expert shapes",
    "model.dtype": "activation/weight dtype changes the kernels used and bytes read per token",
}


def kernel_choice(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                  params: dict) -> Estimate:
    if name == "kv.cache_dtype":  # bytes per cached token: capacity at saturating load (kv_dtype.py)
        est = kv_dtype_estimate(name, baseline_value, current_value, ctx, params)
        if est is not None:
            return est
    why = _WHY.get(name, "a different kernel implementation; its speed depends on GPU, model and release")
    return Estimate(None, LOW, f"{name} {show(baseline_value)} → {show(current_value)}: {why}; no sound number "
                    f"— re-measure")
