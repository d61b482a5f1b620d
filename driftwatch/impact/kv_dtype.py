"""KV-cache dtype (kv.cache_dtype): bytes per cached token, read as capacity at saturating load.

An fp8 cache halves the bytes per token. Where the KV pool does not limit the running batch, only the
kernel path and the bytes read per step change (KV_FP8_KERNEL_RANGE around the roofline's step); where
it does (concurrency above the requests the pool holds: model facts, GPU and a stated concurrency tell),
the batch that fits grows with the bytes saved and the roofline prices the bigger batch. Without those
facts at a concurrency that may saturate, the interval holds both readings and the direction is unknown.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import calibration as cal, roofline
from .base import (
    AGGREGATE,
    LOW,
    Estimate,
    ImpactContext,
    as_float,
    concurrency_of,
    concurrency_stated,
    is_runtime,
    show,
    single_stream_known,
)

if TYPE_CHECKING:
    from ..facts.model import ModelFacts

POOL_FRACTION = 0.88  # kv.memory_fraction when the unit leaves it to the engine (SGLang/vLLM defaults ~0.85-0.9)
POOL_PRESSURE_CONCURRENCY = 8  # as capacity.py: below it, few requests fit in any pool that loads at all


def kv_bytes(value: Any) -> float | None:
    """Bytes per cached element: 16-bit for auto (the model's dtype), 1 for fp8/int8, 0.5 for fp4."""
    if value is None or is_runtime(value):
        return 2.0 if value is None else None
    v = str(value).strip().lower()
    if v in ("", "auto", "bf16", "bfloat16", "fp16", "float16", "half"):
        return 2.0
    if v.startswith(("fp8", "float8", "int8")):
        return 1.0
    if v.startswith(("fp4", "nvfp4", "mxfp4", "int4")):
        return 0.5
    if v in ("fp32", "float32", "float"):
        return 4.0
    return None


def kv_dtype_estimate(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                      params: dict) -> Estimate | None:
    """None when a dtype is not understood or both use the same width (the kernel_choice sentence then)."""
    b, c = kv_bytes(baseline_value), kv_bytes(current_value)
    if b is None or c is None or b == c:
        return None
    change = f"{name} {show(baseline_value)} → {show(current_value)}"
    k_lo, k_hi = cal.KV_FP8_KERNEL_RANGE
    if c > b:  # a wider cache: the kernel range read the other way
        k_lo, k_hi = 1.0 / k_hi, 1.0 / k_lo
    conc = concurrency_of(ctx)
    m = roofline.model_of(ctx)
    hw = roofline.hardware_for(ctx)
    words = f"{b:g} → {c:g} bytes per cached value"
    if single_stream_known(ctx) or (concurrency_stated(ctx) and conc < POOL_PRESSURE_CONCURRENCY):
        point = 1.0
        if m is not None:
            point = (roofline.forward_time(m, hw, conc, 1, shape=roofline.Pass(kv_bytes=b), params=params).total
                     / roofline.forward_time(m, hw, conc, 1, shape=roofline.Pass(kv_bytes=c), params=params).total)
        lo, hi = point * k_lo, point * k_hi
        return Estimate(point, LOW, f"{change}: {words}; at concurrency {conc} the pool does not limit the batch, so "
                        f"only the bytes read per step and the kernel path change: ×{lo:.2f}–{hi:.2f}, most likely "
                        f"×{point:.2f}", AGGREGATE if conc > 1 else None, (lo, hi))
    fits = _fits(ctx, m, hw, b, c) if concurrency_stated(ctx) else None
    if fits is None or m is None:  # _fits gives None without model facts
        grow = b / c
        lo, hi = (k_lo, grow) if grow > 1 else (grow, k_hi)
        return Estimate(1.0, LOW, f"{change}: {words}, so the pool holds ×{grow:g} the tokens; whether that "
                        f"raises the running batch depends on whether the pool limits it at this load: ×{lo:.2f} "
                        f"(it does not; the kernel path) to ×{hi:.2f} (it does), direction unknown — measure "
                        f"max_running_requests and KV usage under load, or give --model-config, --gpu and "
                        f"--concurrency", AGGREGATE, (lo, hi))
    n_b, n_c, per_b = fits
    b_base, b_cur = max(1, min(conc, n_b)), max(1, min(conc, n_c))
    t_b = roofline.forward_time(m, hw, b_base, 1, shape=roofline.Pass(kv_bytes=b), params=params).total
    t_c = roofline.forward_time(m, hw, b_cur, 1, shape=roofline.Pass(kv_bytes=c), params=params).total
    point = (b_cur / t_c) / (b_base / t_b)
    lo, hi = point * k_lo, point * k_hi
    return Estimate(point, LOW, f"{change}: {words}; the pool holds ~{n_b} → ~{n_c} requests of "
                    f"{cal.CONTEXT_TOKENS:.0f} tokens ({per_b / 1e6:.0f} MB each on the baseline), so at concurrency "
                    f"{conc} the server decodes {b_base} → {b_cur} at once; a step takes {t_b * 1e3:.1f} → "
                    f"{t_c * 1e3:.1f} ms on {roofline.hardware_words(m, hw)}: ×{lo:.2f}–{hi:.2f}, most likely "
                    f"×{point:.2f} (request length assumed)", AGGREGATE, (lo, hi))


def _fits(ctx: ImpactContext, m: ModelFacts | None, hw: roofline.Hardware, b: float,
          c: float) -> tuple[int, int, float] | None:
    """Requests of CONTEXT_TOKENS the pool holds with each width, and one request's baseline bytes;
    None without model facts, a known GPU or a KV size."""
    if m is None or not hw.known or not m.kv_bytes_per_token:
        return None
    frac = as_float((ctx.current or {}).get("kv.memory_fraction")) if isinstance(ctx.current, dict) else None
    frac = frac if frac is not None and 0 < frac <= 1 else POOL_FRACTION
    pp = roofline.side_int(ctx, "current", "parallel.pipeline")
    pool = frac * hw.gpu.memory_gb * 1e9 - roofline.weights_per_gpu_gb(m, hw.tp, pp) * 1e9
    if pool <= 0:
        return None
    kv_split = 1 if m.attention == "mla" else min(hw.tp, m.kv_heads or hw.tp)
    per = cal.CONTEXT_TOKENS * m.kv_bytes_per_token / kv_split / pp
    state = (m.state_bytes_per_request or 0) / hw.tp / pp
    return int(pool // (per * b / 2 + state)), int(pool // (per * c / 2 + state)), per * b / 2 + state
