"""DP attention and expert parallelism priced by concurrency (issue 35 item 1): impact/dp_attention.py."""
import json
import math
import os

import pytest
from click.testing import CliRunner

from driftwatch.cli import cli
from driftwatch.facts import gpu_facts, load_model_config, parse_gpu_option
from driftwatch.findings.rulebook import load_rules
from driftwatch.impact import ImpactContext, calibration as cal, get_model
from driftwatch.impact.dp_attention import Knobs, attention_groups, attention_params, dpa_step, ep_step
from driftwatch.impact.roofline import hardware_for
from driftwatch.impact.uncertainty import direction

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "calibration_models")
DPA, DP, ATTN, EP = "parallel.dp_attention", "parallel.data", "parallel.attention_data", "parallel.expert_enabled"
model = get_model("dp_attention")


def facts(name):
    return load_model_config(os.path.join(MODELS, name + ".json"))


MLA, GQA, DENSE = facts("deepseek-ai--DeepSeek-V3"), facts("Qwen--Qwen3-30B-A3B"), facts("Qwen--Qwen3-8B")


def ctx(base, cur, m=None, gpu=None, conc=1, known=True, engine="SGLang"):
    g = gpu_facts(parse_gpu_option(gpu)) if gpu else None
    return ImpactContext(dict(base), dict(cur), set(), set(), {}, {}, conc, model_facts=m, baseline_model_facts=m,
                         gpu_facts=g, engine=engine, concurrency_known=known)


def dp_switch(tp, groups, m=None, gpu=None, conc=1, known=True):
    """--enable-dp-attention --dp groups added on a TP server (the finding that carries the change)."""
    base = {"parallel.tensor": tp, DP: 1, DPA: False}
    cur = {"parallel.tensor": tp, DP: groups, DPA: True}
    return model(DPA, False, True, ctx(base, cur, m, gpu, conc, known), {})


def test_mla_moe_costs_one_stream_and_gains_at_high_concurrency():
    one = dp_switch(8, 8, MLA, "H200x8", conc=1)
    many = dp_switch(8, 8, MLA, "H200x8", conc=768)
    assert one.throughput_ratio < 0.9 and one.interval[1] <= 1.0 and one.dimension == "single-stream"
    assert "one stream can only lose" in one.detail
    assert many.throughput_ratio > 1.5 and direction(many.throughput_ratio, many.interval) == "faster"
    assert many.dimension == "aggregate" and "KV pools hold" in many.detail  # TP's replicated latent KV caps it
    # the sign is settled by concurrency: in between, the ratio rises with the running batch
    ratios = [dp_switch(8, 8, MLA, "H200x8", conc=c).throughput_ratio for c in (1, 16, 64, 256, 768)]
    assert ratios == sorted(ratios)


def test_gqa_gains_less_than_mla_at_the_same_load():
    """A GQA model with as many KV heads as GPUs has them split by TP anyway: DP attention saves it no KV
    reads; MLA's latent KV is read whole by every TP GPU."""
    mla = dp_switch(8, 8, MLA, "H200x8", conc=256)
    gqa = dp_switch(4, 4, GQA, "H200x4", conc=256)
    assert gqa.throughput_ratio < 1.0 < mla.throughput_ratio
    assert "MLA" in mla.detail and "MLA" not in gqa.detail


def test_a_dense_gqa_model_never_gains_below_its_pool_limit():
    """Dense, GQA with KV heads ≥ TP: nothing for DP attention to split, only weights to replicate."""
    for conc in (1, 64, 256):
        e = dp_switch(4, 4, DENSE, "H100x4", conc=conc)
        assert e.throughput_ratio is not None and e.throughput_ratio < 1.0, (conc, e.detail)
    assert "MoE" not in dp_switch(4, 4, DENSE, "H100x4", conc=64).detail


def test_the_dp_attention_step_splits_mla_kv_by_group_and_replicates_attention_weights():
    hw = hardware_for(ctx({"parallel.tensor": 8}, {"parallel.tensor": 8}, MLA, "H200x8"))
    k = Knobs(context=2048.0, sync_ms=0.0)
    tp, dp = dpa_step(MLA, hw, 256, 1, k, {}), dpa_step(MLA, hw, 256, 8, k, {})
    assert dp < tp  # 1/8 of the latent KV per GPU outweighs the replicated attention weights at batch 256
    assert dpa_step(MLA, hw, 1, 8, k, {}) > dpa_step(MLA, hw, 1, 1, k, {})  # one request: only the costs
    assert attention_params(MLA) == pytest.approx(11.4e9, rel=0.05)  # MLA projections of DeepSeek-V3
    assert attention_params(GQA) == pytest.approx(48 * 2048 * 128 * (2 * 32 + 2 * 4))


def test_dp_size_one_is_a_no_op():
    """SGLang turns --enable-dp-attention off when the DP size is 1 (server_args._handle_data_parallelism)."""
    base = {"parallel.tensor": 8, DPA: False}
    e = model(DPA, False, True, ctx(base, {"parallel.tensor": 8, DPA: True}, MLA, "H200x8", 1000), {})
    assert e.interval is not None and e.throughput_ratio == 1.0 and e.interval[0] < 1.0 < e.interval[1] and "turns DP attention off" in e.detail
    assert math.log(e.interval[1]) < cal.KERNEL_SWITCH_SPREAD  # narrower than an unknown switch


def test_the_change_is_counted_once_across_its_settings():
    base = {"parallel.tensor": 8, DP: 1, DPA: False}
    cur = {"parallel.tensor": 8, DP: 8, DPA: True}
    c = ctx(base, cur, MLA, "H200x8", 512)
    dp = model(DP, 1, 8, c, {})
    assert dp.throughput_ratio == 1.0 and "priced in the parallel.dp_attention finding" in dp.detail
    assert dp.counted_in == DPA
    assert (model(DPA, False, True, c, {}).throughput_ratio or 0) > 1.0
    # DP attention on both sides, only the DP size differs: that finding carries it
    on = ctx({"parallel.tensor": 8, DP: 2, DPA: True}, {"parallel.tensor": 8, DP: 8, DPA: True}, MLA, "H200x8", 512)
    assert (model(DP, 2, 8, on, {}).throughput_ratio or 0) > 1.0
    # 0.5.23's --attn-dp-size is read as the groups
    assert attention_groups(ctx({}, {ATTN: 4, DPA: False}), "current") == 4
    assert attention_groups(ctx({}, {ATTN: 1, DPA: True, DP: 8}), "current") == 8


def test_plain_data_parallel_is_still_the_parallelism_models():
    c = ctx({"parallel.tensor": 1, DP: 1}, {"parallel.tensor": 1, DP: 2}, conc=64)
    ours, theirs = model(DP, 1, 2, c, {}), get_model("parallelism")(DP, 1, 2, c, {})
    assert (ours.throughput_ratio, ours.detail) == (theirs.throughput_ratio, theirs.detail)


def test_a_dp_size_computed_at_start_up_is_not_taken_for_one():
    base = {"parallel.tensor": 8, DP: 1, DPA: False}
    c = ImpactContext(base, {"parallel.tensor": 8, DP: "runtime", DPA: True}, set(), {DP}, {}, {}, 256,
                      model_facts=MLA, gpu_facts=gpu_facts(parse_gpu_option("H200x8")), engine="SGLang")
    assert attention_groups(c, "current") is None
    e = model(DPA, False, True, c, {})
    assert e.throughput_ratio == 1.0 and "unknown" in e.detail and "turns DP attention off" not in e.detail


def test_groups_that_do_not_divide_tp_will_not_start():
    e = dp_switch(8, 3, MLA, "H200x8", conc=64)
    assert e.throughput_ratio is None and e.dimension == "stability"


def test_without_facts_or_concurrency_keep_the_switch_spread_and_say_which_way():
    lo, hi = math.exp(-cal.KERNEL_SWITCH_SPREAD), math.exp(cal.KERNEL_SWITCH_SPREAD)
    bare = dp_switch(8, 8, conc=64)
    assert bare.throughput_ratio == 1.0 and bare.interval == pytest.approx((lo, hi)) and "config.json" in bare.detail
    unstated = dp_switch(8, 8, MLA, "H200x8", conc=1, known=False)
    assert unstated.throughput_ratio == 1.0 and unstated.interval == pytest.approx((lo, hi))
    assert "not stated" in unstated.detail and "pays from ~" in unstated.detail
    even = int(unstated.detail.split("pays from ~")[1].split()[0])
    assert dp_switch(8, 8, MLA, "H200x8", conc=even).throughput_ratio > 1.0 > dp_switch(
        8, 8, MLA, "H200x8", conc=max(1, even // 2)).throughput_ratio


def test_unknown_gpu_widens_but_keeps_the_physics():
    known = dp_switch(8, 8, MLA, "H200x8", conc=1)
    unknown = dp_switch(8, 8, MLA, None, conc=1)
    assert unknown.interval[0] <= known.interval[0] and unknown.interval[1] <= 1.0


# --- expert parallelism ------------------------------------------------------------------------------

def ep(m=None, gpu=None, conc=1, known=True, tp=4):
    base, cur = {"parallel.tensor": tp, EP: False}, {"parallel.tensor": tp, EP: True}
    return model(EP, False, True, ctx(base, cur, m, gpu, conc, known, "vLLM"), {})


def test_ep_on_a_dense_model_changes_nothing():
    e = ep(DENSE, "H100x4", conc=64)
    assert e.throughput_ratio == 1.0 and "no routed experts" in e.detail
    assert math.log(e.interval[1]) < cal.KERNEL_SWITCH_SPREAD


def test_ep_costs_a_lone_stream_the_imbalance_and_not_a_large_batch():
    one, many = ep(GQA, "H100x4", conc=1), ep(GQA, "H100x4", conc=256)
    assert one.throughput_ratio < many.throughput_ratio <= 1.0
    assert many.throughput_ratio > 0.9  # at a large batch every GPU's share of the hot experts is nearly full
    for e in (one, many):  # kernel shapes (fewer, larger GEMMs) are not known: never a confident sign
        assert e.interval[0] < 1.0 < e.interval[1] and math.log(e.interval[1] / e.throughput_ratio) >= 0.5
    hw = hardware_for(ctx({"parallel.tensor": 4}, {"parallel.tensor": 4}, GQA, "H100x4"))
    k = Knobs(context=2048.0)
    assert ep_step(GQA, hw, 1, 4, k, {}) > ep_step(GQA, hw, 1, 1, k, {})


def test_ep_without_facts_or_with_dp_keeps_the_switch_spread():
    lo, hi = math.exp(-cal.KERNEL_SWITCH_SPREAD), math.exp(cal.KERNEL_SWITCH_SPREAD)
    for e in (ep(conc=64), ep(GQA, "H100x4", known=False)):
        assert e.throughput_ratio == 1.0 and e.interval == pytest.approx((lo, hi))
    base = {"parallel.tensor": 2, DP: 2, EP: False}
    e = model(EP, False, True, ctx(base, {**base, EP: True}, GQA, "H100x4", 64, engine="vLLM"), {})
    assert e.throughput_ratio == 1.0 and "all-to-all" in e.detail


# --- wiring --------------------------------------------------------------------------------------------

def test_rules_point_the_concepts_at_the_model():
    rules = {r.id: r for r in load_rules()}
    assert rules["DW302"].model == "dp_attention" and rules["DW703"].model == "dp_attention"


def test_compare_prices_dp_attention_by_the_stated_concurrency(tmp_path):
    unit = "[Service]\nExecStart=/srv/v/bin/python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 {}\n"
    (tmp_path / "b.unit").write_text(unit.format("--tp-size 8"))
    (tmp_path / "c.unit").write_text(unit.format("--tp-size 8 --dp-size 8 --enable-dp-attention"))
    said = {}
    for conc in ("1", "768"):
        r = CliRunner().invoke(cli, ["compare", "--baseline", str(tmp_path / "b.unit"), "--unit-file",
                                     str(tmp_path / "c.unit"), "--model-config",
                                     os.path.join(MODELS, "deepseek-ai--DeepSeek-V3.json"), "--gpu", "H200x8",
                                     "--concurrency", conc, "--format", "json"])
        assert r.exit_code == 1, r.output
        said[conc] = json.loads(r.output)
    assert said["768"]["predicted_direction"] == "faster" and said["1"]["predicted_direction"] != "faster"
    assert said["1"]["predicted_throughput_ratio"] < 1.0 < said["768"]["predicted_throughput_ratio"]
    top, second = said["768"]["findings"][:2]
    assert (top["key"], top["rule"]) == ("enable_dp_attention", "DW302")
    assert second["key"] == "dp_size" and second["impact"]["counted_in"] == top["rank"]
