"""Models read concepts, not one engine's field names: polarity, engine labels, new models."""
from __future__ import annotations

import math

import pytest

from driftwatch.concepts import Binding
from driftwatch.impact import ImpactContext, get_model

feature = get_model("feature_toggle")
steps = get_model("speculative_steps")


def ctx(base=None, cur=None, conc=1, engine=None):
    return ImpactContext(dict(base or {}), dict(cur or {}), set(), set(), {}, {}, conc, None, engine)


# --- inverted polarity: the model sees "feature on", whatever the engine's flag says ---------
SGLANG_DISABLE = Binding("scheduler.overlap", invert=True)  # --disable-overlap-schedule
VLLM_ENABLE = Binding("scheduler.overlap")  # an enable-style flag (vLLM's --async-scheduling)


@pytest.mark.parametrize("binding,native_base,native_cur", [
    (SGLANG_DISABLE, False, True),  # SGLang: --disable-overlap-schedule added
    (VLLM_ENABLE, True, False),  # enable-style flag removed
])
def test_overlap_switched_off_costs_the_same_whatever_the_flag_polarity(binding, native_base, native_cur):
    b, c = binding.to_concept_value(native_base), binding.to_concept_value(native_cur)
    assert (b, c) == (True, False)
    e = feature("scheduler.overlap", b, c, ctx(), {})
    assert e.throughput_ratio == pytest.approx(1 / 1.1) and e.confidence == "low"
    assert "overlap scheduler off" in e.detail and "no longer" in e.detail


def test_overlap_switched_on_gains_and_unchanged_is_neutral():
    e = feature("scheduler.overlap", False, True, ctx(), {})
    assert e.throughput_ratio == pytest.approx(1.1) and "overlap scheduler on" in e.detail
    assert feature("scheduler.overlap", True, True, ctx(), {}).throughput_ratio == 1.0
    assert feature("scheduler.overlap", None, False, ctx(), {}).throughput_ratio is None
    assert feature("scheduler.overlap", True, False, ctx(), {"overlap_speedup": 1.25}).throughput_ratio == \
        pytest.approx(0.8)


def test_prefix_cache_direction_is_read_as_feature_on():
    off = feature("kv.prefix_cache", True, False, ctx(conc=1), {})
    assert off.throughput_ratio == 1.0 and "on → off" in off.detail and "prefilled again" in off.detail
    on = feature("kv.prefix_cache", False, True, ctx(conc=1), {})
    assert on.throughput_ratio == 1.0 and "off → on" in on.detail and "skip" in on.detail
    # at 32 concurrent with no stated share (issue 35): the direction is bounded (off: not faster than the
    # cache's bookkeeping gives back), the size by the public spread
    from driftwatch.impact import calibration as cal
    from driftwatch.impact.uncertainty import direction
    off32 = feature("kv.prefix_cache", True, False, ctx(conc=32), {})
    assert off32.interval == pytest.approx((1 / cal.PREFIX_UNSTATED_GAIN, math.exp(cal.PREFIX_CACHE_OVERHEAD)))
    assert off32.interval[0] < off32.throughput_ratio < 1.0 and "slower" in off32.detail
    on32 = feature("kv.prefix_cache", False, True, ctx(conc=32), {})
    assert on32.throughput_ratio == pytest.approx(1 / off32.throughput_ratio) and "faster" in on32.detail
    assert direction(on32.throughput_ratio, on32.interval) == "unknown"  # ×0.97 with nothing shared


def test_cuda_graphs_off_without_facts_is_a_prior_whose_interval_holds_both_ways():
    # no config.json: the eager prior as the point, an interval that holds ×1 (partial graphs run slower
    # than eager on some architectures), so no direction is claimed
    from driftwatch.impact.uncertainty import UNKNOWN, direction
    e = feature("cuda_graph.enabled", True, False, ctx(), {})
    assert e.throughput_ratio is not None and e.throughput_ratio < 1.0 and "on → off" in e.detail
    assert "launch" in e.detail and "--model-config" in e.detail
    lo, hi = e.interval
    assert lo < e.throughput_ratio < 1.0 < hi and direction(e.throughput_ratio, e.interval) == UNKNOWN
    on = feature("cuda_graph.enabled", False, True, ctx(), {})
    assert on.interval == (1.0 / hi, 1.0 / lo) and on.throughput_ratio > 1.0


def test_native_disable_flag_without_concept_is_not_read_as_on_off():
    # SGLang's disable_custom_all_reduce has no concept: its native polarity is shown as is
    e = feature("disable_custom_all_reduce", False, True, ctx(), {})
    assert "False → True" in e.detail and "on →" not in e.detail


# --- engine-neutral wording, with the engine's label when known -----------------------------
SPEC = {"model.path": "/m/Qwen3.6-27B", "speculative.algorithm": "EAGLE", "speculative.steps": 3,
        "speculative.topk": 1, "speculative.draft_tokens": 4}
UNSET = {**SPEC, "speculative.steps": None, "speculative.topk": None, "speculative.draft_tokens": None}


def test_architecture_default_names_the_engine_when_known():
    assert "the engine's architecture default 3" in steps("speculative.steps", 3, None, ctx(SPEC, UNSET), {}).detail
    e = steps("speculative.steps", 3, None, ctx(SPEC, UNSET, engine="SGLang"), {})
    assert "SGLang's architecture default 3" in e.detail


def test_forced_draft_tokens_name_the_engine_when_known():
    cur = {**SPEC, "speculative.draft_tokens": 8}
    assert "with topk 1 the engine forces" in steps("speculative.draft_tokens", 4, 8, ctx(SPEC, cur), {}).detail
    e = steps("speculative.draft_tokens", 4, 8, ctx(SPEC, cur, engine="SGLang"), {})
    assert "with topk 1 SGLang forces" in e.detail and e.throughput_ratio == 1.0


def test_no_model_says_sglang_about_an_unknown_engine():
    base = {**SPEC, "batch.max_running_requests": 16, "parallel.tensor": 2}
    cases = [("speculative_steps", "speculative.steps", 3, None),
             ("speculative_toggle", "speculative.algorithm", "NEXTN", "EAGLE"),
             ("kv_capacity", "cuda_graph.max_batch", "runtime", 8),
             ("feature_toggle", "scheduler.overlap", True, False),
             ("concurrency_cap", "batch.max_running_requests", 16, "runtime"),
             ("interpreter_change", "launcher.interpreter", "/a/python", "/b/python"),
             ("engine_version", "engine.version", "0.5.12", "0.5.23")]
    for model, name, b, c in cases:
        cur = {**base, name: c}
        detail = get_model(model)(name, b, c, ctx({**base, name: b}, cur, conc=64 if model == "concurrency_cap" else 1),
                                  {}).detail
        assert "SGLang" not in detail.replace("SGLang v0.4", ""), (model, detail)


def test_build_and_version_wording_takes_the_engine_label():
    e = get_model("engine_version")("engine.version", "0.5.12", "0.5.23", ctx(engine="SGLang"), {})
    assert e.detail.startswith("SGLang 0.5.12 → 0.5.23: a different SGLang build")
    e = get_model("engine_version")("engine.version", "0.10.1", "0.11.0", ctx(), {})
    assert "a different engine build" in e.detail and e.throughput_ratio is None
    same = get_model("engine_version")("engine.version", "1", "1", ctx(engine="vLLM"), {})
    assert same.detail == "same vLLM version 1"
    e = get_model("interpreter_change")("launcher.interpreter", "/a", "/b", ctx(engine="vLLM"), {})
    assert "possibly a different vLLM build" in e.detail


# --- engine_change and command_change -------------------------------------------------------
engine_change = get_model("engine_change")
command_change = get_model("command_change")


@pytest.mark.parametrize("b,c,words", [
    ("sglang", "vllm", "engine sglang → vllm: a different engine"),
    ("SGLang", None, "engine SGLang → none"),
    ("sglang", "none", "engine sglang → none"),
    ("SGLang 0.5.12", "no known engine", "engine SGLang 0.5.12 → none"),  # EngineConfig.title
    (None, "vllm", "engine none → vllm"),
])
def test_engine_change_is_not_comparable(b, c, words):
    e = engine_change("launcher.engine", b, c, ctx(), {})
    assert e.throughput_ratio is None and e.confidence == "low"
    assert words in e.detail and "not comparable" in e.detail


def test_same_engine_is_neutral():
    assert engine_change("launcher.engine", "sglang", "SGLang", ctx(), {}).throughput_ratio == 1.0


def test_command_change_names_what_changed_and_has_no_number():
    e = command_change("exec.argv", ["/usr/bin/llama-server", "-m", "/m.gguf", "--threads", "8"],
                       ["/usr/bin/llama-server", "-m", "/m.gguf", "--threads", "16", "--flash-attn"], ctx(), {})
    assert e.throughput_ratio is None and e.confidence == "low"
    assert "`8` → `16 --flash-attn`" in e.detail and "unknown" in e.detail
    e = command_change("exec.argv", "nginx -g 'daemon off;'", "nginx", ctx(), {})  # shlex.join of the argv
    assert "removed `-g daemon off;`" in e.detail
    many = command_change("exec.argv", [str(i) for i in range(0, 20, 2)], [str(i) for i in range(1, 20, 2)], ctx(), {})
    assert many.throughput_ratio is None
    assert command_change("exec.argv", None, 5, ctx(), {}).detail.startswith("no engine plug-in reads")
