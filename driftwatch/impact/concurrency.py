"""`concurrency_cap`: batch.max_running_requests (the engine's cap on requests decoded at once)
against the client concurrency.

The running batch is b = min(cap, concurrency). Aggregate throughput ∝ b / cost(k, b) with the
baseline's speculative configuration (roofline step cost, expected_tokens.step_cost), i.e. about
linear in b while b·tokens ≪ KNEE_TOKENS, sub-linear beyond. Together with `speculative_steps`
(evaluated at the current batch) the two ratios multiply to the joint change exactly.
"""
from __future__ import annotations

from typing import Any

from . import calibration as cal, roofline
from .base import (
    AGGREGATE,
    CAPACITY,
    HIGH,
    LOW,
    MEDIUM,
    SINGLE,
    Estimate,
    ImpactContext,
    as_int,
    concurrency_of,
    is_runtime,
    param,
    show,
    side_metrics,
    side_runtime,
    unknown_estimate,
)
from .expected_tokens import step_cost
from .speculative import MAX_RUNNING, MAX_RUNNING_METRIC, SpecSide, physical_step, read_side

CONCEPT = MAX_RUNNING  # "batch.max_running_requests"
METRIC = MAX_RUNNING_METRIC  # "max_running_requests": the cap as measured (start-up log, server info)


def _cap(ctx: ImpactContext, side: str, name: str, value: Any) -> tuple[int | None, str]:
    """(cap, how it is known). Unknown start-up values fall back to the measured metric."""
    if value is not None and not is_runtime(value, name, side_runtime(ctx, side)):
        v = as_int(value)
        return (v, "set") if v is not None and v >= 1 else (None, f"unusable value {value!r}")
    m = as_int(side_metrics(ctx, side).get(METRIC))
    if m is not None and m >= 1:
        return m, "measured at start-up"
    return None, "computed at start-up"


def concurrency_cap(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                    params: dict) -> Estimate:
    c = concurrency_of(ctx)
    base_cap, base_how = _cap(ctx, "baseline", name, baseline_value)
    cur_cap, cur_how = _cap(ctx, "current", name, current_value)
    if base_cap is None or cur_cap is None:
        which = "baseline" if base_cap is None else "current"
        how = base_how if base_cap is None else cur_how
        if c == 1 and "unusable" not in how:
            return Estimate(1.0, HIGH, f"the {which} cap is {how}, but any cap ≥ 1 serves one stream", SINGLE)
        return unknown_estimate(f"{CONCEPT} {show(baseline_value)} → {show(current_value)}: the {which} "
                                f"cap is {how}; its effect at concurrency {c} is unknown (pass the cap the "
                                f"server reports at start-up as --{which}-metric {METRIC}=N)", AGGREGATE)
    if base_cap >= c and cur_cap >= c:
        return Estimate(1.0, HIGH, f"no effect at concurrency {c}: both caps ({base_cap} → {cur_cap}) admit "
                        f"every request", CAPACITY)
    b_base, b_cur = min(base_cap, c), min(cur_cap, c)
    knee = param(params, "knee_tokens", cal.KNEE_TOKENS)
    spec = read_side(ctx, "baseline", name, baseline_value)
    m = roofline.model_of(ctx)
    if m is not None:
        hw = roofline.hardware_for(ctx)
        sp = spec if isinstance(spec, SpecSide) else SpecSide(None)
        t_base = physical_step(m, hw, sp, ctx, "baseline", params, b_base)[0]
        t_cur = physical_step(m, hw, sp, ctx, "current", params, b_cur)[0]
        ratio = (b_cur / t_cur.total) / (b_base / t_base.total)
        fewer = b_cur < b_base
        conf = MEDIUM if hw.known else LOW
        assumed = "" if hw.known else " (pass --gpu NAME[xN] for the host's GPUs)"
        return Estimate(ratio, conf,
                        f"at concurrency {c} the server decodes {b_base} → {b_cur} requests at once (caps {base_cap} → "
                        f"{cur_cap}); on {roofline.hardware_words(m, hw)}, a step takes {t_base.total * 1e3:.1f} → "
                        f"{t_cur.total * 1e3:.1f} ms, so aggregate throughput (requests ÷ step time) goes ×{ratio:.2f}"
                        f"{'; queued requests wait longer' if fewer else ''}{assumed}. Details: roofline at batch "
                        f"{b_base}: {t_base.describe()}; at batch {b_cur}: {t_cur.describe()}", AGGREGATE)
    if isinstance(spec, str) or knee <= 0:
        k, tokens, d, how = 0, 1, 0.0, "plain decoding assumed"
    else:
        k, tokens = (spec.steps, spec.tokens) if spec.on else (0, 1)
        d = cal.DRAFT_COST.get(spec.algorithm or "", cal.DEFAULT_DRAFT_COST) if spec.on else 0.0
        how = f"{tokens} tokens/request/step"
    if knee <= 0:
        knee = cal.KNEE_TOKENS
    agg = lambda b: b / step_cost(k, b, tokens, d, knee)  # noqa: E731
    ratio = agg(b_cur) / agg(b_base)
    return Estimate(ratio, MEDIUM,
                    f"at concurrency {c} the running batch goes {b_base} → {b_cur} (caps {base_cap} → {cur_cap}); "
                    f"aggregate ∝ batch / step cost ({how}, knee {knee:g} tokens) ⇒ ×{ratio:.2f}; "
                    f"queued requests wait longer", AGGREGATE)
