"""Roofline step cost and the models that use it (issue 13): physics on model and GPU facts."""
import json
import os
import re

import pytest
from click.testing import CliRunner

from driftwatch.cli import cli
from driftwatch.errors import InputError
from driftwatch.facts import gpu_facts, load_model_config, parse_gpu_option
from driftwatch.impact import ImpactContext, get_model
from driftwatch.impact.roofline import Hardware, experts_touched, forward_time
from driftwatch.impact.uncertainty import direction

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "calibration_models")
A, STEPS, TOPK, DRAFT = "speculative.algorithm", "speculative.steps", "speculative.topk", "speculative.draft_tokens"


def model(name):
    return load_model_config(os.path.join(MODELS, name + ".json"))


def gpus(value):
    return gpu_facts(parse_gpu_option(value))


MOE, DENSE = model("Qwen--Qwen3-30B-A3B"), model("Qwen--Qwen3-8B")
H200 = gpus("H200")


def ctx(base, cur, m=None, g=None, conc=1, bm=None, cm=None):
    return ImpactContext(base, cur, set(), set(), dict(bm or {}), dict(cm or {}), conc, model_facts=m,
                         baseline_model_facts=m, gpu_facts=g)


def test_distinct_experts_touched_under_uniform_routing():
    assert experts_touched(128, 8, 1, pool=1.0) == pytest.approx(8)
    assert experts_touched(128, 8, 4, pool=1.0) == pytest.approx(128 * (1 - (1 - 8 / 128) ** 4))  # ≈ 29.1
    assert experts_touched(128, 8, 4, pool=1.0) / 8 == pytest.approx(3.64, abs=0.01)  # "~3.6× the expert weights"
    assert experts_touched(128, 8, 10_000, pool=1.0) == pytest.approx(128)
    assert experts_touched(0, 8, 4) == 0.0


@pytest.mark.parametrize("pool", [0.1, 0.25, 0.4, 0.5, 0.75])
def test_concentrated_routing_reads_fewer_experts_and_saturates_at_its_pool(pool):
    for experts, k in ((128, 8), (256, 8), (64, 6), (8, 2)):
        assert experts_touched(experts, k, 1, pool=pool) == pytest.approx(k)  # one token: its own k
        prev = k
        for n in (2, 3, 4, 8, 26, 52, 200):
            got = experts_touched(experts, k, n, pool=pool)
            assert prev - 1e-9 <= got <= experts_touched(experts, k, n, pool=1.0) + 1e-9  # grows, ≤ uniform
            assert got <= max(k, pool * experts) + 1e-9
            prev = got
        assert experts_touched(experts, k, 100_000, pool=pool) == pytest.approx(max(k, pool * experts))


def test_more_experts_per_token_than_experts_and_odd_pools():
    assert experts_touched(8, 10, 4, pool=1.0) == pytest.approx(8)  # never more experts than the layer has
    assert experts_touched(8, 8, 1, pool=0.4) == pytest.approx(8)
    shipped = experts_touched(128, 8, 26)
    for odd in (0.0, -0.5, 1.5, float("nan"), float("inf")):
        assert experts_touched(128, 8, 26, pool=odd) == pytest.approx(shipped), odd
    assert experts_touched(128, 8, float("nan")) == 0.0


def test_the_shipped_routing_pool_is_what_a_forward_reads():
    hw = Hardware.of(H200)
    step = forward_time(MOE, hw, 1, 4)
    assert step.experts_touched == pytest.approx(experts_touched(128, 8, 4))
    uniform = forward_time(MOE, hw, 1, 4, params={"routing_pool": 1.0})
    assert uniform.experts_touched == pytest.approx(29.1, abs=0.1)
    assert uniform.expert_bytes >= step.expert_bytes


def test_verifying_more_tokens_is_free_on_a_dense_model_and_not_on_a_sparse_moe():
    hw = Hardware.of(H200)
    dense = forward_time(DENSE, hw, 1, 4).total / forward_time(DENSE, hw, 1, 1).total
    moe = forward_time(MOE, hw, 1, 4).total / forward_time(MOE, hw, 1, 1).total
    assert dense < 1.02 and moe > 1.3
    step = forward_time(MOE, hw, 1, 4)
    assert step.bound == "memory" and step.experts_touched == pytest.approx(experts_touched(128, 8, 4))


def test_tensor_parallelism_divides_weights_and_adds_all_reduces():
    m = model("Qwen--Qwen2-72B-Instruct")
    one = forward_time(m, Hardware.of(gpus("RTX A6000x4"), tp=2), 1, 1)
    four = forward_time(m, Hardware.of(gpus("RTX A6000x4"), tp=4), 1, 1)
    assert four.weights == pytest.approx(one.weights / 2)
    assert four.allreduce > 0 and one.allreduce > 0 and four.allreduce > one.allreduce * 0.99


def test_more_tokens_turn_a_forward_compute_bound():
    big = forward_time(DENSE, Hardware.of(H200), 512, 4)
    assert big.bound == "compute"


def test_eagle3_added_to_a_sparse_moe_is_not_a_confident_speedup():
    # Issue 13: the same formula predicted ×3 for EAGLE3 on Qwen3-30B-A3B (measured ×0.7, slower) and
    # ×5.6 for a 32-token tree (measured ×0.46). On a 128-expert MoE, verification reads ~3.2× the
    # expert weights at batch 1: whether drafting pays depends on the acceptance, so without a
    # measured accept length the sign is not claimed: the interval holds ×1 and both readings (issue 35).
    base = {"model.path": "Qwen/Qwen3-30B-A3B", A: None}
    chain = {**base, A: "EAGLE3", STEPS: 3, TOPK: 1, "speculative.draft_model": "x/eagle3"}
    tree = {**chain, STEPS: 6, TOPK: 8, DRAFT: 32}
    for cur in (chain, tree):
        e = get_model("speculative_toggle")(A, None, "EAGLE3", ctx(base, cur, MOE, H200), {})
        assert e.throughput_ratio is not None and e.confidence == "low"
        assert direction(e.throughput_ratio, e.interval) == "unknown", e.interval
        assert "is not settled (the interval holds ×1)" in e.detail
        assert "128-expert MoE" in e.detail and "pays off only if" in e.detail and "measure the accept length" in e.detail
    e = get_model("speculative_toggle")(A, None, "EAGLE3", ctx(base, chain, MOE, H200), {})
    assert e.detail.startswith("speculative decoding off → EAGLE3: Verifying 4 tokens per request per step on "
                               "this 128-expert MoE")
    # ~3.6× under uniform routing over all 128 experts; the fitted routing pool reads fewer, still > 3×
    grown = re.search(r"reads ~([0-9.]+)× the expert weights of 1 token at batch 1", e.detail)
    assert grown and float(grown.group(1)) == pytest.approx(experts_touched(128, 8, 4) / 8, abs=0.05), e.detail
    # With the accept length measured (1.5 tokens/step), the model predicts "slower".
    slow = get_model("speculative_toggle")(A, None, "EAGLE3", ctx(base, chain, MOE, H200, cm={"accept_length": 1.5}), {})
    assert slow.throughput_ratio < 0.8 and "no longer pay for it" in slow.detail
    # Without facts the old prior formula is kept, and says what it lacks.
    old = get_model("speculative_toggle")(A, None, "EAGLE3", ctx(base, chain), {})
    assert old.throughput_ratio == pytest.approx(2.97, abs=0.02) and "model facts unknown" in old.detail


def test_eagle3_added_to_a_dense_model_at_batch_1_is_a_speedup():
    base = {"model.path": "Qwen/Qwen3-8B", A: None}
    cur = {**base, A: "EAGLE3", "speculative.draft_model": "Tengyunw/qwen3_8b_eagle3"}
    e = get_model("speculative_toggle")(A, None, "EAGLE3", ctx(base, cur, DENSE, H200), {})
    assert 1.5 < e.throughput_ratio < 2.5  # calibration case sg-eagle3-added-qwen3-8b-h200: ×1.96 measured
    assert e.detail.startswith("speculative decoding off → EAGLE3: Verifying 4 instead of 1 token per request "
                               "costs about the same on this dense model")
    assert "Details:" in e.detail and "α prior 0.85" in e.detail and "roofline" in e.detail


def test_seeds_with_facts_stay_within_15_percent():
    from driftwatch.impact import calibration as cal
    qwen36, qwen35 = model("Qwen--Qwen3.6-27B"), model("Qwen--Qwen3.5-122B-A10B")
    s0b = {"model.path": "/home/ml/models/Qwen3.6-27B", A: "NEXTN", STEPS: 3, TOPK: 1, "parallel.tensor": 2}
    e = get_model("speculative_steps")(STEPS, 3, 1, ctx(s0b, {**s0b, STEPS: 1}, qwen36, gpus("RTX A6000x2"),
                                                        bm={"throughput": 70}, cm={"accept_length": 1.75}), {})
    assert abs(70 * e.throughput_ratio - 40) / 40 <= 0.15
    s1b = {"model.path": "/home/ml/models/Qwen3.5-122B-A10B", A: "EAGLE", STEPS: 1, TOPK: 1, "parallel.tensor": 4}
    # seed 004's servers reported 26 and 21 running requests at start-up (the hybrid state pool holds
    # one recurrent state per verified draft token); at concurrency 64 the caps decide the batch.
    caps = dict(bm={"max_running_requests": 26}, cm={"max_running_requests": 21})
    for conc, measured in ((1, 182 / 122), (64, 1844 / 1566)):
        c = ctx(s1b, {**s1b, STEPS: 2}, qwen35, gpus("4x RTX PRO 6000"), conc=conc, **caps)
        e = get_model("speculative_steps")(STEPS, 1, 2, c, {})
        cap = get_model("concurrency_cap")("batch.max_running_requests", "runtime", "runtime", c, {})
        joint = e.throughput_ratio * cap.throughput_ratio
        assert e.throughput_ratio > 1 and abs(joint / measured - 1) <= 0.15, (conc, joint)
        a = cal.ALPHA_PRIOR["MTP"]
        assert "256-expert MoE" in e.detail and f"α prior {a:.2f}" in e.detail  # the model's own MTP head
        # A physical model stays below free verification with the prior: E(2)/E(1) = 1 + α²/(1 + α).
        assert e.throughput_ratio < 1 + a ** 2 / (1 + a)
        # at batch 21 the batch already touches most experts it routes to: the third token reads
        # about the same expert weights; at batch 1 it reads more of them
        if conc == 64:
            assert "reads about the same expert weights as 2 tokens at batch 21" in e.detail, e.detail
        else:
            assert re.search(r"reads ~1\.[1-9]× the expert weights of 2 tokens at batch 1", e.detail), e.detail


def test_the_speculative_iteration_overhead_is_paid_once_per_step():
    # Switching speculation on pays the per-iteration machinery (tree, accept pass, host sync) once;
    # a steps change on a side that already speculates does not pay it again.
    from driftwatch.impact import calibration as cal
    base = {"model.path": "Qwen/Qwen3-8B", A: None}
    cur = {**base, A: "EAGLE3", STEPS: 3, TOPK: 1, "speculative.draft_model": "d"}
    on = get_model("speculative_toggle")
    steps = get_model("speculative_steps")
    with_it = on(A, None, "EAGLE3", ctx(base, cur, DENSE, H200), {})
    without = on(A, None, "EAGLE3", ctx(base, cur, DENSE, H200), {"spec_step_overhead_ms": 0.0})
    assert cal.SPEC_STEP_OVERHEAD_MS > 0 and with_it.throughput_ratio < without.throughput_ratio
    more = {**cur, STEPS: 4}
    measured = dict(bm={"accept_length": 2.8}, cm={"accept_length": 3.2})
    a = steps(STEPS, 3, 4, ctx(cur, more, DENSE, H200, **measured), {})
    b = steps(STEPS, 3, 4, ctx(cur, more, DENSE, H200, **measured), {"spec_step_overhead_ms": 0.0})
    # paid on both sides it dilutes the extra step cost: the ratio moves toward E_cur / E_base
    assert b.throughput_ratio < a.throughput_ratio < 3.2 / 2.8


def test_unknown_gpu_uses_a_reference_gpu_and_says_so():
    base = {"model.path": "Qwen/Qwen3-8B", A: None}
    cur = {**base, A: "EAGLE3", "speculative.draft_model": "d"}
    e = get_model("speculative_toggle")(A, None, "EAGLE3", ctx(base, cur, DENSE, None), {})
    assert e.confidence == "low" and "GPU unknown" in e.detail and "reference GPU" in e.detail


def test_cuda_graphs_with_facts_are_quantified_and_without_get_the_prior_band():
    m = model("Qwen--Qwen2-7B-Instruct")
    c = ctx({"cuda_graph.enabled": False}, {"cuda_graph.enabled": True}, m, gpus("RTX 4090"))
    e = get_model("feature_toggle")("cuda_graph.enabled", False, True, c, {})
    assert e.throughput_ratio > 1.0 and "launches" in e.detail
    # the interval holds the ratio at both ends of the eager launch overhead (calibration.py); its
    # width sets the confidence
    from driftwatch.impact import calibration as cal
    from driftwatch.impact.uncertainty import confidence_of
    lo, hi = e.interval
    slow = get_model("feature_toggle")("cuda_graph.enabled", False, True, c,
                                       {"eager_layer_us": cal.EAGER_LAYER_US_RANGE[1]})
    assert lo < e.throughput_ratio < hi and slow.throughput_ratio <= hi and e.confidence == confidence_of(e.interval)
    off = get_model("feature_toggle")("cuda_graph.enabled", True, False, c, {})
    assert off.throughput_ratio == pytest.approx(1 / e.throughput_ratio)
    assert off.interval[0] == pytest.approx(1 / hi) and off.interval[1] == pytest.approx(1 / lo)
    # without facts: the eager prior, an interval that holds ×1 (no direction claimed)
    prior = get_model("feature_toggle")("cuda_graph.enabled", False, True, ctx({}, {}), {})
    assert prior.interval == cal.GRAPH_PRIOR_RANGE and prior.confidence == "low"


def test_graph_limit_with_facts_uses_the_step_cost():
    m = model("Qwen--Qwen3.5-9B")
    c = ctx({}, {}, m, gpus("RTX 5090"), conc=32)
    e = get_model("kv_capacity")("cuda_graph.max_batch", 24, 48, c, {})
    assert e.throughput_ratio > 1.0 and "now fit" in e.detail
    assert get_model("kv_capacity")("cuda_graph.max_batch", 48, 24, c, {}).throughput_ratio < 1.0


def test_concurrency_cap_with_facts_is_sub_linear():
    c = ctx({"batch.max_running_requests": 64}, {"batch.max_running_requests": 32}, DENSE, H200, conc=64)
    e = get_model("concurrency_cap")("batch.max_running_requests", 64, 32, c, {})
    assert 0.5 < e.throughput_ratio < 1.0 and "aggregate" in e.detail and "queued requests wait longer" in e.detail


def test_tensor_parallel_change_with_facts():
    m = model("Qwen--Qwen3-32B")
    c = ctx({"parallel.tensor": 2}, {"parallel.tensor": 1}, m, gpus("H200x2"))
    e = get_model("parallelism")("parallel.tensor", 2, 1, c, {})
    assert 0.4 < e.throughput_ratio < 1.0 and e.dimension == "single-stream" and "1/1 instead of 1/2" in e.detail
    # 72B in bf16 does not fit one 48 GB GPU: the server will not start.
    big = ctx({"parallel.tensor": 2}, {"parallel.tensor": 1}, model("Qwen--Qwen2-72B-Instruct"), gpus("RTX A6000x2"))
    s = get_model("parallelism")("parallel.tensor", 2, 1, big, {})
    assert s.throughput_ratio is None and s.dimension == "stability" and "will not start" in s.detail


def test_compare_reads_model_config_and_gpu_options(tmp_path):
    unit = ("[Service]\nExecStart=/venv/bin/python -m sglang.launch_server --model-path Qwen/Qwen3-8B "
            "--host 0.0.0.0 --port 30000{extra}\n")
    (tmp_path / "base.service").write_text(unit.format(extra=""))
    (tmp_path / "cur.service").write_text(unit.format(
        extra=" --speculative-algorithm EAGLE3 --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3"))
    cfg = tmp_path / "config.json"
    cfg.write_text(open(os.path.join(MODELS, "Qwen--Qwen3-8B.json")).read())
    args = ["compare", "--baseline", str(tmp_path / "base.service"), "--unit-file", str(tmp_path / "cur.service"),
            "--format", "json", "--baseline-metric", "throughput=186"]
    plain = json.loads(CliRunner().invoke(cli, args).output)
    physical = json.loads(CliRunner().invoke(cli, args + ["--model-config", str(cfg), "--gpu", "H200"]).output)
    assert plain["predicted_throughput_ratio"] == pytest.approx(2.97, abs=0.02)
    assert 1.5 < physical["predicted_throughput_ratio"] < 2.5
    top = physical["findings"][0]
    assert "dense model (8.2B params) on NVIDIA H200 SXM" in top["explanation"]
    bad = CliRunner().invoke(cli, args + ["--gpu", "Tesla T4"])  # main() turns InputError into exit 2
    assert isinstance(bad.exception, InputError) and "not a GPU model driftwatch knows" in str(bad.exception)


def test_memory_fraction_with_facts_sizes_the_kv_pool():
    m = model("Qwen--Qwen3-32B")  # 65.5 GB of bf16 weights on one 141 GB H200
    c = ctx({}, {}, m, H200, conc=64)
    smaller = get_model("kv_capacity")("kv.memory_fraction", 0.9, 0.6, c, {})
    assert smaller.throughput_ratio < 1.0 and smaller.dimension == "aggregate" and "requests of 2048 tokens" in smaller.detail
    both_fit = get_model("kv_capacity")("kv.memory_fraction", 0.9, 0.85, ctx({}, {}, m, H200, conc=8), {})
    assert both_fit.throughput_ratio == 1.0
    too_small = get_model("kv_capacity")("kv.memory_fraction", 0.9, 0.4, c, {})
    assert too_small.throughput_ratio is None and too_small.dimension == "stability"
    # without facts the old judgement holds: unknown at concurrency >= 8
    assert get_model("kv_capacity")("kv.memory_fraction", 0.9, 0.6, ctx({}, {}, conc=64), {}).throughput_ratio is None


def test_seed_004_decomposed_with_measured_caps_and_facts():
    # The server ran 26 → 21 requests at once (start-up logs); the model's own MTP head keeps its
    # sign down to the lowest acceptance measured on the seeds (α 0.75), so the steps finding has a
    # ratio and the joint change is within 15 % of the measured ×1.18.
    qwen35 = model("Qwen--Qwen3.5-122B-A10B")
    b = {"model.path": "/home/ml/models/Qwen3.5-122B-A10B", A: "EAGLE", STEPS: 1, TOPK: 1, "parallel.tensor": 4}
    c = ctx(b, {**b, STEPS: 2}, qwen35, gpus("4x RTX PRO 6000"), conc=64, bm={"max_running_requests": 26},
            cm={"max_running_requests": 21})
    s = get_model("speculative_steps")(STEPS, 1, 2, c, {})
    cap = get_model("concurrency_cap")("batch.max_running_requests", "runtime", "runtime", c, {})
    assert s.throughput_ratio is not None and "at batch 21" in s.detail
    assert abs(s.throughput_ratio * cap.throughput_ratio / (1844 / 1566) - 1) <= 0.15


def test_hybrid_model_says_more_draft_tokens_fit_fewer_requests():
    qwen35 = model("Qwen--Qwen3.5-122B-A10B")
    b = {"model.path": "/home/ml/models/Qwen3.5-122B-A10B", A: "EAGLE", STEPS: 1, TOPK: 1, "parallel.tensor": 4}
    e = get_model("speculative_steps")(STEPS, 1, 2, ctx(b, {**b, STEPS: 2}, qwen35, gpus("4x RTX PRO 6000"), conc=64), {})
    assert "holds 4 instead of 3 recurrent states" in e.detail and "max_running_requests" in e.detail
    one = get_model("speculative_steps")(STEPS, 1, 2, ctx(b, {**b, STEPS: 2}, qwen35, gpus("4x RTX PRO 6000")), {})
    assert "recurrent states" not in one.detail  # one stream: the pool does not bind


def test_hybrid_state_pool_note_points_the_way_the_draft_change_goes():
    qwen36 = model("Qwen--Qwen3.6-27B")
    b = {"model.path": "/root/models/Qwen3.6-27B", A: "EAGLE", STEPS: 3, TOPK: 1, "parallel.tensor": 2}
    fewer_tokens = {**b, STEPS: 1}
    e = get_model("speculative_steps")(STEPS, 3, 1, ctx(b, fewer_tokens, qwen36, gpus("RTX A6000x2"), conc=16), {})
    # 4 → 2 verified tokens: more requests fit, so the note must not speak of a smaller gain
    assert "holds 3 instead of 5 recurrent states" in e.detail
    assert "may run more at once" in e.detail and "lower than this estimate" not in e.detail


def test_hybrid_state_pool_note_is_silent_once_the_server_reported_the_cap():
    qwen36 = model("Qwen--Qwen3.6-27B")
    b = {"model.path": "/root/models/Qwen3.6-27B", A: "EAGLE", STEPS: 1, TOPK: 1, "parallel.tensor": 2}
    more_tokens = {**b, STEPS: 3, "batch.max_running_requests": 16}
    steps = get_model("speculative_steps")
    # a cap set in the unit is only an upper limit: the larger state pool may fit fewer than 16
    set_only = steps(STEPS, 1, 3, ctx(b, more_tokens, qwen36, gpus("RTX A6000x2"), conc=64), {})
    assert "holds 5 instead of 3 recurrent states" in set_only.detail and "lower than this estimate" in set_only.detail
    # the server reported what it runs (start-up log / --probe): the batch counts it, nothing to warn about
    reported = ImpactContext(b, more_tokens, set(), set(), {}, {}, 64, model_facts=qwen36, baseline_model_facts=qwen36,
                             gpu_facts=gpus("RTX A6000x2"), current_reported=frozenset({"batch.max_running_requests"}))
    assert "recurrent states" not in steps(STEPS, 1, 3, reported, {}).detail
    metric = ctx(b, more_tokens, qwen36, gpus("RTX A6000x2"), conc=64, cm={"max_running_requests": 9})
    assert "recurrent states" not in steps(STEPS, 1, 3, metric, {}).detail


def test_the_baseline_servers_measured_step_is_set_beside_the_rooflines():
    # seed 001: 122 tok/s at one request and the prior's 1.97 tokens per step ⇒ a step of ≈ 16.1 ms
    qwen35 = model("Qwen--Qwen3.5-122B-A10B")
    b = {"model.path": "/home/ml/models/Qwen3.5-122B-A10B", A: "EAGLE", STEPS: 1, TOPK: 1, "parallel.tensor": 4}
    steps = get_model("speculative_steps")
    e = steps(STEPS, 1, 2, ctx(b, {**b, STEPS: 2}, qwen35, gpus("4x RTX PRO 6000"), bm={"throughput": 122}), {})
    lead, details = e.detail.split(" Details: ")
    e_base = 1 + cal_alpha_mtp()
    assert f"measured step ≈ {e_base / 122 * 1e3:.1f} ms (122 tok/s over 1 request" in details
    assert "both readings of the gap" not in lead  # within the tolerance
    # a server measured far faster than the roofline's step: the ratio itself does not move (one number
    # cannot say which term is off), the interval widens to hold both readings of the gap (a fixed
    # cost, or one that grows with tokens per step) and the sentence says so
    fast = steps(STEPS, 1, 2, ctx(b, {**b, STEPS: 2}, qwen35, gpus("4x RTX PRO 6000"), bm={"throughput": 400}), {})
    assert "shorter" not in fast.detail.split(" Details: ")[0]
    assert ("longer than the baseline server's measured one, so the interval holds both readings of the gap"
            in fast.detail.split(" Details: ")[0])
    assert fast.throughput_ratio == pytest.approx(e.throughput_ratio)
    assert fast.interval[0] <= e.interval[0] and fast.interval[1] >= e.interval[1]
    assert fast.interval[1] / fast.interval[0] > e.interval[1] / e.interval[0]
    # no throughput, or an unstated concurrency: nothing to set beside it
    none = steps(STEPS, 1, 2, ctx(b, {**b, STEPS: 2}, qwen35, gpus("4x RTX PRO 6000")), {})
    assert "measured step" not in none.detail


def cal_alpha_mtp():
    from driftwatch.impact import calibration as cal
    return cal.ALPHA_PRIOR["MTP"]
