"""Relaxed acceptance of drafted tokens (`relaxed_acceptance`): settings that change which drafted tokens
the target accepts, not how they are drafted, so the step costs the same and only the tokens a step
yields E(k) move (expected_tokens.py). docs/impact.md "Relaxed acceptance" cites the engines' code.

SGLang (`--speculative-accept-threshold-single/-acc`, defaults 1.0), sgl-kernel's
TreeSpeculativeSamplingTargetOnly: a drafted token x whose target probability is q(x) is accepted when
`coin <= prob_acc / threshold_acc || q(x) >= threshold_single` (prob_acc: q summed over the siblings tried
at that position; coin uniform), so its acceptance is f(q) = 1 if q ≥ t_single else min(1, q / t_acc).
At 1.0 that is the exact f(q) = q. Lowering either threshold raises f pointwise, so α can only rise;
and since f(q) ≤ min(1, q / t) with t = min(t_single, t_acc), Jensen gives α ≤ min(1, α₀ / t). The
kernel only runs when a batch samples: an all-greedy batch is verified by argmax (verify_tree_greedy)
and never reads the thresholds.

vLLM: 0.8.x's V0 typical acceptance sampler (`--spec-decoding-acceptance-method
typical_acceptance_sampler`, `--typical-acceptance-sampler-posterior-threshold/-alpha`, or the same keys
of --speculative-config) accepts x iff q(x) > min(ε, δ·e^(−H(q))) — deterministic and blind to the draft's
probabilities, so it is not ordered against rejection sampling (it can accept fewer: public runs measured
both ways). 0.20+'s `rejection_sample_method`: `block` (block verification, lossless, never fewer tokens)
and `synthetic` (acceptance forced to `synthetic_acceptance_length`: benchmarking only).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from . import calibration as cal
from .base import (
    AGGREGATE,
    HIGH,
    LOW,
    MEDIUM,
    SINGLE,
    Estimate,
    ImpactContext,
    as_float,
    concurrency_of,
    show,
    stated_metric,
    unknown_estimate,
)
from .expected_tokens import alpha_from_accept_length, expected_tokens, widen_alpha
from .specside import ALGO, SpecSide, measured_accept_length, read_side
from .speculative import alpha_range, prior_alpha

# Concepts (driftwatch/concepts.py).
SINGLE_T = "speculative.accept_threshold_single"
ACC_T = "speculative.accept_threshold_acc"
METHOD = "speculative.acceptance_method"
TYPICAL_T = "speculative.typical_threshold"
TYPICAL_A = "speculative.typical_alpha"
SYNTHETIC = "speculative.synthetic_accept_length"
CONCEPTS = (SINGLE_T, ACC_T, METHOD, TYPICAL_T, TYPICAL_A, SYNTHETIC)

# Metrics that state the workload's sampling temperature (--baseline-metric/--current-metric temperature=0.6).
TEMPERATURE_KEYS = ("temperature",)

# --- constants of this model (docs/impact.md "Relaxed acceptance"); none fitted: no public before/after run
# of these settings states enough facts to fit on (the searches are listed in the docs).
# vLLM 0.8.x's defaults when the typical acceptance sampler is chosen without its thresholds
# (SpeculativeConfig: posterior_threshold 0.09, posterior_alpha its square root 0.3).
TYPICAL_DEFAULTS = (0.09, 0.3)
# Typical acceptance may reject drafted tokens that rejection sampling would have accepted (q(x) under the
# threshold): the low end of its interval is this far below the rejection sampler's yield (log; a
# judgement: vllm-project/vllm#8639 measured a shorter accept length at temperature 0.9, #5131 a longer
# one at 0.5; neither states the throughput).
TYPICAL_LOSS = 0.10
# Block verification (Sun et al., arXiv 2403.10444) accepts at least what token-by-token verification does;
# the paper reports 5-8 % more wall-clock speed over its settings: the top of the interval (log, ≈ ×1.10).
BLOCK_GAIN = 0.10
# The grid over the drafter family's α range when no accept length was measured.
ALPHA_GRID = 12

EXACT_NAMES = ("", "REJECTION_SAMPLER", "STANDARD", "STRICT", "PROBABILISTIC", "NONE")


@dataclass(frozen=True)
class AcceptRule:
    """One side's acceptance rule as the model needs it: its kind ("exact", "threshold", "typical",
    "block", "synthetic") and its numbers (SGLang's two thresholds; vLLM's ε, δ; a synthetic length)."""

    kind: str
    single: float = 1.0
    acc: float = 1.0
    synthetic: float | None = None

    @property
    def t(self) -> float:
        """The threshold that bounds the acceptance from above: α ≤ min(1, α₀ / t)."""
        return min(self.single, self.acc)

    @property
    def exact(self) -> bool:
        return self.kind in ("exact", "block") or (self.kind == "threshold" and self.single >= 1.0
                                                  and self.acc == 1.0)

    def alpha_bounds(self, a0: float) -> tuple[float, float]:
        """(lo, hi) of this rule's per-position acceptance given the exact rule's a0."""
        if self.kind == "threshold":
            if self.single <= 0.0:
                return 1.0, 1.0  # q ≥ 0 ≥ threshold_single: every drafted token is accepted
            lo = a0 * min(1.0, 1.0 / self.acc) if self.acc > 0 else 1.0
            hi = min(1.0, a0 / self.t) if self.t > 0 else 1.0
            return min(lo, 1.0), max(hi, min(lo, 1.0))
        if self.kind == "typical":
            return a0 * math.exp(-TYPICAL_LOSS), 1.0
        if self.kind == "block":
            return a0, a0  # the gain is a tokens-per-step bound (BLOCK_GAIN), applied to E
        return a0, a0


def _method(value: Any) -> str:
    s = str(value or "").strip().upper().replace("-", "_")
    if s in EXACT_NAMES:
        return "exact"
    if s.startswith("TYPICAL"):
        return "typical"
    if s == "BLOCK":
        return "block"
    if s == "SYNTHETIC":
        return "synthetic"
    raise ValueError(f"acceptance method {value!r} is not one driftwatch knows")


def _number(v: Any, default: float, what: str, side: str) -> float:
    if v is None:
        return default
    f = as_float(v)
    if f is None or f < 0:
        raise ValueError(f"{what} = {v!r} on the {side} side is not a usable number")
    return f


def side_rule(ctx: ImpactContext, side: str, name: str, given: Any) -> AcceptRule:
    """A side's acceptance rule from its concepts (the model's own argument for `name`)."""
    values = (ctx.baseline if side == "baseline" else ctx.current) or {}

    def get(concept: str) -> Any:
        return given if concept == name else (values.get(concept) if isinstance(values, dict) else None)

    single, acc = get(SINGLE_T), get(ACC_T)
    if single is not None or acc is not None:
        return AcceptRule("threshold", _number(single, 1.0, "threshold_single", side),
                    _number(acc, 1.0, "threshold_acc", side) or 1e-9)  # the kernel caps t_acc at 1e-9
    kind = _method(get(METHOD))
    if kind == "typical":
        eps = _number(get(TYPICAL_T), TYPICAL_DEFAULTS[0], "posterior_threshold", side)
        delta = _number(get(TYPICAL_A), TYPICAL_DEFAULTS[1], "posterior_alpha", side)
        return AcceptRule("typical", eps, delta)
    if kind == "synthetic":
        length = as_float(get(SYNTHETIC))
        return AcceptRule("synthetic", synthetic=length if length is not None and length >= 1.0 else None)
    return AcceptRule(kind)


def _temperature(ctx: ImpactContext) -> float | None:
    found = stated_metric(ctx, TEMPERATURE_KEYS, 0.0, 100.0)
    return None if found is None else found[0]


def _dim(ctx: ImpactContext) -> str:
    return SINGLE if concurrency_of(ctx) <= 1 else AGGREGATE


QUALITY = ("the outputs no longer follow the target model's distribution exactly (drafted tokens the exact rule "
           "would have resampled are kept): a quality change, not only a speed change — check the workload's "
           "accuracy, not only its tok/s")


def relaxed_acceptance(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                       params: dict) -> Estimate:
    """A change of the acceptance rule: a ratio interval from the rule's code and what is known of α."""
    dim = _dim(ctx)
    try:
        rb, rc = side_rule(ctx, "baseline", name, baseline_value), side_rule(ctx, "current", name, current_value)
    except ValueError as exc:
        return unknown_estimate(str(exc), dim)
    twice = _counted_elsewhere(name, ctx, rb, rc)
    if twice:
        return Estimate(1.0, MEDIUM, f"{name} {show(baseline_value)} → {show(current_value)}: counted in the "
                        f"{twice} estimate, not twice", interval=(1.0, 1.0), counted_in=twice)
    sides = []
    for s in ("baseline", "current"):
        values = (ctx.baseline if s == "baseline" else ctx.current) or {}
        sp: SpecSide | str = read_side(ctx, s, name, None)
        if isinstance(values, dict) and ALGO not in values:  # e.g. a --speculative-config read as text
            sp = f"the {s} side's speculative configuration was not read"
        if isinstance(sp, str):
            both = _both_measured(ctx, f"acceptance {_rule_words(rb)} → {_rule_words(rc)}", (rb, rc), dim)
            return both or unknown_estimate(f"{sp}: the drafter, hence its acceptance, is unknown; the ratio is the "
                                            "change of accept length at the same step cost, so measure the accept "
                                            "length before and after (--baseline-metric/--current-metric "
                                            "accept_length=…)", dim)
        sides.append(sp)
    base, cur = sides
    if not base.on and not cur.on:
        return Estimate(1.0, HIGH, "speculative decoding is off on both sides: the acceptance rule is never used",
                        interval=(1.0, 1.0))
    if rb == rc or (rb.exact and rc.exact and "block" not in (rb.kind, rc.kind)):
        return Estimate(1.0, HIGH, "the acceptance rule is the same exact rule on both sides", interval=(1.0, 1.0))
    if base.on != cur.on or (base.steps, base.topk, base.tokens) != (cur.steps, cur.topk, cur.tokens):
        return unknown_estimate("the drafting itself changed too (counted in the speculative estimate): the "
                                "acceptance rule's share cannot be told apart; measure the accept length on both "
                                "sides", dim)
    return _estimate(ctx, base, (rb, rc), dim)


def _counted_elsewhere(name: str, ctx: ImpactContext, rb: AcceptRule, rc: AcceptRule) -> str | None:
    """The concept whose finding carries the joint estimate when several acceptance settings changed at once
    (threshold_single carries SGLang's pair; the method carries vLLM's)."""
    b, c = ctx.baseline or {}, ctx.current or {}
    changed = {k for k in CONCEPTS if isinstance(b, dict) and isinstance(c, dict) and b.get(k) != c.get(k)}
    if name == ACC_T and SINGLE_T in changed:
        return SINGLE_T
    if name in (TYPICAL_T, TYPICAL_A, SYNTHETIC) and METHOD in changed:
        return METHOD
    if name == TYPICAL_A and TYPICAL_T in changed:
        return TYPICAL_T
    return None


def _direction_words(rb: AcceptRule, rc: AcceptRule) -> tuple[bool, bool]:
    """(never slower, never faster): SGLang thresholds order pointwise, so does the typical sampler's own
    thresholds and block verification over the exact rule."""
    if {rb.kind, rc.kind} == {"exact", "threshold"}:  # the exact rule is thresholds 1.0 / 1.0
        rb, rc = (AcceptRule("threshold") if r.kind == "exact" else r for r in (rb, rc))
    if rb.kind == rc.kind == "threshold":
        return rc.single <= rb.single and rc.acc <= rb.acc, rc.single >= rb.single and rc.acc >= rb.acc
    if rb.kind == rc.kind == "typical":
        return rc.single <= rb.single and rc.acc <= rb.acc, rc.single >= rb.single and rc.acc >= rb.acc
    if rc.kind == "block" and rb.exact:
        return True, False
    if rb.kind == "block" and rc.exact:
        return False, True
    return False, False


@dataclass(frozen=True)
class Known:
    """What is known of α: `cases`, each (α measured on `side` or None, the exact rule's α0 lo, hi), all
    tree-widened chain acceptances; and where it came from in words."""

    cases: tuple[tuple[float | None, float, float], ...]
    side: str | None
    source: str


def _known_alpha(ctx: ImpactContext, sp: SpecSide, rules: tuple[AcceptRule, AcceptRule]) -> Known | str:
    """α as the measurement (or the drafter family's range) bounds it; a reason when nothing does."""
    measured = {s: measured_accept_length(ctx, s) for s in ("baseline", "current")}
    if "steps unset" in " ".join(sp.notes):
        return "the number of draft steps is unknown (unset in the unit), so neither E(k) nor α is bounded"
    for s, rule in zip(("baseline", "current"), rules, strict=True):
        m = measured[s]
        if m is None or rule.kind == "synthetic":
            continue
        e_max = float(sp.steps + 1)
        spread = cal.MEASURED_ACCEPT_SPREAD
        window = [min(e_max, max(1.0, min(m, e_max) * f)) for f in (1 - spread, 1.0, 1 + spread)]
        cases = []
        for length in window:
            a = alpha_from_accept_length(length, sp.steps)
            if rule.kind == "threshold":  # a = E f(q) with α0 ≤ ... : α0 ∈ [a·t, a·max(1, t_acc)]
                if rule.single <= 0.0:
                    return (f"the {s} side accepts every drafted token (threshold_single {rule.single:g}): its "
                            "accept length says nothing of the drafter; measure it on the other side")
                lo, hi = a * min(1.0, rule.t), min(1.0, a * max(1.0, rule.acc))
            elif rule.kind == "typical":  # typical may accept any amount more, or up to TYPICAL_LOSS less
                lo, hi = min(alpha_range(ctx, s, sp, a)[0], a), min(1.0, a * math.exp(TYPICAL_LOSS))
            elif rule.kind == "block":  # block yields E(α0) to E(α0)·e^BLOCK_GAIN
                lo, hi = alpha_from_accept_length(max(1.0, length * math.exp(-BLOCK_GAIN)), sp.steps), a
            else:
                lo = hi = a
            cases.append((a, lo, hi))
        return Known(tuple(cases), s, f"accept length {m:g} measured on the {s} side at {sp.steps} steps")
    point = prior_alpha(ctx, "current", sp)
    if not 0.0 <= point <= 1.0:
        return f"no accept length measured and no acceptance prior for {sp.algorithm}"
    lo, hi = alpha_range(ctx, "current", sp, point)
    span = (widen_alpha(lo, sp.topk, cal.TREE_EXPONENT), widen_alpha(hi, sp.topk, cal.TREE_EXPONENT))
    return Known(((None, *span),), None,
                 f"no accept length measured: the {sp.algorithm} family's α range {lo:.2f}–{hi:.2f} at "
                 f"{sp.steps} draft steps")


def _bounds(known: Known, rules: tuple[AcceptRule, AcceptRule], k: int) -> tuple[float, float]:
    """The smallest and largest ratio over every α0 the knowledge allows: the measured side yields what was
    measured, the other side what its rule allows at that α0."""
    rb, rc = rules
    syn = {"baseline": rb.synthetic if rb.kind == "synthetic" else None,
           "current": rc.synthetic if rc.kind == "synthetic" else None}
    lows, highs = [], []
    for a_m, a_lo, a_hi in known.cases:
        for i in range(ALPHA_GRID + 1):
            a0 = a_lo + (a_hi - a_lo) * i / ALPHA_GRID

            def y(side: str, rule: AcceptRule, end: str, a0: float = a0, a_m: float | None = a_m) -> float:
                if side == known.side and a_m is not None:
                    return expected_tokens(a_m, k)
                return _yield(rule, a0, k, end, syn[side])

            lows.append(y("current", rc, "lo") / y("baseline", rb, "hi"))
            highs.append(y("current", rc, "hi") / y("baseline", rb, "lo"))
    return min(lows), max(highs)


def _yield(rule: AcceptRule, a: float, k: int, end: str, synthetic_e: float | None) -> float:
    """Tokens per step under `rule` at the lo/hi end, given the exact rule's α `a` (chain, tree-widened)."""
    if rule.kind == "synthetic":
        return synthetic_e if synthetic_e is not None else 1.0
    lo, hi = rule.alpha_bounds(a)
    e = expected_tokens(lo if end == "lo" else hi, k)
    if rule.kind == "block" and end == "hi":
        e = min(float(k + 1), e * math.exp(BLOCK_GAIN))
    return e


def _estimate(ctx: ImpactContext, sp: SpecSide, rules: tuple[AcceptRule, AcceptRule], dim: str) -> Estimate:
    rb, rc = rules
    temp = _temperature(ctx)
    what = f"acceptance {_rule_words(rb)} → {_rule_words(rc)}"
    if temp is not None and temp == 0.0 and "synthetic" not in (rb.kind, rc.kind):
        return Estimate(1.0, HIGH, f"{what}: the workload samples greedily (temperature 0), so every drafted token "
                        "is checked against the target's argmax and the acceptance rule is never read: no change",
                        dim, (1.0, 1.0))
    if any(r.kind == "synthetic" and r.synthetic is None for r in rules):
        return unknown_estimate(f"{what}: synthetic acceptance without a synthetic_acceptance_length driftwatch "
                                "can read; measure the accept length on both sides", dim)
    both = _both_measured(ctx, what, rules, dim)
    if both is not None:
        return both
    known = _known_alpha(ctx, sp, rules)
    if isinstance(known, str):
        return unknown_estimate(f"{what}: {known}; the ratio is the change of accept length at the same step cost, "
                                "so measure the accept length before and after (--baseline-metric/--current-metric "
                                "accept_length=…)", dim)
    source, k = known.source, sp.steps
    lo, hi = _bounds(known, rules, k)
    never_slower, never_faster = _direction_words(rb, rc)
    if never_slower:
        lo = 1.0
    if never_faster:
        hi = 1.0
    if temp is None and "synthetic" not in (rb.kind, rc.kind):
        lo, hi = min(lo, 1.0), max(hi, 1.0)  # a greedy workload would not read the rule at all
    lo, hi = min(lo, hi), max(lo, hi)
    point = math.sqrt(lo * hi)
    bounded = temp is not None and source.startswith("accept length")
    why = _why(rb, rc, never_slower, never_faster)
    if bounded:
        likely = (f"most likely ×{point:.2f} (the middle: where it falls depends on how the target's probabilities "
                  "of the drafted tokens spread, which no metric gives)")
        conf = MEDIUM
    else:
        pins = [x for x, missing in (("the sampling temperature (--current-metric temperature=…; 0 means greedy: "
                                      "no change)", temp is None),
                                     ("the accept length before and after", not source.startswith("accept length")))
                if missing]
        likely = f"×{point:.2f} is only the range's middle, not a value what is known points to; " \
                 f"{' and '.join(pins)} would pin it"
        conf = LOW
    quality = _quality(rb, rc)
    detail = (f"{what}: {why}, at the same step cost (the same tokens are drafted and verified), so "
              f"×{lo:.2f}–{hi:.2f} ({source}); {likely}. {quality}")
    return Estimate(point, conf, detail, dim, (lo, hi))


def _both_measured(ctx: ImpactContext, what: str, rules: tuple[AcceptRule, AcceptRule], dim: str) -> Estimate | None:
    """Both accept lengths measured: their ratio, at the same step cost (None otherwise)."""
    both = [measured_accept_length(ctx, s) for s in ("baseline", "current")]
    if both[0] is None or both[1] is None or any(r.kind == "synthetic" for r in rules):
        return None
    ratio = both[1] / both[0]
    spread = cal.MEASURED_ACCEPT_SPREAD
    return Estimate(ratio, MEDIUM, f"{what}: measured accept lengths {both[0]:g} → {both[1]:g} tokens per step at "
                    f"the same step cost ⇒ ×{ratio:.2f}. {_quality(*rules)}", dim,
                    (ratio * (1 - spread) / (1 + spread), ratio * (1 + spread) / (1 - spread)))


def _rule_words(r: AcceptRule) -> str:
    if r.kind == "threshold":
        return "exact" if r.exact else f"thresholds single {r.single:g}/acc {r.acc:g}"
    if r.kind == "typical":
        return f"typical (ε {r.single:g}, δ {r.acc:g})"
    if r.kind == "synthetic":
        return f"synthetic (accept length {r.synthetic:g})" if r.synthetic is not None else "synthetic"
    return {"exact": "exact rejection sampling", "block": "block verification"}[r.kind]


def _why(rb: AcceptRule, rc: AcceptRule, never_slower: bool, never_faster: bool) -> str:
    if "synthetic" in (rb.kind, rc.kind):
        return "the synthetic side's accept length is forced, whatever the drafter proposes"
    if never_slower:
        return ("a drafted token is now accepted at least as often as before (the rule accepts more, never less), "
                "so a step yields as many tokens or more")
    if never_faster:
        return ("a drafted token is now accepted at most as often as before (back toward the exact rule), so a step "
                "yields as many tokens or fewer")
    return "the two rules are not ordered (either may accept more), so a step may yield more or fewer tokens"


def _quality(rb: AcceptRule, rc: AcceptRule) -> str:
    lossy = {"synthetic": "the synthetic side's outputs are not the model's at all (benchmarking only)",
             "typical": QUALITY, "threshold": QUALITY}
    for r, side in ((rc, "current"), (rb, "baseline")):
        if not r.exact and r.kind in lossy:
            return f"On the {side} side: {lossy[r.kind]}."
    return "Both rules keep the target model's output distribution exact."
