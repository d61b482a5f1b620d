"""Concurrency cap, KV capacity, parallelism, kernels, features, versions, environment, registry."""
import pytest

from driftwatch.errors import DriftwatchError
from driftwatch.impact import MODELS, Estimate, ImpactContext, combine, get_model

BASE = {"speculative.algorithm": None, "parallel.tensor": 2, "batch.max_running_requests": 16}


def ctx(base=None, cur=None, bm=None, cm=None, conc=1, brt=(), crt=(), gpus=None, engine=None):
    return ImpactContext(dict(base or BASE), dict(cur or BASE), set(brt), set(crt), dict(bm or {}),
                         dict(cm or {}), conc, gpus, engine)


cap = get_model("concurrency_cap")
kv = get_model("kv_capacity")


# --- concurrency_cap ------------------------------------------------------------------------
def test_caps_above_concurrency_have_no_effect():
    e = cap("batch.max_running_requests", 16, 48, ctx(conc=1), {})
    assert e.throughput_ratio == 1.0 and e.confidence == "high" and "concurrency 1" in e.detail
    e = cap("batch.max_running_requests", 64, 32, ctx(conc=32), {})
    assert e.throughput_ratio == 1.0 and e.dimension == "capacity"


def test_cap_below_concurrency_scales_aggregate():
    e = cap("batch.max_running_requests", 64, 16, ctx(conc=64), {})
    # plain decoding: b / (1 + b/256); 16 vs 64
    want = (16 / (1 + 16 / 256)) / (64 / (1 + 64 / 256))
    assert e.throughput_ratio == pytest.approx(want)
    assert 0.25 < e.throughput_ratio < 0.35 and e.dimension == "aggregate" and e.confidence == "medium"


def test_cap_raised_above_concurrency_gains():
    e = cap("batch.max_running_requests", 8, 48, ctx(conc=32), {})
    assert e.throughput_ratio > 3.0


def test_small_batches_are_nearly_linear():
    e = cap("batch.max_running_requests", 4, 2, ctx(conc=8), {})
    assert e.throughput_ratio == pytest.approx(0.5, abs=0.01)


def test_runtime_cap_unknown_at_high_concurrency_but_fine_for_one_stream():
    e = cap("batch.max_running_requests", 16, "runtime", ctx(conc=64), {})
    assert e.throughput_ratio is None and e.confidence == "low" and "start-up" in e.detail
    e = cap("batch.max_running_requests", 16, "runtime", ctx(conc=1), {})
    assert e.throughput_ratio == 1.0
    e = cap("batch.max_running_requests", None, None, ctx(conc=1, brt={"batch.max_running_requests"}), {})
    assert e.throughput_ratio == 1.0


def test_runtime_cap_uses_measured_metric():
    e = cap("batch.max_running_requests", "runtime", "runtime",
            ctx(bm={"max_running_requests": 26}, cm={"max_running_requests": 21}, conc=64), {})
    assert e.throughput_ratio == pytest.approx(0.84, abs=0.02) and "26 → 21" in e.detail


@pytest.mark.parametrize("bad", ["lots", -3, 0, 2.5, [1], None])
def test_cap_odd_values(bad):
    e = cap("batch.max_running_requests", bad, 16, ctx(conc=32), {})
    assert e.throughput_ratio is None or e.throughput_ratio > 0


# --- kv_capacity ----------------------------------------------------------------------------
@pytest.mark.parametrize("key,b,c", [("kv.memory_fraction", 0.88, 0.8), ("kv.context_length", 131072, "runtime"),
                                     ("kv.max_total_tokens", 455357, 377207)])
def test_capacity_is_neutral_for_one_stream(key, b, c):
    e = kv(key, b, c, ctx(conc=1), {})
    assert e.throughput_ratio == 1.0 and e.dimension == "capacity"
    assert "not one stream's speed" in e.detail


@pytest.mark.parametrize("key", ["prefill.chunk_size", "batch.max_prefill_tokens"])
@pytest.mark.parametrize("conc", [1, 48])
def test_prefill_budget_has_no_number_without_prompt_lengths(key, conc):
    # vl-batched-tokens-8k-to-16k-glm53 measured x1.41 at one stream on 13.6K-token prompts: a prefill
    # budget does move one stream's tok/s when prompts are longer than it, so "x1.0, high" was wrong.
    e = kv(key, 8192, 16384, ctx(conc=conc), {})
    assert e.throughput_ratio is None and e.confidence == "low" and e.dimension == "capacity"
    assert "prompts longer than 8192 tokens are now prefilled in fewer forward passes" in e.detail
    assert "decode speed unchanged" in e.detail
    down = kv(key, 8192, 4096, ctx(conc=conc), {})
    assert down.throughput_ratio is None and "more forward passes" in down.detail


def test_no_one_stream_claim_when_concurrency_was_not_stated():
    # An open-loop or offline benchmark (sg-decode-graph-bs-128-*: TPOT x5.8 at 32 req/s) runs many
    # requests at once although the context's concurrency defaults to 1.
    unstated = ctx(conc=1)
    unstated.concurrency_known = False
    e = kv("cuda_graph.max_batch", "runtime", 128, unstated, {})
    assert e.throughput_ratio is None and e.confidence == "low" and "not stated" in e.detail
    stated = kv("cuda_graph.max_batch", "runtime", 128, ctx(conc=1), {})
    assert stated.throughput_ratio == 1.0 and "always captures batch 1" in stated.detail
    assert kv("kv.memory_fraction", 0.88, 0.8, unstated, {}).throughput_ratio is None


def test_capacity_unknown_under_pool_pressure():
    e = kv("kv.memory_fraction", 0.88, 0.7, ctx(conc=64), {})
    assert e.throughput_ratio is None and e.confidence == "low"


def test_context_length_mentions_rejection():
    assert "rejected" in kv("kv.context_length", 131072, 19000, ctx(), {}).detail


def test_cuda_graph_limit_below_batch_penalised():
    e = kv("cuda_graph.max_batch", 64, 16, ctx(conc=32), {})
    assert e.throughput_ratio == pytest.approx(0.85) and e.confidence == "low"
    e = kv("cuda_graph.max_batch", 16, 64, ctx(conc=32), {})
    assert e.throughput_ratio == pytest.approx(1 / 0.85)
    e = kv("cuda_graph.max_batch", 64, 32, ctx(conc=8), {})
    assert e.throughput_ratio == 1.0 and e.confidence == "high"
    e = kv("cuda_graph.max_batch", "runtime", 8, ctx(conc=1), {})
    assert e.throughput_ratio == 1.0


# --- parallelism ----------------------------------------------------------------------------
par = get_model("parallelism")


def test_tp_down_rough_prior_in_band():
    e = par("parallel.tensor", 2, 1, ctx(conc=1), {})
    assert 0.5 <= e.throughput_ratio <= 0.7 and e.confidence == "low" and "rough prior" in e.detail


def test_tp_more_than_gpus_wont_start():
    e = par("parallel.tensor", 2, 8, ctx(conc=1, gpus=4), {})
    assert e.throughput_ratio is None and e.dimension == "stability"


def test_tp_at_concurrency_and_dp_and_dp_attention():
    assert par("parallel.tensor", 2, 1, ctx(conc=32), {}).throughput_ratio is None
    assert par("parallel.data", 1, 2, ctx(conc=1), {}).throughput_ratio == 1.0
    assert par("parallel.data", 1, 2, ctx(conc=64), {}).throughput_ratio is None
    # DP attention and expert parallelism: ×1 within the public spread of such switches (issue 35)
    for key in ("parallel.dp_attention", "parallel.expert_enabled"):
        e = par(key, False, True, ctx(conc=64), {})
        assert e.throughput_ratio == 1.0 and e.interval[0] < 1.0 < e.interval[1] and e.confidence == "low"


# --- kernels, features, versions, environment, none -----------------------------------------
def test_kernel_choice_has_no_number():
    for key in ("quant.method", "kv.cache_dtype", "kernel.sampling_backend", "weird"):
        e = get_model("kernel_choice")(key, "a", "b", ctx(), {})
        assert e.throughput_ratio is None and e.confidence == "low" and key in e.detail


def test_a_kernel_switch_is_x1_within_the_public_spread():
    """Issue 35: an attention/MoE backend or torch.compile switch answers ×1 with the calibrated spread
    around it (direction unknown), not "not quantified"."""
    import math

    from driftwatch.impact import calibration as cal
    from driftwatch.impact.uncertainty import direction
    for key in ("kernel.attention_backend", "kernel.moe_backend", "compile.torch_compile",
                "env.VLLM_ATTENTION_BACKEND"):
        e = get_model("kernel_choice")(key, "flashinfer", "fa3", ctx(), {})
        assert e.throughput_ratio == 1.0 and key in e.detail
        assert e.interval == pytest.approx((math.exp(-cal.KERNEL_SWITCH_SPREAD), math.exp(cal.KERNEL_SWITCH_SPREAD)))
        assert direction(e.throughput_ratio, e.interval) == "unknown" and e.confidence == "low"
    e = get_model("environment")("env.VLLM_ATTENTION_BACKEND", "XFORMERS", "FLASHINFER", ctx(), {})
    assert e.throughput_ratio == 1.0 and e.interval[1] > 1.2


def test_overlap_schedule_prior():
    f = get_model("feature_toggle")
    # concept space: scheduler.overlap True = overlap on (SGLang's --disable-overlap-schedule arrives inverted)
    assert f("scheduler.overlap", True, False, ctx(), {}).throughput_ratio == pytest.approx(1 / 1.1)
    assert f("scheduler.overlap", False, True, ctx(), {}).throughput_ratio == pytest.approx(1.1)
    assert f("scheduler.overlap", "maybe", True, ctx(), {}).throughput_ratio is None


def test_radix_and_policy():
    f = get_model("feature_toggle")
    assert f("kv.prefix_cache", True, False, ctx(conc=1), {}).throughput_ratio == 1.0
    off = f("kv.prefix_cache", True, False, ctx(conc=32), {})  # no stated share: bounded, not unknown (issue 35)
    assert off.throughput_ratio < 1.0 and off.interval[0] < off.throughput_ratio < off.interval[1]
    assert f("scheduler.policy", "fcfs", "lpm", ctx(conc=1), {}).throughput_ratio == 1.0
    assert f("scheduler.policy", "fcfs", "lpm", ctx(conc=32), {}).throughput_ratio is None


def test_model_and_build_changes():
    e = get_model("model_change")("model.path", "/a/Qwen3.6-27B", "/a/Qwen3.6-27B-FP8", ctx(), {})
    assert e.throughput_ratio is None and "not comparable" in e.detail
    e = get_model("interpreter_change")("launcher.interpreter", "/root/ml-env/bin/python3", "/opt/v/bin/python", ctx(), {})
    assert e.throughput_ratio is None and e.confidence == "low" and "re-measure" in e.detail
    e = get_model("engine_version")("engine.version", "0.5.12", "0.5.23", ctx(engine="SGLang"), {})
    assert e.throughput_ratio is None and "different SGLang build" in e.detail


def test_environment():
    env = get_model("environment")
    e = env("env.CUDA_VISIBLE_DEVICES", "0,1", "0", ctx(cur={"parallel.tensor": 2}), {})
    assert e.throughput_ratio is None and e.dimension == "stability" and "will not start" in e.detail
    # vLLM's Ray executor (none named, --nnodes 1) may place the rest of the group on other nodes
    ray = {"parallel.tensor": 2, "parallel.executor": None, "parallel.nodes": 1}
    e = env("env.CUDA_VISIBLE_DEVICES", "0,1", "0", ctx(cur=ray), {})
    assert "Ray executor must place the other workers on other nodes" in e.detail
    mp = dict(ray, **{"parallel.executor": "mp"})
    assert "Ray" not in env("env.CUDA_VISIBLE_DEVICES", "0,1", "0", ctx(cur=mp), {}).detail
    e = env("env.CUDA_VISIBLE_DEVICES", "0,1", "2,3", ctx(), {})
    assert e.throughput_ratio is None and "device set" in e.detail
    assert env("env.CUDA_VISIBLE_DEVICES", "0,1", "0, 1", ctx(), {}).throughput_ratio == 1.0
    e = env("env.NCCL_P2P_DISABLE", "1", None, ctx(), {})
    assert e.throughput_ratio is None and "P2P" in e.detail
    one = {"parallel.tensor": 1}
    assert env("env.NCCL_P2P_DISABLE", "1", None, ctx(one, one), {}).throughput_ratio == 1.0
    assert env("env.CUDA_HOME", "/usr/local/cuda-13.0", "/usr/local/cuda-12.8", ctx(), {}).dimension == "stability"
    assert env("env.TZ", "UTC", "CET", ctx(), {}).throughput_ratio == 1.0
    assert env("env.SOMETHING", "a", "b", ctx(), {}).throughput_ratio is None


def test_no_impact_and_unknown():
    e = get_model("no_impact")("server.port", 30000, 30001, ctx(), {})
    assert (e.throughput_ratio, e.confidence) == (1.0, "high") and "does not affect throughput" in e.detail
    e = get_model("unknown")("mamba_full_memory_ratio", 0.5, None, ctx(), {})
    assert (e.throughput_ratio, e.confidence) == (None, "low") and "no rule knows this setting" in e.detail


# --- registry and combine -------------------------------------------------------------------
def test_registry_names():
    assert set(MODELS) == {"speculative_steps", "speculative_toggle", "relaxed_acceptance", "concurrency_cap",
                           "kv_capacity", "parallelism", "dp_attention", "kernel_choice", "feature_toggle", "model_change",
                           "interpreter_change", "engine_version", "engine_change", "command_change",
                           "environment", "no_impact", "unknown"}


def test_unknown_model_name():
    with pytest.raises(DriftwatchError, match="unknown impact model 'x'"):
        get_model("x")


def test_combine():
    assert combine([]) is None
    assert combine([None, None]) is None
    assert combine([0.6, None, 1.0, 0.9]) == pytest.approx(0.54)
    assert combine([float("nan"), 0.5, -1, "x", True]) == pytest.approx(0.5)


ODD = [None, "runtime", "", "abc", -1, 0, 1e308, float("inf"), float("nan"), [1, 2], {"x": 1}, True, object()]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_no_model_raises_on_odd_values(name):
    model = MODELS[name]
    weird_ctx = ImpactContext({"parallel.tensor": "x", "speculative.algorithm": 5}, None, None, None,
                              {"accept_length": "x"}, None, "many", "four", 42)
    for v in ODD:
        for c in (ctx(), weird_ctx):
            for key in ("speculative.steps", "batch.max_running_requests", "parallel.tensor", "cuda_graph.max_batch",
                        "env.CUDA_VISIBLE_DEVICES", "scheduler.overlap", "kv.prefix_cache", "launcher.engine",
                        "exec.argv", None):
                e = model(key, v, 1, c, {"alpha_prior": v})
                assert isinstance(e, Estimate) and e.confidence in ("high", "medium", "low")
                assert e.throughput_ratio is None or e.throughput_ratio > 0
                e = model(key, 1, v, c, None)
                assert isinstance(e, Estimate)
                model.raw(key, v, 1, c, {"alpha_prior": v})  # the model itself degrades, not only the guard


def test_guard_turns_an_exception_into_low_confidence_none():
    from driftwatch.impact import _never_raises

    def broken(key, b, c, ctx, params):
        raise ZeroDivisionError("boom")

    e = _never_raises("broken", broken)("k", 1, 2, ctx(), {})
    assert e.throughput_ratio is None and e.confidence == "low" and "boom" in e.detail
    e = _never_raises("nan", lambda *a: Estimate(float("nan"), "high", "x"))("k", 1, 2, ctx(), {})
    assert e.throughput_ratio is None
