"""`kernel_choice`: kernel.* backends (attention, prefill/decode attention, sampling, MoE),
quant.method, kv.cache_dtype, model.dtype (and engine fields with no concept: a generic sentence).

Kernel speed depends on GPU generation, model shape and release: no sound general number. A kernel or
compile switch (attention/MoE backend, torch.compile) gets ×1 with the public spread of such switches as
its 80 % interval (calibration.KERNEL_SWITCH_SPREAD, chosen leave-one-source-out on the calibration
cases: issue 35), so the comparison still answers with an honest "either way, up to ×hi"; the other
kernel-side settings keep no number.
"""
from __future__ import annotations

import math
from typing import Any

from . import calibration as cal
from .base import LOW, Estimate, ImpactContext, show
from .kv_dtype import kv_dtype_estimate

# Switches whose effect is a kernel implementation's speed: ×1 with the public spread as the interval.
KERNEL_SWITCHES = ("kernel.attention_backend", "kernel.prefill_attention_backend", "kernel.decode_attention_backend",
                   "kernel.moe_backend", "compile.torch_compile", "env.VLLM_ATTENTION_BACKEND",
                   "env.SGLANG_ATTENTION_BACKEND")

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
    if name in KERNEL_SWITCHES:
        return kernel_switch(f"{name} {show(baseline_value)} → {show(current_value)}: {why}")
    return Estimate(None, LOW, f"{name} {show(baseline_value)} → {show(current_value)}: {why}; no sound number "
                    f"— re-measure")


def kernel_switch(text: str, depends: str | None = "GPU, model and release") -> Estimate:
    """×1 within the public spread of kernel and compile switches (KERNEL_SWITCH_SPREAD): the direction is
    not known, the size is bounded by what such switches were measured to do."""
    s = cal.KERNEL_SWITCH_SPREAD
    lo, hi = math.exp(-s), math.exp(s)
    which = f"which way depends on {depends}" if depends else "either way"
    return Estimate(1.0, LOW, f"{text}; {which}: ×{lo:.2f}–{hi:.2f} (the spread "
                    f"measured for such switches in public before/after runs) — re-measure to know", None, (lo, hi))
