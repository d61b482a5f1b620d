"""SGLang's start-up rewrites and known start-up crashes, applied inside read_engine_config."""
from __future__ import annotations

import pytest

from driftwatch.engines.config import EXPLICIT, RUNTIME
from driftwatch.engines.sglang.engine import ENGINE as SGLANG

read_engine_config = SGLANG.read_config


def cfg(argv, version="0.5.23"):
    return read_engine_config(list(argv), engine_version=version)


def spec(algo="EAGLE", steps=None, topk=None, draft=None, extra=()):
    argv = ["--model-path", "/m", "--speculative-algorithm", algo]
    if steps is not None:
        argv += ["--speculative-num-steps", str(steps)]
    if topk is not None:
        argv += ["--speculative-eagle-topk", str(topk)]
    if draft is not None:
        argv += ["--speculative-num-draft-tokens", str(draft)]
    return argv + list(extra)


def crashes(config):
    return [i for i in config.issues if i.kind == "startup-crash"]


# ---------------------------------------------------------------- NEXTN is EAGLE


@pytest.mark.parametrize("version", ["0.4.10.post2", "0.5.5", "0.5.12", "0.5.23"])
def test_nextn_is_eagle(version):
    config = cfg(spec("NEXTN", steps=3, topk=1), version)
    algo = config.flags["speculative_algorithm"]
    assert algo.value == "EAGLE"
    assert algo.source == EXPLICIT
    assert algo.flag == "--speculative-algorithm"
    assert "NEXTN" in algo.note and "EAGLE" in algo.note
    assert any("NEXTN" in note for note in config.notes)


def test_nextn_and_eagle_read_the_same():
    a, b = cfg(spec("NEXTN", steps=3, topk=1)), cfg(spec("EAGLE", steps=3, topk=1))
    for key in ("speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
                "speculative_num_draft_tokens", "max_running_requests"):
        assert (a.flags[key].value, a.flags[key].source) == (b.flags[key].value, b.flags[key].source), key


def test_eagle_has_no_nextn_note():
    config = cfg(spec("EAGLE", steps=3, topk=1))
    assert config.flags["speculative_algorithm"].note is None
    assert not any("NEXTN" in note for note in config.notes)


def test_lowercase_algorithm_is_upper_cased():
    assert cfg(spec("nextn", steps=3, topk=1)).flags["speculative_algorithm"].value == "EAGLE"
    assert cfg(spec("eagle3", steps=3, topk=1)).flags["speculative_algorithm"].value == "EAGLE3"


# ---------------------------------------------------------------- draft tokens = steps + 1 with topk 1


@pytest.mark.parametrize("steps", [1, 2, 3, 5])
def test_topk1_forces_draft_tokens(steps):
    draft = cfg(spec("EAGLE", steps=steps, topk=1)).flags["speculative_num_draft_tokens"]
    assert draft.value == steps + 1
    assert draft.source == RUNTIME
    assert draft.note and "steps + 1" in draft.note


def test_explicit_draft_tokens_overridden_with_topk1():
    config = cfg(spec("NEXTN", steps=3, topk=1, draft=8))
    draft = config.flags["speculative_num_draft_tokens"]
    assert draft.value == 4
    assert draft.source == EXPLICIT
    assert "4" in draft.note
    assert any("overridden" in note and "8" in note and "4" in note for note in config.notes)


def test_explicit_draft_tokens_already_right():
    config = cfg(spec("EAGLE", steps=3, topk=1, draft=4))
    draft = config.flags["speculative_num_draft_tokens"]
    assert (draft.value, draft.source, draft.note) == (4, EXPLICIT, None)
    assert not any("overridden" in note for note in config.notes)


def test_topk_above_one_keeps_draft_tokens():
    config = cfg(spec("EAGLE", steps=3, topk=4, draft=8))
    draft = config.flags["speculative_num_draft_tokens"]
    assert (draft.value, draft.source, draft.note) == (8, EXPLICIT, None)


def test_topk_above_one_without_draft_stays_runtime_unknown():
    draft = cfg(spec("EAGLE", steps=3, topk=4)).flags["speculative_num_draft_tokens"]
    assert draft.source == RUNTIME
    assert draft.value is None


def test_no_speculation_no_rewrites():
    config = cfg(["--model-path", "/m", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1"])
    assert config.flags["speculative_num_draft_tokens"].value is None
    assert config.notes == []
    assert crashes(config) == []


def test_seed_units_forced_draft_tokens():
    # 70 tok/s seed: steps 3, 40 tok/s seed: steps 1, both NEXTN topk 1 on 0.5.19 (the last release with
    # their --mamba-scheduler-strategy)
    base = ["--model-path", "/m", "--mamba-scheduler-strategy", "extra_buffer", "--speculative-algorithm", "NEXTN",
            "--speculative-eagle-topk", "1"]
    fast = read_engine_config(base + ["--speculative-num-steps", "3"])
    slow = read_engine_config(base + ["--speculative-num-steps", "1"])
    assert fast.version == slow.version == "0.5.19"
    assert fast.flags["speculative_num_draft_tokens"].value == 4
    assert slow.flags["speculative_num_draft_tokens"].value == 2


# ---------------------------------------------------------------- known start-up crashes


@pytest.mark.parametrize("algo", ["EAGLE", "NEXTN", "EAGLE3"])
@pytest.mark.parametrize("version", ["0.5.12", "0.5.23"])
def test_draft_tokens_without_steps_crashes(algo, version):
    config = cfg(spec(algo, topk=1, draft=4), version)
    found = crashes(config)
    assert len(found) == 1
    assert found[0].severity == "error"
    assert found[0].key == "speculative_num_steps"
    assert "--speculative-num-draft-tokens" in found[0].message


@pytest.mark.parametrize("version", ["0.5.12", "0.5.23"])
def test_steps_without_topk_crashes(version):
    found = crashes(cfg(spec("EAGLE", steps=3), version))
    assert len(found) == 1
    assert found[0].key == "speculative_eagle_topk"
    assert found[0].severity == "error"
    assert version in found[0].message


@pytest.mark.parametrize("version", ["0.4.10.post2", "0.5.5"])
def test_steps_without_topk_fine_before_0512(version):
    assert crashes(cfg(spec("EAGLE", steps=3), version)) == []


def test_complete_spec_settings_do_not_crash():
    assert crashes(cfg(spec("EAGLE", steps=3, topk=1, draft=4))) == []
    assert crashes(cfg(spec("NEXTN", steps=2, topk=1))) == []
    assert crashes(cfg(spec("EAGLE"))) == []  # all three picked at start-up


def test_ngram_is_not_eagle_family():
    config = cfg(spec("NGRAM", draft=4))
    assert crashes(config) == []
    assert config.flags["max_running_requests"].value is None


def test_mamba_no_buffer_with_speculative_and_radix_cache_crashes_on_0512():
    # 0.5.12 server_args.py: ValueError "Speculative decoding ... not compatible with radix cache".
    argv = ["--model-path", "/m", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
            "--speculative-eagle-topk", "1", "--mamba-scheduler-strategy", "no_buffer"]
    assert [c.key for c in crashes(cfg(argv, "0.5.12"))] == ["disable_radix_cache"]
    assert crashes(cfg(argv + ["--disable-radix-cache"], "0.5.12")) == []


def test_mamba_no_buffer_without_speculative_only_disables_overlap_on_0512():
    config = cfg(["--model-path", "/m", "--mamba-scheduler-strategy", "no_buffer"], "0.5.12")
    assert crashes(config) == []
    assert any("disables the overlap schedule" in n for n in config.notes)


def test_mamba_no_buffer_without_overlap_off_crashes_on_0523():
    # 0.5.23 arg_groups/mamba_hook.py validate_mamba_no_buffer asserts disable_overlap_schedule.
    argv = ["--model-path", "/m", "--mamba-radix-cache-strategy", "no_buffer"]
    assert [c.key for c in crashes(cfg(argv, "0.5.23"))] == ["disable_overlap_schedule"]
    assert crashes(cfg(argv + ["--disable-overlap-schedule"], "0.5.23")) == []


# ---------------------------------------------------------------- max_running_requests 48, every release
# SGLang caps it at 48 for EAGLE-family speculative decoding when the flag is unset: server_args.py
# `_handle_speculative_decoding` from 0.4.6 (line 321) to 0.5.12 (line 3735), speculative_hook.py
# `_handle_eagle_family` from 0.5.19; STANDALONE from 0.5.2 (read from each release's wheel).


@pytest.mark.parametrize("version", ["0.4.6", "0.4.10.post2", "0.5.5", "0.5.12", "0.5.19", "0.5.23"])
@pytest.mark.parametrize("algo", ["EAGLE", "NEXTN", "EAGLE3"])
def test_eagle_family_caps_running_requests_in_every_release(algo, version):
    """At most 48: the value stays computed at start-up (the KV pool may hold fewer: seed 000 ran 1)."""
    mrr = cfg(spec(algo, steps=3, topk=1), version).flags["max_running_requests"]
    assert (mrr.value, mrr.source) == (None, RUNTIME)
    assert "at most 48" in mrr.note and version in mrr.note


def test_explicit_running_requests_kept_on_0523():
    mrr = cfg(spec("EAGLE", steps=3, topk=1, extra=["--max-running-requests", "16"]), "0.5.23") \
        .flags["max_running_requests"]
    assert (mrr.value, mrr.source) == (16, EXPLICIT)


@pytest.mark.parametrize(("version", "capped"), [("0.5.1", False), ("0.5.2", True), ("0.5.23", True)])
def test_standalone_is_capped_from_052(version, capped):
    mrr = cfg(spec("STANDALONE", steps=3, topk=1, extra=["--speculative-draft-model-path", "/d"]), version) \
        .flags["max_running_requests"]
    assert ("caps it at 48 under STANDALONE" in (mrr.note or "")) is capped


# ---------------------------------------------------------------- the overlap scheduler under speculation
OFF, ON = True, False  # disable_overlap_schedule


@pytest.mark.parametrize(("version", "algo", "topk", "env", "extra", "expected"), [
    ("0.4.6", "EAGLE", 1, {}, [], OFF),
    ("0.5.3", "EAGLE", 1, {"SGLANG_ENABLE_SPEC_V2": "1"}, [], OFF),      # no spec v2 yet
    ("0.5.4", "EAGLE", 1, {}, [], OFF),
    ("0.5.4", "EAGLE", 1, {}, ["--enable-beta-spec"], ON),
    ("0.5.5", "EAGLE", 1, {}, [], OFF),                                   # the variable defaults off
    ("0.5.5", "EAGLE", 1, {"SGLANG_ENABLE_SPEC_V2": "true"}, [], ON),
    ("0.5.5", "EAGLE3", 1, {"SGLANG_ENABLE_SPEC_V2": "1"}, [], OFF),     # EAGLE only in 0.5.5/0.5.6
    ("0.5.7", "EAGLE3", 1, {"SGLANG_ENABLE_SPEC_V2": "1"}, [], ON),
    ("0.5.10", "NEXTN", 1, {}, [], OFF),
    ("0.5.11", "NEXTN", 1, {}, [], ON),                                   # the default turned True
    ("0.5.11", "EAGLE", 4, {}, [], OFF),                                  # topk > 1: spec v1
    ("0.5.12", "EAGLE", 1, {"SGLANG_ENABLE_SPEC_V2": "0"}, [], OFF),
    ("0.5.13", "EAGLE", 4, {}, [], ON),
    ("0.5.19", "EAGLE", 4, {"SGLANG_ENABLE_SPEC_V2": "0"}, [], ON),      # the variable is gone
])
def test_overlap_scheduler_under_speculation_follows_each_release(version, algo, topk, env, extra, expected):
    argv = spec(algo, steps=3, topk=topk, extra=extra)
    value = read_engine_config(argv, engine_version=version, environment=env).flags["disable_overlap_schedule"]
    assert value.value is expected, (version, algo, env, value)
    assert (value.source == RUNTIME) is (expected is OFF)


def test_overlap_kept_off_when_the_unit_turns_it_off_itself():
    argv = spec("EAGLE", steps=3, topk=1, extra=["--disable-overlap-schedule"])
    value = cfg(argv, "0.5.23").flags["disable_overlap_schedule"]
    assert (value.value, value.source) == (True, EXPLICIT)


def test_no_48_cap_without_speculation():
    mrr = cfg(["--model-path", "/m"], "0.5.23").flags["max_running_requests"]
    assert mrr.value is None
    assert mrr.source == RUNTIME
