"""Non-speculative changes with a direction and an interval where physics gives one (issue 24 item 5):
prefix caching at a stated share, a prefill chunk on stated prompt lengths, the KV-cache dtype as
capacity, CUDA-graph limits whose batch or baseline limit is unknown; "not quantified" otherwise."""
import json
import math
import os

import pytest
from click.testing import CliRunner

from driftwatch.cli import cli
from driftwatch.facts import gpu_facts, load_model_config, parse_gpu_option
from driftwatch.impact import ImpactContext, calibration as cal, get_model
from driftwatch.impact.uncertainty import FASTER, SLOWER, UNKNOWN, direction

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "calibration_models")
CASES = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "calibration_cases")
DENSE = load_model_config(os.path.join(MODELS, "Qwen--Qwen3-8B.json"))
SMALL = load_model_config(os.path.join(MODELS, "Qwen--Qwen3-0.6B.json"))


def ctx(base=None, cur=None, conc=1, known=True, cm=None, m=None, gpu=None, engine=None):
    return ImpactContext(dict(base or {}), dict(cur or {}), set(), set(), {}, dict(cm or {}), conc,
                         model_facts=m, baseline_model_facts=m, gpu_facts=gpu_facts(parse_gpu_option(gpu)) if gpu else None,
                         concurrency_known=known, engine=engine)


def test_prefix_cache_at_a_stated_share_is_faster_and_bounded_by_the_prefill_share():
    e = get_model("feature_toggle")("kv.prefix_cache", False, True, ctx(conc=64, cm={"prefix_share": 0.5}), {})
    lo, hi = e.interval
    f_lo, f_hi = cal.PREFILL_TIME_SHARE
    assert lo == pytest.approx(1 / (1 - f_lo * 0.5) * math.exp(-cal.PREFIX_CACHE_OVERHEAD))
    assert hi == pytest.approx(1 / (1 - f_hi * 0.5)) and lo < e.throughput_ratio < hi
    assert direction(e.throughput_ratio, e.interval) == FASTER and "50%" in e.detail
    off = get_model("feature_toggle")("kv.prefix_cache", True, False, ctx(conc=64, cm={"prefix_share": 0.5}), {})
    assert direction(off.throughput_ratio, off.interval) == SLOWER
    assert off.interval[0] == pytest.approx(1 / hi)
    # a measured hit rate (a percentage here) comes first
    hit = get_model("feature_toggle")("kv.prefix_cache", False, True,
                                      ctx(conc=64, cm={"prefix_share": 0.5, "prefix_cache_hit_rate": 10}), {})
    assert "hit rate 10%" in hit.detail and hit.interval[1] < hi


def test_prefix_cache_with_nothing_shared_costs_its_bookkeeping_only():
    e = get_model("feature_toggle")("kv.prefix_cache", False, True, ctx(conc=64, cm={"prefix_share": 0}), {})
    assert e.interval[1] == pytest.approx(1.0) and e.interval[0] < e.throughput_ratio < 1.0
    assert direction(e.throughput_ratio, e.interval) == UNKNOWN  # "no faster", not "slower"


def test_prefix_cache_without_a_share_is_bounded_and_says_what_to_state():
    # issue 35: nothing shared costs only the bookkeeping, the most the public runs gained is the top
    from driftwatch.impact import calibration as cal
    e = get_model("feature_toggle")("kv.prefix_cache", False, True, ctx(conc=64), {})
    assert e.interval[1] == pytest.approx(cal.PREFIX_UNSTATED_GAIN) and e.interval[0] < 1.0 < e.throughput_ratio
    assert "--workload-prefix-share" in e.detail and "hit rate" in e.detail


def test_larger_prefill_chunk_on_long_prompts_gains_up_to_the_forward_count():
    c = ctx(conc=1, known=False, cm={"prompt_tokens": 13638})
    e = get_model("kv_capacity")("prefill.chunk_size", 8192, 16384, c, {})
    lo, hi = e.interval
    assert hi == pytest.approx(2.0) and lo < 1.0 < e.throughput_ratio <= hi  # decode stall at the low end
    assert "13638-token prompt" in e.detail and "2 → 1 forward passes" in e.detail
    # with model facts the roofline splits fixed and per-token cost: the point moves, the bounds stay
    f = get_model("kv_capacity")("prefill.chunk_size", 8192, 16384,
                                 ctx(conc=1, known=False, cm={"prompt_tokens": 13638}, m=DENSE, gpu="H200"), {})
    assert f.interval == pytest.approx(e.interval) and f.throughput_ratio != pytest.approx(e.throughput_ratio)
    # one stream stated: no decodes wait behind the chunk, the low end is ×1
    alone = get_model("kv_capacity")("prefill.chunk_size", 8192, 16384, ctx(conc=1, cm={"prompt_tokens": 13638}), {})
    assert alone.interval == pytest.approx((1.0, 2.0)) and "wait" not in alone.detail and "wait" in e.detail
    short = get_model("kv_capacity")("prefill.chunk_size", 8192, 16384, ctx(cm={"prompt_tokens": 4000}), {})
    assert short.throughput_ratio == 1.0 and short.interval == (1.0, 1.0)
    none = get_model("kv_capacity")("prefill.chunk_size", 8192, 16384, ctx(conc=8), {})
    assert none.throughput_ratio is None and "--workload-prompt-tokens" in none.detail


def test_kv_dtype_below_saturation_is_the_kernel_band_and_unknown_load_holds_both_readings():
    one = get_model("kernel_choice")("kv.cache_dtype", "auto", "fp8_e4m3", ctx(conc=1), {})
    assert one.interval == pytest.approx(cal.KV_FP8_KERNEL_RANGE) and one.throughput_ratio == 1.0
    busy = get_model("kernel_choice")("kv.cache_dtype", "auto", "fp8", ctx(conc=128), {})
    assert busy.interval == pytest.approx((cal.KV_FP8_KERNEL_RANGE[0], 2.0))
    assert direction(busy.throughput_ratio, busy.interval) == UNKNOWN and "max_running_requests" in busy.detail
    back = get_model("kernel_choice")("kv.cache_dtype", "fp8", "auto", ctx(conc=128), {})
    assert back.interval == pytest.approx((0.5, 1 / cal.KV_FP8_KERNEL_RANGE[0]))
    # same width, another format: a kernel choice, not quantified
    assert get_model("kernel_choice")("kv.cache_dtype", "fp8_e4m3", "fp8_e5m2", ctx(conc=128), {}).throughput_ratio is None


def test_kv_dtype_at_saturating_load_with_facts_prices_the_bigger_batch():
    # Qwen3-8B on one 24 GB GPU: ~16 GB of weights leave room for few 2K-token requests; fp8 fits twice as many
    c = ctx({"kv.memory_fraction": 0.9}, {"kv.memory_fraction": 0.9}, conc=256, m=DENSE, gpu="RTX 4090")
    e = get_model("kernel_choice")("kv.cache_dtype", "auto", "fp8", c, {})
    assert e.throughput_ratio > 1.3 and direction(e.throughput_ratio, e.interval) == FASTER
    assert "requests of 2048 tokens" in e.detail


def test_graph_limit_with_an_unknown_baseline_limit_holds_no_change_and_the_gain():
    c = ctx({}, {"cuda_graph.max_batch": 128}, conc=1, known=False, m=SMALL, gpu="RTX 5090", engine="SGLang")
    e = get_model("kv_capacity")("cuda_graph.max_batch", None, 128, c, {})
    lo, hi = e.interval
    assert lo <= 1.0 < e.throughput_ratio < hi and direction(e.throughput_ratio, e.interval) == UNKNOWN
    assert "computed at start-up" in e.detail and "--concurrency" in e.detail


def test_sglang_full_graphs_are_never_slower_at_the_same_batch_beyond_noise():
    c = ctx({"cuda_graph.max_batch": 24}, {"cuda_graph.max_batch": 48}, conc=32, m=SMALL, gpu="RTX 5090",
            engine="SGLang")
    e = get_model("kv_capacity")("cuda_graph.max_batch", 24, 48, c, {})
    assert direction(e.throughput_ratio, e.interval) == FASTER
    v = ctx({"cuda_graph.max_batch": 24}, {"cuda_graph.max_batch": 48}, conc=32, m=SMALL, gpu="RTX 5090", engine="vLLM")
    assert get_model("kv_capacity")("cuda_graph.max_batch", 24, 48, v, {}).interval[0] < e.interval[0]


def test_compare_takes_the_workload_options(tmp_path):
    case = os.path.join(CASES, "sg-pd-decode-radix-cache-on")
    args = ["compare", "--baseline", os.path.join(case, "baseline.unit"), "--unit-file",
            os.path.join(case, "current.unit"), "--format", "json", "--concurrency", "128"]
    plain = json.loads(CliRunner().invoke(cli, args).output)
    stated = json.loads(CliRunner().invoke(cli, args + ["--workload-prefix-share", "0.9"]).output)
    # without a stated share the band of an unstated prefix cache (issue 35: it holds "nothing shared"); the
    # stated share settles the direction
    p_lo, p_hi = plain["predicted_throughput_interval"]
    lo, hi = stated["predicted_throughput_interval"]
    assert p_lo < 1.0 < lo < 1.293 < hi and plain["predicted_direction"] == "unknown"
    bad = CliRunner().invoke(cli, args + ["--workload-prefix-share", "1.5"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    # report takes them too, for every unit it judges
    fleet = ["report", "--unit-file", os.path.join(case, "current.unit"), "--baseline", os.path.join(case, "baseline.unit"),
             "--format", "json", "--concurrency", "128", "--no-store"]
    plain_fleet = json.loads(CliRunner().invoke(cli, fleet).output)["hosts"][0]["comparison"]
    stated_fleet = json.loads(CliRunner().invoke(cli, fleet + ["--workload-prefix-share", "0.9"]).output)
    assert plain_fleet["predicted_throughput_interval"] == [p_lo, p_hi]
    assert stated_fleet["hosts"][0]["comparison"]["predicted_throughput_interval"] == [lo, hi]


def _eagle3_units(tmp_path, head):
    unit = ("[Service]\nExecStart=/srv/sglang/.venv/bin/python -m sglang.launch_server --model-path Qwen/Qwen3-8B "
            "--host 0.0.0.0 --port 30000{}\n")
    base, cur = tmp_path / "base.unit", tmp_path / "cur.unit"
    base.write_text(unit.format(""))
    cur.write_text(unit.format(f" --speculative-algorithm EAGLE3 --speculative-draft-model-path {head} "
                               "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"))
    return base, cur


def test_the_draft_heads_own_config_is_read_when_its_path_is_a_local_directory(tmp_path):
    # an EAGLE3 head: one layer, a 32K draft vocabulary (the target's lm_head reads 152K rows)
    head = tmp_path / "qwen3_8b_eagle3"
    head.mkdir()
    (head / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "num_hidden_layers": 1,
        "hidden_size": 4096, "intermediate_size": 12288, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128, "vocab_size": 151936, "draft_vocab_size": 32000, "torch_dtype": "bfloat16"}))
    base, cur = _eagle3_units(tmp_path, head)
    # the same measured accept length on both, so only the draft cost differs (a local head is otherwise
    # of unknown provenance: a lower α prior than a published one)
    facts = ["--format", "json", "--concurrency", "1", "--model-config", os.path.join(MODELS, "Qwen--Qwen3-8B.json"),
             "--gpu", "H200", "--current-metric", "accept_length=3"]
    own = json.loads(CliRunner().invoke(cli, ["compare", "--baseline", str(base), "--unit-file", str(cur)] + facts).output)
    said = json.dumps(own["findings"], ensure_ascii=False)
    assert "draft head from its own config.json: 1 layer, hidden 4096, vocabulary 32000" in said
    # a hub name (not a local directory) is not read: one layer of the target's shape stands in, and
    # its 152K-row lm_head makes each draft pass dearer (0.48 vs 0.25 ms on an H200), so the gain is smaller
    hub_dir = tmp_path / "hub"
    hub_dir.mkdir()
    base2, cur2 = _eagle3_units(hub_dir, "Tengyunw/qwen3_8b_eagle3")
    hub = json.loads(CliRunner().invoke(cli, ["compare", "--baseline", str(base2), "--unit-file", str(cur2)] + facts).output)
    assert "own config.json" not in json.dumps(hub["findings"])
    assert own["predicted_throughput_ratio"] > hub["predicted_throughput_ratio"]


def test_an_unknown_gpu_widens_the_graphs_interval():
    # the reference GPU stands in for the point; the interval holds the table's slowest and fastest GPUs too
    known = get_model("feature_toggle")("cuda_graph.enabled", False, True,
                                        ctx({"cuda_graph.enabled": False}, {"cuda_graph.enabled": True}, conc=8,
                                            m=SMALL, gpu="H100", engine="SGLang"), {})
    unknown = get_model("feature_toggle")("cuda_graph.enabled", False, True,
                                          ctx({"cuda_graph.enabled": False}, {"cuda_graph.enabled": True}, conc=8,
                                              m=SMALL, engine="SGLang"), {})
    assert unknown.interval[1] / unknown.throughput_ratio > known.interval[1] / known.throughput_ratio
