"""Speculative decoding: number of draft steps (`speculative_steps`) and on/off/algorithm
(`speculative_toggle`).

Both read the whole speculative configuration of each side from the context (the concepts
speculative.algorithm, .steps, .topk, .draft_tokens and model.path), so one estimate covers a steps
change that drags topk/draft along, whatever the engine calls those fields. Throughput per stream
∝ E / cost (see expected_tokens.py); assumptions and calibration in docs/impact.md.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from . import calibration as cal, roofline, uncertainty
from .base import (
    AGGREGATE,
    HIGH,
    LOW,
    MEDIUM,
    SINGLE,
    Estimate,
    ImpactContext,
    as_float,
    as_int,
    concurrency_of,
    concurrency_stated,
    engine_label,
    min_conf,
    param,
    show,
    side_metrics,
    unknown_estimate,
)
from .expected_tokens import alpha_from_accept_length, expected_tokens, expected_tokens_by_position, step_cost
from .specside import (
    ALGO as ALGO,
    DRAFT,
    STEPS,
    TOPK,
    SpecSide,
    measured_accept_length,
    normalise_algorithm as normalise_algorithm,
    read_side,
)

MAX_RUNNING = "batch.max_running_requests"  # concept
MAX_RUNNING_METRIC = "max_running_requests"  # metric of the same meaning (start-up log, server info)
# The interval of an estimate that is bookkeeping, not a model: counted in another finding, or a
# setting the engine overrides. Exactly 1, so it does not widen the comparison's interval.
NO_CHANGE = (1.0, 1.0)


@dataclass
class _Spec:
    """One speculative comparison: both sides, the context and the model's parameters."""

    base: SpecSide
    cur: SpecSide
    ctx: ImpactContext
    params: dict
    decay: float
    tree: float

    @property
    def sides(self) -> dict[str, SpecSide]:
        return {"baseline": self.base, "current": self.cur}

    @property
    def dim(self) -> str:
        return SINGLE if concurrency_of(self.ctx) <= 1 else AGGREGATE


@dataclass
class _Acceptance:
    """Per side: the accept length measured, α, the tokens a step yields E (and E with a shallow
    measurement carried deeper, the floor), where α came from, and the notes for the operator."""

    measured: dict[str, float | None]
    alphas: dict[str, float] = field(default_factory=dict)
    expected: dict[str, float] = field(default_factory=dict)
    shallow: dict[str, float] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class _Costs:
    """The step cost of both sides: from the roofline (`physical`) or the knee prior."""

    baseline: float
    current: float
    physical: dict | None = None

    def ratio(self, expected: dict) -> float:
        return (expected["current"] / self.current) / (expected["baseline"] / self.baseline)


def estimate_speculation(base: SpecSide, cur: SpecSide, ctx: ImpactContext, params: dict) -> Estimate:
    """Ratio (E_cur / cost_cur) / (E_base / cost_base) at the current effective batch."""
    decay = param(params, "decay", cal.DECAY)
    knee = param(params, "knee_tokens", cal.KNEE_TOKENS)
    if not (0.0 < decay <= 1.5) or knee <= 0:
        return unknown_estimate(f"unusable model parameters decay={decay} knee_tokens={knee}")
    spec = _Spec(base, cur, ctx, params, decay, param(params, "tree_exponent", cal.TREE_EXPONENT))
    batch = roofline.decode_batch(ctx)
    acc = _acceptance(spec)
    if isinstance(acc, Estimate):
        return acc
    costs = _step_costs(spec, batch, knee)
    ratio = costs.ratio(acc.expected)
    if acc.shallow:
        shallow_ratio = costs.ratio({**acc.expected, **acc.shallow})
        acc.notes = [n.replace("{shallow_ratio:.2f}", f"{shallow_ratio:.2f}") for n in acc.notes]
    unsettled = _sign_unsettled(spec, acc, costs, ratio, batch)
    if unsettled is not None:
        return unsettled
    srcs = {acc.source[s] for s, sp in spec.sides.items() if sp.on}
    conf = _confidence(spec, srcs, batch)
    a_part = _accept_words(spec, acc, srcs)
    e_part = (f"{base.label()}={acc.expected['baseline']:.2f} → {cur.label()}={acc.expected['current']:.2f} "
              f"tokens per target step")
    if costs.physical is not None:
        return _physical_estimate(spec, acc, costs, (ratio, conf, batch), f"{a_part}; {e_part}")
    c_part = (f"step cost {costs.baseline:.3f} → {costs.current:.3f} (drafting {base.steps} → {cur.steps} passes, "
              f"verifying {base.tokens if base.on else 1} → {cur.tokens if cur.on else 1} tokens/request at batch "
              f"{batch})")
    if getattr(ctx, "model_facts", None) is None:
        acc.notes.append("model facts unknown: step cost from the default roofline knee; --model-config "
                         "config.json gives the model's own")
    said = f" ({'; '.join(acc.notes)})" if acc.notes else ""
    interval = _interval(spec, acc, costs, ratio, None)
    return Estimate(ratio, conf, f"{_prior_words(base, cur, acc.expected, costs.current / costs.baseline, ratio)}"
                    f"{said}. Details: {a_part}; {e_part}; {c_part} ⇒ ×{ratio:.2f}", spec.dim, interval)


def _acceptance(spec: _Spec) -> _Acceptance | Estimate:
    """α and E per side: from its own accept length, else from the other side's (same algorithm), else the
    prior; an Estimate (no number) when a side has neither a measurement nor a sound prior."""
    ctx, params, decay, tree, sides = spec.ctx, spec.params, spec.decay, spec.tree, spec.sides
    acc = _Acceptance({s: (measured_accept_length(ctx, s) if sp.on else None) for s, sp in sides.items()},
                      notes=spec.base.notes + spec.cur.notes)
    for s, sp in sides.items():
        m = acc.measured[s]
        if sp.on and m is not None:
            acc.alphas[s] = alpha_from_accept_length(m, sp.steps, decay, sp.topk, tree_exp=tree)
            e_max = expected_tokens(1.0, sp.steps, decay, sp.topk, tree)
            if m > e_max:
                acc.notes.append(f"{s} accept length {m:g} exceeds the {e_max:g} possible at {sp.steps} steps: "
                                 "clamped")
            acc.expected[s] = min(m, e_max)
            acc.source[s] = "measured"
    for s, sp in sides.items():
        if not sp.on:
            acc.expected[s] = 1.0
            acc.source[s] = "off"
            continue
        if s in acc.expected:
            continue
        other = "current" if s == "baseline" else "baseline"
        prior = param(params, "alpha_prior", -1.0)
        if prior < 0:
            prior = prior_alpha(ctx, s, sp)
        if other in acc.alphas and sides[other].algorithm == sp.algorithm:
            alpha, acc.source[s] = acc.alphas[other], "transferred"
            seen = sides[other].steps
            if sp.steps > seen and 0.0 <= prior <= 1.0 and prior > alpha:
                # A shallow measurement observes only the first `seen` draft positions: the same
                # drafter accepts as measured there, and the deeper positions (never observed) get
                # the prior — the seeds (000, 001) show MTP/EAGLE acceptance does not fall with
                # depth, so the measured α is their floor, given as the other bound.
                acc.shallow[s] = expected_tokens(alpha, sp.steps, decay, sp.topk, tree)
                acc.expected[s] = expected_tokens_by_position(
                    [alpha if i < seen else prior for i in range(sp.steps)], decay, sp.topk, tree)
                acc.notes.append(f"an accept length measured at {seen} step{'s' if seen != 1 else ''} observes "
                                 f"draft position{'s' if seen != 1 else ''} 1{'–' + str(seen) if seen > 1 else ''} "
                                 f"only: the {s} side's deeper positions use the {_prior_key(ctx, s, sp)} prior "
                                 f"α {prior:.2f} (the measured α {alpha:.2f} throughout would give "
                                 "×{shallow_ratio:.2f}); measure the accept length on the " + s + " side to pin it")
                alpha, acc.source[s] = prior, "prior"
        else:
            if not (0.0 <= prior <= 1.0):
                return unknown_estimate(
                    f"no accept length measured for {sp.algorithm} and no sound prior for its acceptance "
                    f"(workload-dependent); measure accept length on the {s} side", spec.dim)
            alpha, acc.source[s] = prior, "prior"
        acc.alphas.setdefault(s, alpha)
        if s not in acc.expected:
            acc.expected[s] = expected_tokens(alpha, sp.steps, decay, sp.topk, tree)
    return acc


def _step_costs(spec: _Spec, batch: int, knee: float) -> _Costs:
    physical = _physical_costs(spec.base, spec.cur, spec.ctx, spec.params, batch)
    if physical is not None:
        return _Costs(physical["baseline"].total, physical["current"].total, physical)

    def cost(sp: SpecSide) -> float:
        d = param(spec.params, "draft_cost", cal.DRAFT_COST.get(sp.algorithm or "", cal.DEFAULT_DRAFT_COST))
        return step_cost(sp.steps if sp.on else 0, batch, sp.tokens if sp.on else 1, d if sp.on else 0.0, knee)

    return _Costs(cost(spec.base), cost(spec.cur))


def _sign_unsettled(spec: _Spec, acc: _Acceptance, costs: _Costs, ratio: float, batch: int) -> Estimate | None:
    """The sign must not rest on an assumed acceptance: where a prior decides, the same step costs at a weak
    drafter's acceptance (ALPHA_FLOOR, chain only: extra tree candidates assumed useless; or the shallow
    measurement, which is the floor of deeper positions) must point the same way; else direction unknown."""
    if costs.physical is None:
        return None
    sides, source = spec.sides, acc.source
    low = dict(acc.expected)
    from_prior = {s for s in sides if source.get(s) == "prior"}
    # an α carried over from a side that itself rests on the prior falls with it (one drafter)
    from_prior |= {s for s in sides if source.get(s) == "transferred"
                   and source.get("current" if s == "baseline" else "baseline") == "prior"}
    for s, sp in sides.items():
        if s in from_prior and sp.on:
            floor = cal.ALPHA_FLOOR_BY_PRIOR.get(_prior_key(spec.ctx, s, sp).split(".")[0], cal.ALPHA_FLOOR)
            low[s] = acc.shallow.get(s) or expected_tokens(min(floor, acc.alphas[s]), sp.steps, spec.decay, 1)
    ratio_low = costs.ratio(low)
    if (ratio - 1.0) * (ratio_low - 1.0) < 0:
        return _direction_unknown(spec.base, spec.cur, costs.physical, acc.expected, low, (ratio, ratio_low), batch,
                                  spec.dim)
    return None


def _confidence(spec: _Spec, srcs: set[str], batch: int) -> str:
    if srcs == {"measured"}:
        conf = HIGH if batch <= 8 else MEDIUM
    elif "prior" in srcs:
        conf = LOW
    else:
        conf = MEDIUM
    base, cur = spec.base, spec.cur
    if base.notes or cur.notes or base.topk > 1 or cur.topk > 1 or spec.decay != 1.0:
        conf = min_conf(conf, LOW)
    return conf


def _accept_words(spec: _Spec, acc: _Acceptance, srcs: set[str]) -> str:
    """Where the acceptance came from, in words (the details' first part)."""
    sides = spec.sides
    if srcs == {"measured"} and len(srcs) and all(sp.on for sp in sides.values()):
        return f"measured accept lengths {acc.measured['baseline']:g} → {acc.measured['current']:g} tokens/step"
    m = [s for s in sides if acc.source.get(s) == "measured"]
    if m:
        s = m[0]
        return (f"accept length {acc.measured[s]:g} measured on the {s} side at {sides[s].steps} "
                f"step{'s' if sides[s].steps != 1 else ''} ⇒ α≈{acc.alphas[s]:.2f}")
    if "prior" in srcs:
        a = next(acc.alphas[s] for s in sides if acc.source.get(s) == "prior")
        return f"no accept length measured: α prior {a:.2f}"
    return "speculation off on both sides"


def _physical_estimate(spec: _Spec, acc: _Acceptance, costs: _Costs, judged: tuple[float, str, int],
                       details: str) -> Estimate:
    """The estimate from the roofline's step costs: the lead sentence, the operator's notes, the details.
    `judged`: (ratio, confidence, batch)."""
    ratio, conf, batch = judged
    base, cur, ctx, physical = spec.base, spec.cur, spec.ctx, costs.physical
    assert physical is not None
    notes = acc.notes
    checked, off, gap = _measured_step(ctx, base, acc.expected["baseline"], acc.source.get("baseline"), physical,
                                       spec.params)
    interval = _interval(spec, acc, costs, ratio, gap)
    lead, terms = _physical_words(base, cur, physical, acc.expected, ratio, batch,
                                  uncertainty.direction(ratio, interval) == uncertainty.UNKNOWN)
    if not physical["hardware"].known:
        notes.append(f"GPU unknown: {physical['hardware'].gpu.name} assumed (pass --gpu NAME[xN])")
        conf = min_conf(conf, LOW)
    pool = _state_pool_note(physical["model"], base, cur, ctx)
    if pool:
        notes.append(pool)
    for s_name, sp in spec.sides.items():
        own = draft_facts(ctx, s_name) if sp.on and sp.algorithm in ("EAGLE", "EAGLE3") else None
        if own is not None:
            notes.append(f"{s_name} draft head from its own config.json: {own.layers} layer"
                         f"{'s' if own.layers != 1 else ''}, hidden {own.hidden_size}, vocabulary {own.vocab}")
    if off:
        notes.append(off)
    terms += checked
    # what the operator must know (assumptions, what to measure) stays beside the sentence;
    # α, E(k) and the roofline terms go to the details
    said = f" ({'; '.join(notes)})" if notes else ""
    return Estimate(ratio, conf, f"{lead}{said}. Details: {details}; {terms}", spec.dim, interval)


def _prior_words(base: SpecSide, cur: SpecSide, expected: dict, cost_growth: float, ratio: float) -> str:
    """The lead sentence without model facts: what the drafting change does to the tokens a step
    yields and to its cost, then the number."""
    kb, kc = (base.steps if base.on else 0), (cur.steps if cur.on else 0)
    tb, tc = (base.tokens if base.on else 1), (cur.tokens if cur.on else 1)
    chain = base.topk == 1 and cur.topk == 1
    what = (f"{kb} → {kc} drafted tokens per step" if chain and kb != kc
            else f"verifying {tb} → {tc} tokens per request per step")
    same_yield = abs(expected["current"] - expected["baseline"]) < 0.005
    cost = ("at about the same step cost" if abs(cost_growth - 1.0) < 0.05 and not same_yield
            else f"and a step costs ×{cost_growth:.2f}")
    return (f"{what}: a step yields {expected['baseline']:.2f} → {expected['current']:.2f} tokens per request "
            f"{cost}, so ×{ratio:.2f}")


# How far the roofline's step may stray from the baseline server's measured one before the sentence
# says the ratio is rough (a judgement: seed 000's step, which rests on an assumed acceptance, is 33 % off,
# docs/impact.md).
MEASURED_STEP_TOLERANCE = 0.5


def _measured_step(ctx: ImpactContext, base: SpecSide, e_base: float, e_source: str | None, physical: dict,
                   params: dict) -> tuple[str, str | None, tuple[float, float] | None]:
    """The baseline server's own step time where its throughput was measured at a known batch:
    running requests × tokens per step ÷ tok/s. Measured beats assumed, but one number cannot say
    which roofline term is off, so it does not move the ratio: it is given beside the roofline's
    step (details), and in the sentence when the two differ by more than MEASURED_STEP_TOLERANCE.
    Returns (details text, note or None, (measured s, roofline s) when they differ by more than
    MEASURED_STEP_TOLERANCE, else None: the interval then holds both readings of the gap)."""
    metrics = side_metrics(ctx, "baseline")
    tput = as_float(metrics.get("throughput"))
    conc = as_int(metrics.get("concurrency"))
    if conc is None and concurrency_stated(ctx):
        conc = concurrency_of(ctx)
    if tput is None or tput <= 0 or conc is None or conc < 1:
        return "", None, None
    batch = roofline.decode_batch(ctx, "baseline", conc)
    measured = batch * e_base / tput
    model_s = physical_step(physical["model"], physical["hardware"], base, ctx, "baseline", params, batch)[0].total
    how = {"measured": "measured", "off": "no drafting"}.get(e_source or "", "assumed")
    detail = (f"; the baseline server's measured step ≈ {measured * 1e3:.1f} ms ({tput:g} tok/s over {batch} "
              f"request{'s' if batch != 1 else ''} at {e_base:.2f} tokens per step, {how}) against the roofline's "
              f"{model_s * 1e3:.1f} ms at that batch")
    off = model_s / measured - 1.0
    if abs(off) <= MEASURED_STEP_TOLERANCE:
        return detail, None, None
    note = (f"the roofline's step is {abs(off) * 100:.0f} % {'longer' if off > 0 else 'shorter'} than the "
            f"baseline server's measured one, so the interval holds both readings of the gap")
    return detail, note, (measured, model_s)


def _state_pool_note(m, base: SpecSide, cur: SpecSide, ctx: ImpactContext) -> str | None:
    """On a hybrid (linear-attention) model each running request keeps one recurrent state per
    verified draft token for rollback (SGLang's intermediate SSM states), so more draft tokens fit
    fewer requests in the same pool. Said, not charged: the pool size is the engine's start-up choice
    (seed 004: 26 → 21 requests for 2 → 3 draft tokens). Nothing to say once the server reported the
    current cap (start-up log, --probe, or a max_running_requests metric): the batch then counts it.
    A cap set in the unit is only an upper limit; the pool may fit fewer."""
    if not m.linear_attention_layers or concurrency_of(ctx) <= 1:
        return None
    tb, tc = (base.tokens if base.on else 0), (cur.tokens if cur.on else 0)
    reported = MAX_RUNNING in getattr(ctx, "current_reported", ()) or \
        as_int(side_metrics(ctx, "current").get(MAX_RUNNING_METRIC)) is not None
    if tb == tc or reported:
        return None
    fits = (1 + tb) / (1 + tc)
    effect = ("if it limits the running batch, throughput is lower than this estimate" if fits < 1 else
              "if it limited the baseline's batch, the current server may run more at once and do better than "
              "this estimate")
    return (f"on this hybrid model each running request also holds {1 + tc} instead of {1 + tb} recurrent states "
            f"(one per verified draft token, for rollback), so the state pool fits ~{fits:.2f}× the requests: "
            f"{effect} — pass the max_running_requests each server reports at start-up "
            f"(--baseline-metric/--current-metric max_running_requests=N)")


def _prior_key(ctx: ImpactContext, side: str, sp: SpecSide) -> str:
    """The ALPHA_PRIOR entry for a side: "MTP" for the model's own multi-token-prediction head (EAGLE
    or NEXTN with no draft model, on a model whose config.json ships MTP layers), else the algorithm."""
    m = roofline.model_of(ctx)
    if sp.algorithm == "EAGLE" and m is not None and m.mtp_layers and not _draft_model(ctx, side):
        return "MTP"
    return sp.algorithm or ""


def _family(ctx: ImpactContext, side: str, sp: SpecSide) -> str:
    """The drafter family whose acceptance range applies (calibration.ALPHA_RANGE): the model's own
    MTP head by model family ("MTP.deepseek", "MTP.qwen", "MTP"), an external head of unknown
    provenance ("SELF": a local path, as self-trained heads are), else the algorithm."""
    key = _prior_key(ctx, side, sp)
    if key == "MTP":
        m = roofline.model_of(ctx)
        mt = str(getattr(m, "model_type", None) or "").lower()
        for fam, types in cal.MTP_FAMILY.items():
            if mt in types:
                return f"MTP.{fam}"
        return "MTP"
    draft = _draft_model(ctx, side)
    if key == "EAGLE" and not draft and roofline.model_of(ctx) is None:
        return "MTP"  # EAGLE with no draft model is the model's own head (NEXTN/MTP), config.json unread
    if key in ("EAGLE", "EAGLE3") and isinstance(draft, str) and draft.strip().startswith(("/", ".", "~")):
        return "SELF"
    return key


def prior_alpha(ctx: ImpactContext, side: str, sp: SpecSide) -> float:
    """The point α prior of a side's drafter (-1 when there is none: n-gram)."""
    fam = _family(ctx, side, sp)
    if fam in cal.ALPHA_PRIOR_FAMILY:
        return cal.ALPHA_PRIOR_FAMILY[fam]
    key = _prior_key(ctx, side, sp)
    if fam == "MTP" and key == "EAGLE":  # the model's own head, its config.json unread: not an EAGLE-1 head
        return cal.ALPHA_PRIOR_FAMILY["MTP.unread"]
    return cal.ALPHA_PRIOR.get(key, -1.0)


def alpha_range(ctx: ImpactContext, side: str, sp: SpecSide, point: float) -> tuple[float, float]:
    """(lo, hi) of the side's acceptance, holding the point."""
    fam = _family(ctx, side, sp)
    lo, hi = cal.ALPHA_RANGE.get(fam) or cal.ALPHA_RANGE.get(fam.split(".")[0]) or (point, point)
    return min(lo, point), max(hi, point)


def _decay_low(ctx: ImpactContext, side: str, sp: SpecSide) -> float:
    fam = _family(ctx, side, sp)
    return cal.DECAY_LOW.get(fam, cal.DECAY_LOW.get(fam.split(".")[0], 1.0))


def _interval(spec: _Spec, acc: _Acceptance, costs: _Costs, ratio: float, gap) -> tuple[float, float]:
    """The 80 % interval of the ratio (docs/impact.md "Intervals"): the tokens a step yields at the
    low and the high end of each side's acceptance (the drafter family's α range, decay with depth,
    the tree gain; a measured accept length ± its window), both sides at the same end when one
    drafter serves both; times the step-cost change ρ = cost_c ÷ cost_b at ρ^(1 ± u) (u by what the
    cost rests on), at the other link when the GPU is unknown, at a larger batch when nobody stated
    the concurrency, and at both readings of a measured step the roofline misses by more than half;
    widened by SPEC_BASE_SPREAD."""
    base, cur, ctx, params, decay, tree = spec.base, spec.cur, spec.ctx, spec.params, spec.decay, spec.tree
    source, alphas, expected = acc.source, acc.alphas, acc.expected
    physical, cost_b, cost_c = costs.physical, costs.baseline, costs.current
    sides = {"baseline": base, "current": cur}
    t_lo, t_hi = cal.TREE_EXPONENT_RANGE
    t_lo, t_hi = min(t_lo, tree), max(t_hi, tree)
    spread = cal.MEASURED_ACCEPT_SPREAD

    def tokens(s: str, end: str) -> float:
        sp = sides[s]
        if not sp.on:
            return 1.0
        most = float(sp.steps + 1)
        if source.get(s) == "measured":
            return min(most, max(1.0, expected[s] * (1 - spread if end == "lo" else 1 + spread)))
        other = "current" if s == "baseline" else "baseline"
        point = alphas.get(s, 0.0)
        a_lo, a_hi = alpha_range(ctx, s, sp, point)
        d_lo = min(decay, _decay_low(ctx, s, sp))
        if source.get(other) == "measured" and other in alphas and sides[other].algorithm == sp.algorithm:
            # one drafter, measured over the other side's first positions: those stay; deeper ones
            # range as the family does
            seen = sides[other].steps
            a_m = alphas[other]
            if end == "lo":
                pos = [a_m * (1 - spread) * (d_lo ** max(0, i - seen + 1) if i >= seen else 1.0)
                       for i in range(sp.steps)]
                pos = [min(p, a_m) if i >= seen else p for i, p in enumerate(pos)]
                return expected_tokens_by_position(pos, 1.0, sp.topk, t_lo)
            pos = [min(1.0, a_m * (1 + spread)) if i < seen else max(a_hi, a_m) for i in range(sp.steps)]
            return expected_tokens_by_position(pos, decay, sp.topk, t_hi)
        if end == "lo":
            return expected_tokens(a_lo, sp.steps, d_lo, sp.topk, t_lo)
        return expected_tokens(a_hi, sp.steps, decay, sp.topk, t_hi)

    yields = [expected["current"] / expected["baseline"]]
    for end in ("lo", "hi"):
        yields.append(tokens("current", end) / tokens("baseline", end))

    rho = cost_c / cost_b
    if physical is None:
        u = cal.STEP_COST_SPREAD["prior"]
    elif not physical["hardware"].known:
        u = cal.STEP_COST_SPREAD["facts"] + cal.STEP_COST_SPREAD["unknown_gpu"]
    else:
        u = cal.STEP_COST_SPREAD["facts"]
    off = min(u * abs(math.log(rho)), cal.STEP_COST_SPREAD_CAP) if rho > 0 else 0.0
    rhos = [rho, rho * math.exp(-off), rho * math.exp(off)]
    alt_batch = roofline.decode_batch(ctx, "current", cal.UNSTATED_BATCH) if not concurrency_stated(ctx) else None
    if physical is not None:
        hw = physical["hardware"]
        variants: list[tuple[int, str | None]] = []
        if not hw.known and hw.tp > 1:  # the link of an unknown GPU is unknown too: both kinds
            variants.append((roofline.decode_batch(ctx), "nvlink" if hw.interconnect != "nvlink" else "pcie"))
        if alt_batch and alt_batch != roofline.decode_batch(ctx):
            variants.append((alt_batch, None))
        for b, link in variants:
            other = _physical_costs(base, cur, ctx, params, b, link)
            if other is not None:
                rhos.append(other["current"].total / other["baseline"].total)
        if gap is not None:
            measured_s, model_s = gap
            g = measured_s - model_s
            tb, tc = (base.tokens if base.on else 1), (cur.tokens if cur.on else 1)
            for extra_c in (g, g * tc / tb):  # a fixed cost, or one that grows with tokens per step
                num, den = cost_c + extra_c, cost_b + g
                if num > 0 and den > 0:
                    rhos.append(num / den)
    elif alt_batch and alt_batch != roofline.decode_batch(ctx):
        knee = param(params, "knee_tokens", cal.KNEE_TOKENS)

        def cost(sp: SpecSide) -> float:
            d = param(params, "draft_cost", cal.DRAFT_COST.get(sp.algorithm or "", cal.DEFAULT_DRAFT_COST))
            return step_cost(sp.steps if sp.on else 0, alt_batch, sp.tokens if sp.on else 1, d if sp.on else 0.0, knee)

        rhos.append(cost(cur) / cost(base))
    values = [y / r for y in yields for r in rhos if r > 0]
    # a setting the unit leaves to the engine (steps, topk, draft tokens) was assumed: another value
    # would change both the yield and the cost
    widen = cal.SPEC_BASE_SPREAD + (cal.ASSUMED_SETTING_SPREAD if base.notes or cur.notes else 0.0)
    return uncertainty.holding(ratio, uncertainty.hull(values, widen))


def _draft_model(ctx: ImpactContext, side: str) -> Any:
    values = (ctx.baseline if side == "baseline" else ctx.current) or {}
    return values.get("speculative.draft_model") if isinstance(values, dict) else None


_SIZE_IN_NAME = re.compile(r"(?<![0-9.A-Za-z])(\d+(?:\.\d+)?)\s*([BbMm])(?![A-Za-z0-9])")


def draft_size_from_name(name: Any) -> float | None:
    """Parameters of a draft model from its name or path's last part ("Qwen/Qwen3-0.6B" -> 6e8,
    "/models/llama-68m" -> 6.8e7; an MoE's active count "…-30B-A3B" -> 3e9); None when it names none."""
    if not isinstance(name, str) or not name.strip():
        return None
    last = name.rstrip("/").split("/")[-1]
    active = re.search(r"-A(\d+(?:\.\d+)?)B(?![A-Za-z0-9])", last)
    if active:
        return float(active.group(1)) * 1e9
    m = _SIZE_IN_NAME.search(last)
    if not m:
        return None
    return float(m.group(1)) * (1e9 if m.group(2).lower() == "b" else 1e6)


def draft_facts(ctx: ImpactContext, side: str):
    """The draft head's own config.json facts for a side (read where its path is a local directory:
    run/compare.py), else None: one decoder layer of the target's shape stands in."""
    from ..facts.model import ModelFacts
    f = getattr(ctx, "baseline_draft_model_facts" if side == "baseline" else "draft_model_facts", None)
    return f if isinstance(f, ModelFacts) and f.layers and f.hidden_size else None


def physical_step(m, hw, sp: SpecSide, ctx: ImpactContext, side: str, params: dict, batch: float):
    """Seconds of one decode step of a side (roofline.py): a plain forward when speculation is off,
    else the verify forward over `tokens` per request plus `steps` draft passes. Returns
    (step, draft pass or None)."""
    if not sp.on:
        return roofline.forward_time(m, hw, batch, 1, params=params), None
    verify = roofline.forward_time(m, hw, batch, sp.tokens, params=params)
    draft = None
    if sp.algorithm == "NGRAM":
        draft_s = 0.0  # a lookup in the prompt, on the CPU
    elif sp.algorithm in ("EAGLE", "EAGLE3"):
        native = sp.algorithm == "EAGLE" and not _draft_model(ctx, side) and bool(m.mtp_layers)
        own = draft_facts(ctx, side)
        if own is not None and not native:
            # the head's own config.json: its layers, width and (draft) vocabulary, at the target's TP
            draft = roofline.forward_time(own, hw, batch, sp.topk, shape=roofline.Pass(
                lm_head=True, moe=own.is_moe,
                overhead_s=param(params, "draft_overhead_ms", cal.DRAFT_OVERHEAD_MS) * 1e-3),
                params=params)
        else:
            draft = roofline.draft_time(m, hw, batch, sp.topk, native_mtp=native, params=params)
        draft_s = sp.steps * draft.total
        if sp.topk > 1:  # a tree: each pass also selects topk × topk candidates and extends the tree mask
            draft_s += sp.steps * param(params, "tree_pass_overhead_ms", cal.TREE_PASS_OVERHEAD_MS) * 1e-3
    else:  # a separate draft model: its own config.json, else its size from its name, else the prior fraction
        own = draft_facts(ctx, side)
        size = draft_size_from_name(_draft_model(ctx, side))
        target = m.active_params if m.is_moe and m.active_params else m.params
        if own is not None:
            draft = roofline.forward_time(own, hw, batch, 1, shape=roofline.Pass(
                moe=own.is_moe, overhead_s=param(params, "draft_overhead_ms", cal.DRAFT_OVERHEAD_MS) * 1e-3),
                params=params)
            draft_s = sp.steps * draft.total
        else:
            d = param(params, "draft_cost", cal.DRAFT_COST.get(sp.algorithm or "", cal.DEFAULT_DRAFT_COST))
            if size and target and size < target and "draft_cost" not in params:
                d = size / target  # a pass reads the draft's weights as the target's forward reads its own
            draft_s = sp.steps * d * roofline.forward_time(m, hw, batch, 1, params=params).total
    iteration_s = param(params, "spec_step_overhead_ms", cal.SPEC_STEP_OVERHEAD_MS) * 1e-3
    return _Step(verify, draft_s, iteration_s), draft


def _physical_costs(base: SpecSide, cur: SpecSide, ctx: ImpactContext, params: dict, batch: int,
                    link: str | None = None) -> dict | None:
    """Seconds per decode step of each side on this model and these GPUs (`link`: another
    interconnect than the hardware's, for the interval); None without model facts."""
    m = roofline.model_of(ctx)
    if m is None:
        return None
    hw = roofline.hardware_for(ctx)
    if link is not None:
        hw = roofline.Hardware(hw.gpu, hw.tp, link, hw.graphs, known=hw.known, link_known=hw.link_known)
    out: dict = {"hardware": hw, "model": m}
    for side, sp in (("baseline", base), ("current", cur)):
        out[side], out[side + "_draft"] = physical_step(m, hw, sp, ctx, side, params, batch)
    return out


def _direction_unknown(base: SpecSide, cur: SpecSide, physical: dict, expected: dict, low: dict,
                       readings: tuple[float, float], batch: int, dim: str) -> Estimate:
    """The sign depends on the unmeasured acceptance: the break-even, and an interval that holds both
    readings (the prior's and a weak drafter's) widened by UNSETTLED_SPREAD, with the middle of the two
    as the most likely value (issue 35: an answer wherever the size is bounded, even if it holds ×1)."""
    ratio, ratio_low = readings
    lead, terms = _physical_words(base, cur, physical, expected, ratio, batch)
    cost_b, cost_c = physical["baseline"].total, physical["current"].total
    side = "current" if cur.on else "baseline"
    other = "baseline" if side == "current" else "current"
    need = expected[other] * (cost_c / cost_b if side == "current" else cost_b / cost_c)
    what = lead.split("; a step takes")[0]
    point = math.sqrt(ratio * ratio_low)
    lo, hi = uncertainty.hull((ratio, ratio_low), cal.UNSETTLED_SPREAD)
    detail = (f"{what}: a step takes {cost_b * 1e3:.1f} → {cost_c * 1e3:.1f} ms, so this pays off only if the "
              f"{side} side yields more than {need:.2f} tokens per step — with the acceptance prior it yields "
              f"{expected[side]:.2f} (×{ratio:.2f}), with a weak drafter {low[side]:.2f} (×{ratio_low:.2f}): whether "
              f"it is faster or slower is not settled (the interval holds ×1): it depends on the drafter's acceptance "
              f"on this workload (×{lo:.2f}–{hi:.2f}, most likely ×{point:.2f}, between the two); measure the accept "
              f"length on the {side} side. "
              f"Details: {terms}")
    return Estimate(point, LOW, detail, dim, (lo, hi))


class _Step:
    """A speculative decode step: the verify forward plus the draft passes (seconds)."""

    def __init__(self, verify, draft_s: float, iteration_s: float = 0.0):
        self.verify, self.draft_s, self.iteration_s = verify, draft_s, iteration_s

    @property
    def total(self) -> float:
        return self.verify.total + self.draft_s + self.iteration_s

    def describe(self, per_pass=None, gloss: bool = False) -> str:
        """'60.42 ms = verify (50.21 ms = max(…) + …) + drafting 8.21 ms + iteration 2.00 ms'; with
        `per_pass` (one draft pass's StepTime) and `gloss`, the speculative details' longer form."""
        drafting = (f" + drafting {self.draft_s * 1e3:.2f} ms"
                    + (f" (per pass {per_pass.describe()})" if per_pass else ""))
        iteration = ""
        if self.iteration_s:
            iteration = (f" + iteration {self.iteration_s * 1e3:.2f} ms"
                         + (" (draft tree, accept pass, host sync)" if gloss else ""))
        return f"{self.total * 1e3:.2f} ms = verify ({self.verify.describe()}){drafting}{iteration}"


def _physical_words(base: SpecSide, cur: SpecSide, physical: dict, expected: dict, ratio: float,
                    batch: int, unsettled: bool = False) -> tuple[str, str]:
    """(the lead sentence in operators' words, the roofline terms for the details). `unsettled`: the
    interval holds ×1, so the sentence names no winner."""
    m, hw = physical["model"], physical["hardware"]
    fb, fc = physical["baseline"], physical["current"]
    vb = fb.verify if isinstance(fb, _Step) else fb
    vc = fc.verify if isinstance(fc, _Step) else fc
    tb, tc = (base.tokens if base.on else 1), (cur.tokens if cur.on else 1)
    where = roofline.hardware_words(m, hw)
    at = f"at batch {batch}"
    if m.is_moe and vb.experts_touched and vc.experts_touched:
        grow = vc.experts_touched / vb.experts_touched
        # a batch that already touches most of the experts it routes to reads about the same weights
        reads = (f"~{grow:.1f}× the expert weights of" if abs(grow - 1.0) >= 0.05
                 else "about the same expert weights as")
        what = (f"verifying {tc} token{'s' if tc != 1 else ''} per request per step on {where} reads "
                f"{reads} {tb} token{'s' if tb != 1 else ''} {at} "
                f"({vb.experts_touched:.0f} → {vc.experts_touched:.0f} of {m.experts} experts per layer)")
    elif vc.bound == "memory" and vb.bound == "memory":
        what = (f"verifying {tc} instead of {tb} token{'s' if tb != 1 else ''} per request costs about the same "
                f"on {where} {at}: the forward is memory-bound and reads the weights once either way")
    else:
        what = (f"verifying {tc} instead of {tb} token{'s' if tb != 1 else ''} per request on {where} {at} is "
                f"compute-bound: each forward does ~{tc / max(tb, 1):.1f}× the arithmetic")
    kb, kc = (base.steps if base.on else 0), (cur.steps if cur.on else 0)
    if kb != kc:
        what += f", with {kb} → {kc} draft passes per step"
    step_b, step_c = fb.total * 1e3, fc.total * 1e3
    pay = ("the extra drafted tokens more than pay for it" if ratio > 1.0 and expected["current"] > expected["baseline"]
           else "the drafted tokens no longer pay for it" if ratio < 1.0 and expected["current"] > expected["baseline"]
           else "the cheaper step does not make up for the tokens lost per step" if ratio < 1.0
           else "the cheaper step more than makes up for the tokens lost per step")
    if unsettled:
        pay = ("whether the extra drafted tokens pay for it is not settled (the interval holds ×1), most likely"
               if expected["current"] > expected["baseline"] else
               "whether the cheaper step makes up for the tokens lost per step is not settled (the interval "
               "holds ×1), most likely")
    lead = (f"{what}; a step takes {step_b:.1f} → {step_c:.1f} ms and yields {expected['baseline']:.2f} → "
            f"{expected['current']:.2f} tokens per request, so {pay}: ×{ratio:.2f}")

    def terms(label, f, draft):
        if isinstance(f, _Step):
            return f"{label} step {f.describe(draft, gloss=True)}"
        return f"{label} {f.describe()}"

    roof = ("roofline " + terms("baseline", fb, physical.get("baseline_draft")) + "; "
            + terms("current", fc, physical.get("current_draft")) + f" ⇒ ×{ratio:.2f}")
    return lead[:1].upper() + lead[1:], roof


def _read_both(name, baseline_value, current_value, ctx):
    base = read_side(ctx, "baseline", name, baseline_value)
    cur = read_side(ctx, "current", name, current_value)
    return base, cur


def _algorithm_change(base: SpecSide, cur: SpecSide, ctx: ImpactContext, params: dict) -> Estimate:
    dim = SINGLE if concurrency_of(ctx) <= 1 else AGGREGATE
    if measured_accept_length(ctx, "baseline") is not None and measured_accept_length(ctx, "current") is not None:
        est = estimate_speculation(base, cur, ctx, params)
        est.confidence = min_conf(est.confidence, MEDIUM)
        est.detail = f"{base.algorithm} → {cur.algorithm} (different draft heads), from " + est.detail
        return est
    return unknown_estimate(
        f"speculative algorithm {base.algorithm} → {cur.algorithm}: a different drafter whose acceptance "
        f"depends on the checkpoint and workload; no sound ratio without measured accept lengths on both sides",
        dim)


def speculative_steps(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                      params: dict) -> Estimate:
    """speculative.steps / .topk / .draft_tokens: the joint drafting change, carried by one finding."""
    base, cur = _read_both(name, baseline_value, current_value, ctx)
    for s in (base, cur):
        if isinstance(s, str):
            return unknown_estimate(s)
    if not base.on and not cur.on:
        return Estimate(1.0, HIGH, "speculative decoding is off on both sides: its step settings are unused")
    if base.on and cur.on and base.algorithm != cur.algorithm:
        return _algorithm_change(base, cur, ctx, params)
    if name == DRAFT and base.on and cur.on and base.topk != cur.topk:
        return Estimate(1.0, MEDIUM, f"{name} {show(baseline_value)} → {show(current_value)}: counted in the "
                        f"{TOPK} estimate (topk {base.topk} → {cur.topk}), not twice", interval=NO_CHANGE,
                        counted_in=TOPK)
    if name in (TOPK, DRAFT) and base.on and cur.on and base.steps != cur.steps:
        return Estimate(1.0, MEDIUM, f"{name} {show(baseline_value)} → {show(current_value)}: counted in the "
                        f"{STEPS} estimate ({base.steps} → {cur.steps} steps), not twice", interval=NO_CHANGE,
                        counted_in=STEPS)
    if name == DRAFT and base.on and cur.on and base.topk == cur.topk == 1 and base.steps == cur.steps:
        return Estimate(1.0, HIGH, f"with topk 1 {engine_label(ctx)} forces draft tokens to steps + 1 = "
                        f"{base.steps + 1}: {show(baseline_value)} → {show(current_value)} has no effect",
                        interval=NO_CHANGE)
    if base.on and cur.on and (base.steps, base.topk, base.tokens) == (cur.steps, cur.topk, cur.tokens):
        notes = base.notes + cur.notes
        return Estimate(1.0, LOW if notes else HIGH,
                        f"effective drafting unchanged ({base.steps} steps, topk {base.topk}, {base.tokens} "
                        f"verified tokens)" + (" (" + "; ".join(notes) + ")" if notes else ""))
    return estimate_speculation(base, cur, ctx, params)


def speculative_toggle(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                       params: dict) -> Estimate:
    """speculative.algorithm: speculation switched on, off, or to another drafter."""
    base, cur = _read_both(name, baseline_value, current_value, ctx)
    for s in (base, cur):
        if isinstance(s, str):
            return unknown_estimate(s)
    if base.algorithm == cur.algorithm:
        if not base.on:
            return Estimate(1.0, HIGH, "speculative decoding is off on both sides")
        return Estimate(1.0, HIGH, f"{show(baseline_value)} and {show(current_value)} are the same algorithm "
                        f"({base.algorithm}) for {engine_label(ctx)}")
    if base.on and cur.on:
        return _algorithm_change(base, cur, ctx, params)
    est = estimate_speculation(base, cur, ctx, params)
    what = f"speculative decoding {'off → ' + str(cur.algorithm) if cur.on else str(base.algorithm) + ' → off'}"
    est.detail = f"{what}: {est.detail}"
    return est
