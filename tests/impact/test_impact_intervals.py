"""The 80 % intervals every ratio carries (impact/uncertainty.py, speculative.py `_interval`):
lo ≤ point ≤ hi, the interval widens with each source of uncertainty and narrows with a
measurement, direction and confidence follow it (docs/impact.md "Intervals")."""
from __future__ import annotations

import math
import os

import pytest
from hypothesis import given, settings, strategies as st

from driftwatch.facts import gpu_facts, load_model_config, parse_gpu_option
from driftwatch.impact import ImpactContext, calibration as cal, get_model
from driftwatch.impact.base import Estimate
from driftwatch.impact.uncertainty import around, combine_intervals, confidence_of, direction, finish

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "calibration_models")
ALGO, STEPS, TOPK, DRAFT = "speculative.algorithm", "speculative.steps", "speculative.topk", "speculative.draft_tokens"
steps = get_model("speculative_steps")
toggle = get_model("speculative_toggle")


def model(name):
    return load_model_config(os.path.join(MODELS, name + ".json"))


QWEN36, QWEN3_8B = model("Qwen--Qwen3.6-27B"), model("Qwen--Qwen3-8B")
A6000 = gpu_facts(parse_gpu_option("2x RTX A6000"))
SEED0 = {"model.path": "/root/models/Qwen3.6-27B", ALGO: "EAGLE", STEPS: 3, TOPK: 1, DRAFT: 4, "parallel.tensor": 2}


def ctx(base, cur, m=None, g=None, conc=1, bm=None, cm=None, known=True):
    return ImpactContext(base, cur, set(), set(), dict(bm or {}), dict(cm or {}), conc, model_facts=m,
                         baseline_model_facts=m, gpu_facts=g, concurrency_known=known)


def width(e):
    return e.interval[1] / e.interval[0]


def holds(outer, inner):
    return outer.interval[0] <= inner.interval[0] + 1e-12 and outer.interval[1] >= inner.interval[1] - 1e-12


# --------------------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None)
@given(kb=st.integers(0, 6), kc=st.integers(0, 6), topk=st.sampled_from([1, 1, 2, 4]),
       conc=st.sampled_from([1, 4, 32, 128]), facts=st.booleans(), known=st.booleans(),
       accept=st.one_of(st.none(), st.floats(1.0, 4.0)), algo=st.sampled_from(["EAGLE", "EAGLE3", "NEXTN"]))
def test_every_ratio_sits_inside_its_interval(kb, kc, topk, conc, facts, known, accept, algo):
    base = {**SEED0, ALGO: algo if kb else None, STEPS: kb, TOPK: topk, DRAFT: max(kb + 1, 2 * topk)}
    cur = {**SEED0, ALGO: algo if kc else None, STEPS: kc, TOPK: topk, DRAFT: max(kc + 1, 2 * topk)}
    c = ctx(base, cur, QWEN36 if facts else None, A6000 if facts else None, conc,
            cm={"accept_length": accept} if accept and kc else None, known=known)
    for fn, name in ((steps, STEPS), (toggle, ALGO)):
        e = fn(name, base[name], cur[name], c, {})
        if e.throughput_ratio is None:
            assert e.interval is None
            continue
        lo, hi = e.interval
        assert 0 < lo <= e.throughput_ratio <= hi and math.isfinite(hi)
        assert e.confidence == confidence_of(e.interval)
        # the sentence names a winner only where the interval excludes 1
        lead = e.detail.split(" Details: ")[0]
        if facts and "a step takes" in lead:
            unsettled = direction(e.throughput_ratio, e.interval) == "unknown"
            assert ("is not settled (the interval holds ×1)" in lead) == unsettled, lead
            assert not unsettled or not any(w in lead for w in ("more than pay", "no longer pay", "does not make up",
                                                                 "more than makes up")), lead


@settings(max_examples=80, deadline=None)
@given(ratio=st.floats(0.05, 20.0), conf=st.sampled_from(["high", "medium", "low"]))
def test_a_band_by_confidence_keeps_that_confidence(ratio, conf):
    e = finish(Estimate(ratio, conf, "x"))
    assert e.interval[0] <= ratio <= e.interval[1] and e.confidence == conf


@settings(max_examples=80, deadline=None)
@given(items=st.lists(st.tuples(st.floats(0.2, 5.0), st.floats(0.0, 0.6), st.floats(0.0, 0.6)), min_size=1,
                      max_size=5))
def test_a_combined_interval_holds_the_product_and_is_no_narrower_than_any_factor(items):
    pairs = [(r, around(r, a, b)) for r, a, b in items]
    lo, hi = combine_intervals(pairs)
    point = math.prod(r for r, _ in pairs)
    assert lo <= point * (1 + 1e-9) and hi >= point * (1 - 1e-9)
    for _r, (flo, fhi) in pairs:
        assert hi / lo >= (fhi / flo) * (1 - 1e-9)
    assert combine_intervals([(None, None)]) is None


def test_direction_only_where_the_interval_excludes_one():
    assert direction(0.61, (0.55, 0.70)) == "slower"
    assert direction(1.3, (1.1, 1.5)) == "faster"
    assert direction(0.95, (0.85, 1.20)) == "unknown"
    assert direction(1.0, (1.0, 1.0)) == "unchanged"
    assert direction(None, None) == "unknown"
    assert confidence_of((0.95, 1.05)) == "high" and confidence_of((0.8, 1.2)) == "medium"
    assert confidence_of((0.5, 1.5)) == "low"


# --------------------------------------------------------------------------- each source widens; measuring narrows


def _seed0(m=QWEN36, g=A6000, **kw):
    return steps(STEPS, 3, 1, ctx(SEED0, {**SEED0, STEPS: 1, DRAFT: 2}, m, g, **kw), {})


def test_a_wider_acceptance_range_gives_a_wider_interval(monkeypatch):
    narrow = _seed0()
    lo, hi = cal.ALPHA_RANGE["MTP.qwen"]
    monkeypatch.setitem(cal.ALPHA_RANGE, "MTP.qwen", (lo - 0.2, hi))
    wide = _seed0()
    assert wide.throughput_ratio == pytest.approx(narrow.throughput_ratio)
    assert holds(wide, narrow) and width(wide) > width(narrow)


def test_a_larger_step_cost_spread_gives_a_wider_interval(monkeypatch):
    narrow = _seed0()
    monkeypatch.setitem(cal.STEP_COST_SPREAD, "facts", cal.STEP_COST_SPREAD["facts"] + 0.5)
    wide = _seed0()
    assert holds(wide, narrow) and width(wide) > width(narrow)


def test_unstated_concurrency_holds_the_one_stream_interval():
    stated = _seed0()
    unstated = _seed0(known=False)
    assert unstated.throughput_ratio == pytest.approx(stated.throughput_ratio)
    assert holds(unstated, stated)


def test_an_unknown_gpu_holds_both_links_instead_of_assuming_pcie():
    m = QWEN36
    tp8 = {**SEED0, "parallel.tensor": 8}
    c = ctx(tp8, {**tp8, STEPS: 1, DRAFT: 2}, m, None)
    e = steps(STEPS, 3, 1, c, {})
    from driftwatch.impact import speculative as sp
    base, cur = sp.read_side(c, "baseline", STEPS, 3), sp.read_side(c, "current", STEPS, 1)
    point = sp._physical_costs(base, cur, c, {}, 1)
    pcie = sp._physical_costs(base, cur, c, {}, 1, "pcie")
    assert point["hardware"].interconnect == "nvlink" and pcie["hardware"].interconnect == "pcie"
    # the PCIe reading changes the step-cost ratio; the interval holds the ratio at both links
    yield_ratio = e.throughput_ratio * (point["current"].total / point["baseline"].total)
    at_pcie = yield_ratio / (pcie["current"].total / pcie["baseline"].total)
    assert abs(at_pcie - e.throughput_ratio) > 1e-3 and e.interval[0] <= at_pcie <= e.interval[1]
    known = steps(STEPS, 3, 1, ctx(tp8, {**tp8, STEPS: 1, DRAFT: 2}, m, gpu_facts(parse_gpu_option("8x H100"))), {})
    assert width(e) > width(known)


def test_a_measured_accept_length_narrows_the_interval():
    """The same E the prior gives, but measured: the interval shrinks to the measured window."""
    base, cur = SEED0, {**SEED0, STEPS: 1, DRAFT: 2}
    prior = steps(STEPS, 3, 1, ctx(base, cur, QWEN36, A6000), {})
    e_prior = 1 + cal.ALPHA_PRIOR["MTP"]
    measured = steps(STEPS, 3, 1, ctx(base, cur, QWEN36, A6000, cm={"accept_length": e_prior}), {})
    assert width(measured) < width(prior)
    both = steps(STEPS, 3, 1, ctx(base, cur, QWEN36, A6000, bm={"accept_length": 3.6}, cm={"accept_length": e_prior}), {})
    assert width(both) < width(measured)


def test_a_head_at_a_local_path_ranges_as_a_self_trained_one():
    base = {"model.path": "Qwen/Qwen3-8B", ALGO: None}
    public = {**base, ALGO: "EAGLE3", STEPS: 3, TOPK: 1, DRAFT: 4, "speculative.draft_model": "Tengyunw/qwen3_8b_eagle3"}
    local = {**public, "speculative.draft_model": "/srv/heads/my-eagle3"}
    h200 = gpu_facts(parse_gpu_option("H200"))
    a = toggle(ALGO, None, "EAGLE3", ctx(base, public, QWEN3_8B, h200), {})
    b = toggle(ALGO, None, "EAGLE3", ctx(base, local, QWEN3_8B, h200), {})
    assert b.throughput_ratio < a.throughput_ratio  # the unknown-provenance point (α 0.70) is lower
    assert b.interval[0] < a.interval[0] and width(b) > width(a)


def test_mtp_family_by_model_type():
    """A DeepSeek/GLM MTP head uses its family's point (0.82) and range, not the Qwen seeds' 0.97."""
    from driftwatch.impact import speculative as sp
    glm = model("deepseek-ai--DeepSeek-V3")
    c = ctx({**SEED0, "model.path": "/m/DeepSeek-V3"}, {**SEED0, "model.path": "/m/DeepSeek-V3", STEPS: 1}, glm, None)
    side = sp.read_side(c, "baseline", STEPS, 3)
    assert sp._family(c, "baseline", side) == "MTP.deepseek"
    assert sp.prior_alpha(c, "baseline", side) == cal.ALPHA_PRIOR_FAMILY["MTP.deepseek"]
    qc = ctx(SEED0, {**SEED0, STEPS: 1}, QWEN36, A6000)
    assert sp._family(qc, "baseline", sp.read_side(qc, "baseline", STEPS, 3)) == "MTP.qwen"


def test_a_tree_gains_less_than_independent_candidates():
    """Tree widening at the calibrated exponent lies between the chain and independent candidates."""
    from driftwatch.impact.expected_tokens import expected_tokens
    chain, point, independent = (expected_tokens(0.7, 3, topk=4, tree_exp=x) for x in (0.0, cal.TREE_EXPONENT, 1.0))
    assert chain == pytest.approx(expected_tokens(0.7, 3)) and chain < point < independent


def test_bookkeeping_estimates_do_not_widen_the_comparison():
    base = {**SEED0, TOPK: 1}
    e = steps(DRAFT, 4, 8, ctx(base, {**base, DRAFT: 8}), {})
    assert e.throughput_ratio == 1.0 and e.interval == (1.0, 1.0) and direction(1.0, e.interval) == "unchanged"


def test_an_unknown_gpu_at_tp8_is_not_priced_as_a_pcie_box():
    from driftwatch.impact.roofline import Hardware
    assert Hardware.of(None, tp=8).interconnect == "nvlink" and Hardware.of(None, tp=2).interconnect == "pcie"
    assert not Hardware.of(None, tp=8).known
