"""`environment`: env.NAME keys (CUDA_VISIBLE_DEVICES, NCCL_*, CUDA_HOME, ...), host.gpus.

Reads the tensor-parallel size of each side as the concept parallel.tensor (any engine)."""
from __future__ import annotations

from typing import Any

from .base import HIGH, MEDIUM, NONE_DIM, STABILITY, Estimate, ImpactContext, as_int, show, side_value, unknown_estimate
from .roofline import ray_may_span

# Environment variables that cannot change a running engine's speed.
NO_IMPACT = {"TZ", "LANG", "LANGUAGE", "TERM", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "HOME", "USER",
             "LOGNAME", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "SGLANG_LOG_LEVEL", "VLLM_LOGGING_LEVEL",
             "NO_COLOR"}

TENSOR = "parallel.tensor"
# Variables that pick the attention kernels (vLLM ≤ 0.11; later releases take --attention-backend).
ATTENTION_ENV = {"VLLM_ATTENTION_BACKEND", "SGLANG_ATTENTION_BACKEND"}

_NCCL_WHY = {
    "NCCL_P2P_DISABLE": "GPU-to-GPU peer copies on/off: with P2P disabled all-reduces go through host memory "
                        "(slower, but sometimes needed on PCIe boxes where P2P hangs or is broken)",
    "NCCL_IB_DISABLE": "InfiniBand transport on/off (multi-node traffic)",
    "NCCL_P2P_LEVEL": "which topology distance still uses P2P copies",
    "NCCL_SHM_DISABLE": "shared-memory transport on/off",
    "NCCL_ALGO": "all-reduce algorithm choice",
    "NCCL_PROTO": "NCCL protocol choice",
}


def _devices(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, (str, int)):
        return None
    return [d.strip() for d in str(value).split(",") if d.strip()]


def _tp(ctx: ImpactContext, side: str) -> int | None:
    return as_int(side_value(ctx, side, TENSOR, "", None))


def environment(key: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                params: dict) -> Estimate:
    name = key[4:] if isinstance(key, str) and key.startswith("env.") else str(key)
    change = f"{name} {show(baseline_value)} → {show(current_value)}"
    if name in NO_IMPACT or name.startswith("LC_"):
        return Estimate(1.0, HIGH, f"{name} does not affect throughput", NONE_DIM)
    if name == "CUDA_VISIBLE_DEVICES":
        b, c = _devices(baseline_value), _devices(current_value)
        if b == c and b is not None:
            return Estimate(1.0, HIGH, f"{name}: same devices {','.join(b)}", NONE_DIM)
        tp = _tp(ctx, "current")
        if c is not None and tp is not None and len(c) < tp:
            if ray_may_span(ctx.current if isinstance(ctx.current, dict) else {}):
                return unknown_estimate(f"{change}: {len(c)} visible GPU(s) for tp {tp} on this node: vLLM's Ray "
                                        f"executor must place the other workers on other nodes; on one node the "
                                        f"server will not start", STABILITY)
            return unknown_estimate(f"{change}: {len(c)} visible GPU(s) for tp {tp}: the server will not start",
                                    STABILITY)
        if b is not None and c is not None and len(b) != len(c):
            return unknown_estimate(f"{change}: GPU count {len(b)} → {len(c)}; what matters is the tp/dp layout "
                                    f"using them (see parallel.tensor/parallel.data)")
        return unknown_estimate(f"{change}: a different device set (other PCIe/NVLink topology, GPUs shared "
                                f"with other work?); re-measure")
    if name.startswith("NCCL_"):
        tb, tc = _tp(ctx, "baseline"), _tp(ctx, "current")
        if tb == 1 and tc == 1:
            return Estimate(1.0, MEDIUM, f"{change}: tp 1 on both sides, NCCL collectives are not on the "
                            f"decode path", NONE_DIM)
        why = _NCCL_WHY.get(name, "changes how GPUs talk to each other")
        return unknown_estimate(f"{change}: {why}; matters with tp/dp > 1, no sound number")
    if name in ATTENTION_ENV:  # an attention backend chosen by the environment: a kernel switch
        from .kernels import kernel_switch
        return kernel_switch(f"{change}: the attention kernels are chosen by this variable")
    if name == "CUDA_HOME":
        return unknown_estimate(f"{change}: JIT-compiled kernels (flashinfer, deep_gemm, triton) build against "
                                f"this toolkit; a different CUDA can change kernels or fail at start-up", STABILITY)
    if name in ("PATH", "LD_LIBRARY_PATH"):
        return unknown_estimate(f"{change}: may select different CUDA tools or libraries at start-up")
    return unknown_estimate(f"{change}: no model for this environment variable")
