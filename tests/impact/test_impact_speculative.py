"""Speculative models, including the seed calibrations (docs/impact.md, calibration table)."""
import pytest

from driftwatch.impact import ImpactContext, get_model
from driftwatch.impact.uncertainty import confidence_of

steps = get_model("speculative_steps")
toggle = get_model("speculative_toggle")

# Sides are concept dicts (driftwatch/concepts.py), as every engine maps its native fields.
ALGO, STEPS, TOPK, DRAFT = "speculative.algorithm", "speculative.steps", "speculative.topk", "speculative.draft_tokens"

# seed 000: Qwen3.6-27B on 2×A6000 — 70 tok/s at 3 steps (NEXTN, topk 1), 40 tok/s at 1 step.
SEED0_BASE = {"model.path": "/root/models/Qwen3.6-27B", ALGO: "EAGLE", STEPS: 3, TOPK: 1, DRAFT: 4,
              "batch.max_running_requests": 16, "kv.context_length": 131072, "parallel.tensor": 2}
SEED0_CUR = {**SEED0_BASE, STEPS: 1, DRAFT: 2, "batch.max_running_requests": 48, "kv.context_length": "runtime"}
# seeds 001/004: Qwen3.5-122B-A10B on 4× RTX PRO 6000 — 1 → 2 steps, topk 1.
SEED4_BASE = {"model.path": "/models/Qwen3.5-122B-A10B", ALGO: "EAGLE", STEPS: 1, TOPK: 1,
              "batch.max_running_requests": "runtime", "parallel.tensor": 4}
SEED4_CUR = {**SEED4_BASE, STEPS: 2}


def ctx(base, cur, bm=None, cm=None, conc=1, brt=(), crt=()):
    return ImpactContext(base, cur, set(brt), set(crt), dict(bm or {}), dict(cm or {}), conc)


def test_seed_000_current_accept_length_only_within_15_percent():
    # The accept length measured at 1 step (α 0.75) observes draft position 1 only. The same drafter
    # accepts 0.75 at position 1 on the 3-step server too; its positions 2-3 were never observed and
    # use the prior: E(3) = 1 + 0.75 + 0.75·0.85 + 0.75·0.85² = 2.93. Carrying 0.75 to every position
    # (E(3) = 2.73, ×0.67) is the floor given in the detail; the prior throughout (E(3) = 3.19) would
    # ignore a measurement of position 1.
    e = steps(STEPS, 3, 1, ctx(SEED0_BASE, SEED0_CUR, {"throughput": 70}, {"accept_length": 1.75}), {})
    expected_baseline = 1 + 0.75 + 0.75 * 0.85 + 0.75 * 0.85 ** 2
    assert f"E(3)={expected_baseline:.2f}" in e.detail and "E(1)=1.75" in e.detail
    predicted = 70 * e.throughput_ratio
    assert predicted == pytest.approx(43.8, abs=0.3)  # the prior-path table in docs/impact.md
    assert abs(predicted - 40) / 40 <= 0.15
    # the seed's measured 40 tok/s lies inside the interval; confidence follows the interval's width
    lo, hi = e.interval
    assert lo <= e.throughput_ratio <= hi and lo <= 40 / 70 <= hi and hi < 1.0
    assert e.confidence == confidence_of(e.interval) and e.dimension == "single-stream"
    assert "α≈0.75" in e.detail and "observes draft position 1 only" in e.detail
    assert "×0.67" in e.detail and "measure the accept length on the baseline side" in e.detail


def test_deeper_positions_use_the_prior_after_the_measured_ones():
    # Measured at 1 step, predicting 3: position 1 keeps the measured α, positions 2-3 the prior, so
    # the prior's value moves the baseline's E(3) (a prior throughout would not depend on the
    # measurement at all).
    c = ctx(SEED0_BASE, SEED0_CUR, {}, {"accept_length": 1.75})
    lo = steps(STEPS, 3, 1, c, {"alpha_prior": 0.8})
    hi = steps(STEPS, 3, 1, c, {"alpha_prior": 0.95})
    assert f"E(3)={1 + 0.75 + 0.75 * 0.8 + 0.75 * 0.8 ** 2:.2f}" in lo.detail
    assert f"E(3)={1 + 0.75 + 0.75 * 0.95 + 0.75 * 0.95 ** 2:.2f}" in hi.detail
    assert hi.throughput_ratio < lo.throughput_ratio  # a better baseline makes the drop to 1 step larger


def test_shallow_measurement_carried_to_fewer_steps_is_used_as_is():
    # Measured at 3 steps, predicting 1 step: the measured α covers position 1, so it is used.
    e = steps(STEPS, 3, 1, ctx(SEED0_BASE, SEED0_CUR, {"throughput": 70, "accept_length": 3.1}, {}), {})
    assert "prior" not in e.detail
    # measured on the baseline, position 1 observed: a narrow interval, below 1, and high confidence
    lo, hi = e.interval
    assert lo <= e.throughput_ratio <= hi < 1.0 and hi / lo <= 1.25 and e.confidence == "high"


def test_seed_000_with_both_accept_lengths():
    e = steps(STEPS, 3, 1,
              ctx(SEED0_BASE, SEED0_CUR, {"throughput": 70, "accept_length": 3.1}, {"accept_length": 1.75}), {})
    assert 70 * e.throughput_ratio == pytest.approx(41.4, abs=0.3)
    assert e.confidence == "high"


def test_seed_001_one_stream_prior():
    e = steps(STEPS, 1, 2, ctx(SEED4_BASE, SEED4_CUR, conc=1), {})
    measured = 182 / 122
    assert e.throughput_ratio == pytest.approx(1.359, abs=0.005)
    assert abs(e.throughput_ratio - measured) / measured <= 0.15
    assert "α prior 0.85" in e.detail
    # without config.json, an EAGLE unit with no draft model is the model's own head: the MTP range
    # (up to α 0.97) is in the interval, and the seed's measured ×1.49 with it
    lo, hi = e.interval
    assert 1.0 < lo <= e.throughput_ratio <= hi and lo <= measured <= hi
    assert e.confidence == confidence_of(e.interval)


def test_seed_004_concurrency_64_prior():
    e = steps(STEPS, 1, 2, ctx(SEED4_BASE, SEED4_CUR, conc=64), {})
    measured = 1844 / 1566
    assert abs(e.throughput_ratio - measured) / measured <= 0.05
    assert e.dimension == "aggregate"


def test_seed_004_decomposed_with_measured_runtime_caps():
    c = ctx(SEED4_BASE, SEED4_CUR, {"max_running_requests": 26}, {"max_running_requests": 21}, conc=64)
    s = steps(STEPS, 1, 2, c, {})
    cap = get_model("concurrency_cap")("batch.max_running_requests", "runtime", "runtime", c, {})
    joint = s.throughput_ratio * cap.throughput_ratio
    measured = 1844 / 1566
    assert "batch 21" in s.detail
    assert abs(joint - measured) / measured <= 0.15


def test_more_steps_help_less_at_high_concurrency():
    r = [steps(STEPS, 1, 2, ctx(SEED4_BASE, SEED4_CUR, conc=c), {}).throughput_ratio
         for c in (1, 8, 64, 256)]
    assert r == sorted(r, reverse=True)
    # at very large batches verifying more tokens outweighs the extra accepted ones
    big = steps(STEPS, 1, 5, ctx(SEED4_BASE, {**SEED4_CUR, STEPS: 5}, conc=512), {})
    assert big.throughput_ratio < 1.0


def test_ratio_follows_the_shared_first_position_acceptance():
    # Measured on the 1-step side only: position 1's acceptance is the same drafter's on both
    # servers, so a higher accept length raises both E(1) and E(3); the 3-step server gains more from
    # each accepted first token (its deeper positions build on it), so the drop to 1 step is larger.
    ratios, e3 = [], []
    for L in (1.2, 1.5, 1.75, 1.9):
        e = steps(STEPS, 3, 1, ctx(SEED0_BASE, SEED0_CUR, {}, {"accept_length": L}), {})
        ratios.append(e.throughput_ratio)
        e3.append(float(e.detail.split("E(3)=")[1].split(" ")[0]))
    assert ratios == sorted(ratios, reverse=True)
    assert e3 == sorted(e3) and all(r < 1.0 for r in ratios)
    # measured on both sides, the current side's own acceptance decides: more accepted, less lost
    both = [steps(STEPS, 3, 1, ctx(SEED0_BASE, SEED0_CUR, {"accept_length": 3.1}, {"accept_length": L}), {})
            .throughput_ratio for L in (1.2, 1.5, 1.75, 1.9)]
    assert both == sorted(both)


def test_symmetry_of_direction():
    up = steps(STEPS, 1, 3, ctx(SEED0_CUR, SEED0_BASE), {}).throughput_ratio
    down = steps(STEPS, 3, 1, ctx(SEED0_BASE, SEED0_CUR), {}).throughput_ratio
    assert up * down == pytest.approx(1.0)


def test_params_override_prior_and_decay():
    e = steps(STEPS, 1, 2, ctx(SEED4_BASE, SEED4_CUR), {"alpha_prior": 0.6})
    e0 = steps(STEPS, 1, 2, ctx(SEED4_BASE, SEED4_CUR), {})
    assert e.throughput_ratio < e0.throughput_ratio
    d = steps(STEPS, 1, 2, ctx(SEED4_BASE, SEED4_CUR), {"decay": 0.8})
    assert d.throughput_ratio < e0.throughput_ratio
    # a stronger decay moves the low end of the interval down with the point
    assert d.interval[0] < e0.interval[0] and d.interval[0] <= d.throughput_ratio <= d.interval[1]


def test_topk_change_with_steps_change_is_not_counted_twice():
    base = {**SEED0_BASE, TOPK: 4, DRAFT: 8}
    e = steps(TOPK, 4, 1, ctx(base, SEED0_CUR), {})
    assert e.throughput_ratio == 1.0 and "not twice" in e.detail


def test_draft_tokens_forced_with_topk_1():
    cur = {**SEED0_BASE, DRAFT: 8}
    e = steps(DRAFT, 4, 8, ctx(SEED0_BASE, cur), {})
    assert e.throughput_ratio == 1.0 and e.confidence == "high"


def test_unset_steps_assume_architecture_default_with_low_confidence():
    cur = {**SEED0_CUR, STEPS: None, TOPK: None, DRAFT: None}
    e = steps(STEPS, 3, None, ctx(SEED0_BASE, cur, {}, {"accept_length": 1.75}), {})
    assert e.throughput_ratio == 1.0 and "architecture default 3" in e.detail
    assert e.confidence == "low"


def test_unset_steps_on_llama_assume_5_4_8():
    base = {**SEED0_BASE, "model.path": "/m/Meta-Llama-3-8B-Instruct"}
    cur = {**base, STEPS: None, TOPK: None, DRAFT: None}
    e = steps(STEPS, 3, None, ctx(base, cur), {})
    assert "E(5, topk 4)" in e.detail and "architecture default 5" in e.detail
    assert e.throughput_ratio > 1.0 and e.confidence == "low"


def test_toggle_off_at_one_stream_loses_the_speculative_gain():
    cur = {**SEED0_BASE, ALGO: None}
    e = toggle(ALGO, "EAGLE", None, ctx(SEED0_BASE, cur, {"accept_length": 3.1}), {})
    assert e.throughput_ratio == pytest.approx((1 / (1 + 1 / 256)) / (3.1 / (1.06 + 4 / 256)), rel=1e-6)
    assert "off" in e.detail


def test_toggle_on_gains_and_is_inverse_of_off():
    off = {**SEED0_BASE, ALGO: None}
    on = toggle(ALGO, None, "EAGLE", ctx(off, SEED0_BASE), {}).throughput_ratio
    down = toggle(ALGO, "EAGLE", None, ctx(SEED0_BASE, off), {}).throughput_ratio
    assert on > 2.5 and on * down == pytest.approx(1.0)


def test_toggle_nextn_equals_eagle():
    e = toggle(ALGO, "NEXTN", "EAGLE",
               ctx({**SEED0_BASE, ALGO: "NEXTN"}, SEED0_BASE), {})
    assert e.throughput_ratio == 1.0 and e.confidence == "high"


def test_algorithm_change_has_no_number_without_measurements():
    e = toggle(ALGO, "EAGLE", "EAGLE3",
               ctx(SEED0_BASE, {**SEED0_BASE, ALGO: "EAGLE3"}), {})
    assert e.throughput_ratio is None and e.confidence == "low"


def test_algorithm_change_with_both_measurements():
    e = toggle(ALGO, "EAGLE", "EAGLE3",
               ctx(SEED0_BASE, {**SEED0_BASE, ALGO: "EAGLE3"},
                   {"accept_length": 3.0}, {"accept_length": 2.4}), {})
    assert e.throughput_ratio == pytest.approx(0.8, abs=0.01)
    # both accept lengths measured: only their windows and the step cost are uncertain
    lo, hi = e.interval
    assert lo <= 0.8 <= hi < 1.0 and hi / lo < 1.25 and e.confidence == "high"


def test_ngram_without_measurement_is_unknown():
    cur = {**SEED0_BASE, ALGO: "NGRAM"}
    off = {**SEED0_BASE, ALGO: None}
    e = toggle(ALGO, None, "NGRAM", ctx(off, cur), {})
    assert e.throughput_ratio is None and "NGRAM" in e.detail


@pytest.mark.parametrize("bad", [None, "runtime", "three", -1, 2.5, [3], {"a": 1}, True, float("nan")])
def test_odd_values_never_raise(bad):
    for model in (steps, toggle):
        e = model(STEPS, bad, 1, ctx({**SEED0_BASE, STEPS: bad}, SEED0_CUR), {})
        assert e.confidence in ("high", "medium", "low")
        e = model(ALGO, bad, "EAGLE", ctx({**SEED0_BASE, ALGO: bad}, SEED0_BASE),
                  {"alpha_prior": "x", "decay": bad})
        assert e.throughput_ratio is None or e.throughput_ratio > 0


def test_garbage_steps_give_no_ratio():
    e = steps(STEPS, "three", 1, ctx({**SEED0_BASE, STEPS: "three"}, SEED0_CUR), {})
    assert e.throughput_ratio is None and e.confidence == "low"


def test_runtime_algorithm_gives_no_ratio():
    e = steps(STEPS, 3, 1, ctx(SEED0_BASE, SEED0_CUR, crt={ALGO}), {})
    assert e.throughput_ratio is None


def test_without_facts_a_tree_change_names_the_verified_tokens_and_its_cost():
    # same steps, a bigger tree: the lead names what changed (verified tokens) and never calls a
    # dearer step "about the same" when the tokens per step do not move
    base = {**SEED0_BASE, TOPK: 4, DRAFT: 8}
    cur = {**base, DRAFT: 16}
    e = steps(DRAFT, 8, 16, ctx(base, cur), {})
    lead = e.detail.split(" Details: ")[0]
    assert lead.startswith("verifying 8 → 16 tokens per request per step: a step yields")
    assert "a step costs ×" in lead and "about the same" not in lead and e.throughput_ratio < 1


def test_an_engine_without_a_tree_width_assumes_nothing():
    # vLLM maps no speculative.topk (it drafts a chain): that is the engine's behaviour, not an
    # assumption, so it neither adds a note nor lowers the confidence; SGLang leaving topk unset does
    vllm_base = {"model.path": "/m/Qwen3.6-27B", ALGO: "EAGLE", STEPS: 3, "parallel.tensor": 2}
    vllm_cur = {**vllm_base, STEPS: 1}
    measured = ({"accept_length": 2.9}, {})
    v = steps(STEPS, 3, 1, ctx(vllm_base, vllm_cur, *measured), {})
    assert "topk unset" not in v.detail and v.confidence == "high"
    sglang_base = {**vllm_base, TOPK: None, DRAFT: None}
    s = steps(STEPS, 3, 1, ctx(sglang_base, {**sglang_base, STEPS: 1}, *measured), {})
    assert "topk unset: 1 assumed" in s.detail and s.confidence in ("medium", "low")
    assert s.confidence == confidence_of(s.interval)
    # the assumed engine default widens the interval on both sides
    assert s.interval[0] < v.interval[0] and s.interval[1] > v.interval[1]
    assert s.throughput_ratio == pytest.approx(v.throughput_ratio)


def test_a_standalone_drafts_cost_follows_its_size_from_its_name():
    """Issue 35: a separate draft model's pass costs its own weights (its parameter count read from its
    name when its config.json is not at hand), not a fixed fraction of the target's."""
    import os

    from driftwatch.facts import gpu_facts, load_model_config, parse_gpu_option
    from driftwatch.impact.speculative import draft_size_from_name
    assert draft_size_from_name("Qwen/Qwen3-0.6B") == pytest.approx(6e8)
    assert draft_size_from_name("/models/llama-68m/") == pytest.approx(6.8e7)
    assert draft_size_from_name("Qwen/Qwen3-30B-A3B") == pytest.approx(3e9)
    assert draft_size_from_name("/models/draft") is None and draft_size_from_name(None) is None
    models = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "calibration_models")
    target = load_model_config(os.path.join(models, "Qwen--Qwen3-32B.json"))
    h100 = gpu_facts(parse_gpu_option("H100"))
    base = {"model.path": "Qwen/Qwen3-32B", "speculative.algorithm": None}
    ratios = {}
    for draft in ("Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B"):
        cur = {**base, "speculative.algorithm": "STANDALONE", "speculative.steps": 4,
               "speculative.draft_model": draft}
        c = ImpactContext(base, cur, set(), set(), {}, {"accept_length": 3.0}, 1, model_facts=target,
                          baseline_model_facts=target, gpu_facts=h100, concurrency_known=True)
        e = get_model("speculative_toggle")("speculative.algorithm", None, "STANDALONE", c, {})
        assert e.throughput_ratio is not None, e.detail
        ratios[draft] = e.throughput_ratio
    # four passes of an 8B draft cost about a full 32B forward; of a 0.6B one, almost nothing
    assert ratios["Qwen/Qwen3-0.6B"] > ratios["Qwen/Qwen3-8B"] * 1.3, ratios
