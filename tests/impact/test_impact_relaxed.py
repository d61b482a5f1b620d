"""Relaxed acceptance (issue 35): the acceptance rule moves α, never the step cost. Each path of the model:
greedy sampling (×1), a lowered SGLang threshold (only faster, bounded by E(k, α0/t)), raised back (the mirror),
unknown draft steps (no number), both accept lengths measured, vLLM's typical/block/synthetic rules."""
from __future__ import annotations

import math

import pytest

from driftwatch.impact import ImpactContext, expected_tokens, get_model
from driftwatch.impact.expected_tokens import alpha_from_accept_length
from driftwatch.impact.relaxed import ACC_T, METHOD, SINGLE_T, SYNTHETIC, TYPICAL_LOSS, TYPICAL_T, AcceptRule
from driftwatch.impact.uncertainty import direction
from driftwatch.snapshots.metrics import parse_metrics

relaxed = get_model("relaxed_acceptance")

SPEC = {"speculative.algorithm": "EAGLE", "speculative.steps": 3, "speculative.topk": 1,
        "speculative.draft_tokens": 4, SINGLE_T: 1.0, ACC_T: 1.0}


def ctx(base, cur, bm=None, cm=None, engine="SGLang"):
    return ImpactContext(dict(base), dict(cur), set(), set(), dict(bm or {}), dict(cm or {}), 1, None, engine)


def lowered(**kw):
    return {**SPEC, **kw}


def test_greedy_sampling_never_reads_the_thresholds():
    e = relaxed(ACC_T, 1.0, 0.5, ctx(SPEC, lowered(**{ACC_T: 0.5}), cm={"temperature": 0}), {})
    assert e.throughput_ratio == 1.0 and e.interval == (1.0, 1.0) and direction(1.0, e.interval) == "unchanged"
    assert "greedily" in e.detail


def test_lowered_threshold_only_raises_alpha_up_to_the_codes_bound():
    m = 2.4  # measured on the exact side at 3 steps, sampling at temperature 0.6
    e = relaxed(ACC_T, 1.0, 0.5, ctx(SPEC, lowered(**{ACC_T: 0.5}), bm={"accept_length": m, "temperature": 0.6}), {})
    lo, hi = e.interval
    assert lo == 1.0  # never slower: f(q) = min(1, q/0.5) >= q pointwise
    # the top: every position accepted at min(1, α0/0.5), α0 anywhere in the measured window (±3 %)
    tops = [expected_tokens(min(1.0, a / 0.5), 3) / expected_tokens(a, 3)
            for a in (alpha_from_accept_length(m * f, 3) for f in (0.97, 1.0, 1.03))]
    assert hi == pytest.approx(max(tops))
    assert 1.0 < e.throughput_ratio < hi and e.throughput_ratio == pytest.approx(math.sqrt(lo * hi))
    assert "most likely" in e.detail and "no longer follow the target model's distribution" in e.detail
    # a threshold lowered less allows less: its top is lower, its bottom the same
    e2 = relaxed(ACC_T, 1.0, 0.9, ctx(SPEC, lowered(**{ACC_T: 0.9}), bm={"accept_length": m, "temperature": 0.6}), {})
    assert e2.interval[0] == 1.0 and 1.0 < e2.interval[1] < hi


def test_unknown_temperature_keeps_x1_in_and_names_what_would_pin_it():
    e = relaxed(SINGLE_T, 1.0, 0.3, ctx(SPEC, lowered(**{SINGLE_T: 0.3})), {})
    assert e.interval[0] == 1.0 and e.interval[1] > 1.2
    assert "temperature" in e.detail and "accept length before and after" in e.detail


def test_raised_back_to_exact_is_the_mirror():
    base = lowered(**{ACC_T: 0.5})
    e = relaxed(ACC_T, 0.5, 1.0, ctx(base, SPEC, bm={"accept_length": 2.9, "temperature": 0.6}), {})
    lo, hi = e.interval
    assert hi == 1.0 and lo < e.throughput_ratio < 1.0 and direction(e.throughput_ratio, e.interval) == "unknown"
    # the measured 2.9 came from α ≤ α0 / 0.5: going back to exact loses at most down to α0 = α·0.5
    lows = [expected_tokens(a * 0.5, 3) / expected_tokens(a, 3)
            for a in (alpha_from_accept_length(2.9 * f, 3) for f in (0.97, 1.0, 1.03))]
    assert lo == pytest.approx(min(lows))
    assert "baseline side" in e.detail and "no longer follow" in e.detail


def test_unknown_draft_steps_give_no_number_and_say_what_to_measure():
    base = {k: v for k, v in SPEC.items() if k != "speculative.steps"}
    cur = {**base, ACC_T: 0.5}
    e = relaxed(ACC_T, 1.0, 0.5, ctx(base, cur, bm={"accept_length": 2.4}), {})
    assert e.throughput_ratio is None and e.interval is None
    assert "draft steps is unknown" in e.detail and "accept length before and after" in e.detail


def test_both_accept_lengths_measured_give_their_ratio():
    e = relaxed(ACC_T, 1.0, 0.5, ctx(SPEC, lowered(**{ACC_T: 0.5}), bm={"accept_length": 2.4},
                                      cm={"accept_length": 2.9}), {})
    assert e.throughput_ratio == pytest.approx(2.9 / 2.4) and e.interval[0] > 1.1


def test_speculation_off_and_unchanged_rules():
    off = {"speculative.algorithm": None, SINGLE_T: 1.0, ACC_T: 1.0}
    e = relaxed(ACC_T, 1.0, 0.5, ctx(off, {**off, ACC_T: 0.5}), {})
    assert e.throughput_ratio == 1.0 and "off on both sides" in e.detail
    e = relaxed(ACC_T, None, 1.0, ctx({**SPEC, ACC_T: None}, SPEC), {})
    assert e.throughput_ratio == 1.0 and e.interval == (1.0, 1.0)


def test_two_thresholds_changed_are_counted_once():
    cur = lowered(**{ACC_T: 0.5, SINGLE_T: 0.5})
    twice = relaxed(ACC_T, 1.0, 0.5, ctx(SPEC, cur), {})
    assert twice.throughput_ratio == 1.0 and twice.interval == (1.0, 1.0) and SINGLE_T in twice.detail
    carried = relaxed(SINGLE_T, 1.0, 0.5, ctx(SPEC, cur), {})
    assert carried.interval[1] > 1.1


def test_threshold_single_zero_accepts_everything():
    r = AcceptRule("threshold", 0.0, 1.0)
    assert r.alpha_bounds(0.3) == (1.0, 1.0)
    e = relaxed(SINGLE_T, 1.0, 0.0, ctx(SPEC, lowered(**{SINGLE_T: 0.0}), bm={"accept_length": 2.0,
                                                                              "temperature": 1.0}), {})
    assert e.interval[1] == pytest.approx(4.0 / (2.0 * 0.97))  # every draft accepted: k + 1 tokens a step


VLLM = {"speculative.algorithm": "EAGLE", "speculative.steps": 3, METHOD: "rejection_sampler"}


def test_vllm_typical_acceptance_holds_both_directions():
    cur = {**VLLM, METHOD: "typical_acceptance_sampler"}
    e = relaxed(METHOD, "rejection_sampler", "typical_acceptance_sampler",
                ctx(VLLM, cur, bm={"accept_length": 2.5, "temperature": 0.9}, engine="vLLM"), {})
    lo, hi = e.interval
    a = alpha_from_accept_length(2.5 * 0.97, 3)
    assert lo == pytest.approx(expected_tokens(a * math.exp(-TYPICAL_LOSS), 3) / expected_tokens(a, 3), rel=0.05)
    assert lo < 1.0 < hi and "no longer follow" in e.detail
    # its own threshold lowered (typical on both sides): only more accepted
    e2 = relaxed(TYPICAL_T, 0.09, 0.05, ctx({**cur, TYPICAL_T: 0.09}, {**cur, TYPICAL_T: 0.05}, engine="vLLM"), {})
    assert e2.interval[0] == 1.0 < e2.interval[1]
    # the method is the carrier when the threshold changes with it
    e3 = relaxed(TYPICAL_T, None, 0.05, ctx(VLLM, {**cur, TYPICAL_T: 0.05}, engine="vLLM"), {})
    assert e3.interval == (1.0, 1.0) and METHOD in e3.detail


def test_vllm_block_is_lossless_and_never_slower_synthetic_is_forced():
    e = relaxed(METHOD, None, "block", ctx({**VLLM, METHOD: None}, {**VLLM, METHOD: "block"}, engine="vLLM"), {})
    assert e.interval[0] == 1.0 and e.interval[1] <= math.exp(0.10) * 1.0001 and "exact" in e.detail
    # measured under block verification, back to standard: the mirror, down to e^-BLOCK_GAIN
    e = relaxed(METHOD, "block", "standard", ctx({**VLLM, METHOD: "block"}, {**VLLM, METHOD: "standard"},
                                                 bm={"accept_length": 2.5}, engine="vLLM"), {})
    assert e.interval[1] == 1.0 and e.interval[0] == pytest.approx(math.exp(-0.10))
    syn = {**VLLM, METHOD: "synthetic", SYNTHETIC: 3.5}
    e = relaxed(METHOD, "standard", "synthetic", ctx(VLLM, syn, bm={"accept_length": 2.0}, engine="vLLM"), {})
    assert e.interval[0] == pytest.approx(3.5 / (2.0 * 1.03), rel=0.01) and "benchmarking only" in e.detail
    e = relaxed(METHOD, "standard", "synthetic", ctx(VLLM, {**VLLM, METHOD: "synthetic"}, engine="vLLM"), {})
    assert e.throughput_ratio is None and "synthetic_acceptance_length" in e.detail


def test_odd_values_degrade_to_no_estimate():
    e = relaxed(ACC_T, 1.0, "lots", ctx(SPEC, lowered(**{ACC_T: "lots"})), {})
    assert e.throughput_ratio is None and "not a usable number" in e.detail
    e = relaxed(METHOD, None, "mystery", ctx(VLLM, {**VLLM, METHOD: "mystery"}, engine="vLLM"), {})
    assert e.throughput_ratio is None and "mystery" in e.detail


def test_temperature_is_a_known_metric():
    assert parse_metrics(["temperature=0.6"], "--current-metric") == {"temperature": 0.6}


def test_an_unread_or_start_up_drafter_gives_no_number_unless_both_accept_lengths_were_measured():
    unread = {METHOD: "rejection_sampler"}  # vLLM 0.8.2 read --speculative-config as text: no algorithm concept
    cur = {METHOD: "typical_acceptance_sampler"}
    e = relaxed(METHOD, "rejection_sampler", "typical_acceptance_sampler", ctx(unread, cur, engine="vLLM"), {})
    assert e.throughput_ratio is None and "not read" in e.detail and "accept length before and after" in e.detail
    runtime = {**VLLM, "speculative.algorithm": "runtime"}
    e = relaxed(METHOD, "rejection_sampler", "typical_acceptance_sampler",
                ctx(runtime, {**runtime, **cur}, bm={"accept_length": 2.0}, cm={"accept_length": 2.6}, engine="vLLM"),
                {})
    assert e.throughput_ratio == pytest.approx(1.3) and "no longer follow" in e.detail


def test_the_engines_map_their_acceptance_flags_to_the_concepts():
    from driftwatch.engines.sglang.engine import ENGINE as SGLANG
    from driftwatch.engines.vllm.engine import ENGINE as VLLM_ENGINE

    values, _ = SGLANG.read_config(["--model-path", "M", "--speculative-algorithm", "EAGLE",
                                    "--speculative-accept-threshold-single", "0.3"],
                                   engine_version="0.5.12").concept_values()
    assert values[SINGLE_T] == pytest.approx(0.3) and values[ACC_T] == pytest.approx(1.0)  # the release default
    values, _ = VLLM_ENGINE.read_config(["serve", "M", "--spec-decoding-acceptance-method", "typical_acceptance_sampler",
                                         "--typical-acceptance-sampler-posterior-threshold", "0.05"],
                                        engine_version="0.8.2").concept_values()
    assert values[METHOD] == "typical_acceptance_sampler" and values[TYPICAL_T] == pytest.approx(0.05)
    spec = '{"method": "eagle3", "model": "x", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic", ' \
           '"synthetic_acceptance_length": 2.5}'
    values, _ = VLLM_ENGINE.read_config(["serve", "M", "--speculative-config", spec],
                                        engine_version="0.25.0").concept_values()
    assert values[METHOD] == "synthetic" and values[SYNTHETIC] == pytest.approx(2.5)
