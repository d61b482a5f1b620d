"""vLLM command lines typed with the shipped catalogs: launchers, FlexibleArgumentParser semantics,
concepts, start-up rewrites and bad input (issue 10, items 1, 3, 4).

Facts from the released wheels' sources (vllm/utils/argparse_utils.py, vllm/engine/arg_utils.py)
and ../shared/research/vllm.md; test_oracle.py checks the same semantics against vLLM itself.
"""
from __future__ import annotations

import shlex

import pytest

from driftwatch.engines.config import DEFAULT, EXPLICIT, RUNTIME
from driftwatch.engines.files import EngineFiles
from driftwatch.engines.registry import find_launcher
from driftwatch.engines.vllm import config_file
from driftwatch.engines.vllm.engine import ENGINE as VLLM, normalise_method

NEW = "0.33.0"
RELEASES = ["0.8.2", "0.10.0", "0.11.0", "0.15.0", "0.20.0", "0.25.0", "0.30.0", "0.33.0"]


def cfg(argv, version=NEW):
    if isinstance(argv, str):
        argv = shlex.split(argv)
    return VLLM.read_config(list(argv), engine_version=version)


def explicit(config) -> dict:
    return {k: v.value for k, v in config.explicit().items()}


def kinds(config) -> list[str]:
    return [i.kind for i in config.issues]


def errors(config) -> list[str]:
    return [i.message for i in config.issues if i.severity == "error"]


def test_shipped_catalogs():
    assert set(RELEASES) <= set(VLLM.releases())
    for version in RELEASES:
        catalog = VLLM.catalogs.load(version)
        assert len(catalog.options) > 140
        assert "--max-num-seqs" in catalog.by_option
        assert "--model" in catalog.by_option  # synthesized where the dump lost it (`serve --help`)


# ---------------------------------------------------------------- launchers

@pytest.mark.parametrize("cmd, entry, argv0", [
    ("/opt/v/bin/vllm serve Qwen/Qwen3-8B -tp 2", "vllm serve", "serve"),
    ("vllm serve --model Qwen/Qwen3-8B", "vllm serve", "serve"),
    ("/usr/bin/python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B",
     "python -m vllm.entrypoints.openai.api_server", "--model"),
    ("python3 -m vllm.entrypoints.cli.main serve Qwen/Qwen3-8B", "python -m vllm.entrypoints.cli.main serve", "serve"),
    ("/usr/bin/env CUDA_VISIBLE_DEVICES=0 /opt/v/bin/vllm serve M", "vllm serve", "serve"),
    ("bash -c 'source /opt/v/bin/activate && exec vllm serve M --port 8001'", "vllm serve", "serve"),
    ("conda run -n vllm vllm serve M", "vllm serve", "serve"),
    ("uv run --with vllm vllm serve M", "vllm serve", "serve"),
    ("numactl --cpunodebind=0 /opt/v/bin/python -m vllm.entrypoints.openai.api_server --model M",
     "python -m vllm.entrypoints.openai.api_server", "--model"),
])
def test_launchers(cmd, entry, argv0):
    launcher = find_launcher(shlex.split(cmd))
    assert launcher.engine == "vllm", launcher
    assert launcher.entry == entry
    assert launcher.engine_argv[0] == argv0


def test_model_positional_and_option_give_the_same_model():
    serve = cfg(["serve", "Qwen/Qwen3-8B"])
    hoisted = cfg(["serve", "--model", "Qwen/Qwen3-8B"])
    module = cfg(["--model", "Qwen/Qwen3-8B"])
    assert serve.flags["model"].value == hoisted.flags["model"].value == module.flags["model"].value == "Qwen/Qwen3-8B"
    assert serve.flags["model"].source == EXPLICIT
    assert any("moved to the positional model" in n for n in hoisted.notes)


def test_docker_image_is_the_entry_and_names_the_release():
    launcher = find_launcher(shlex.split(
        "docker run --rm --gpus all -p 8000:8000 -v /srv/hf:/root/.cache/huggingface -e HF_HUB_OFFLINE=1 "
        "vllm/vllm-openai:v0.15.0 --model meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192"))
    assert launcher.engine == "vllm" and launcher.image == "vllm/vllm-openai:v0.15.0"
    assert launcher.entry == ""  # the image's own entrypoint
    assert launcher.engine_argv[:3] == ["serve", "--model", "meta-llama/Llama-3.1-8B-Instruct"]
    assert launcher.env["HF_HUB_OFFLINE"] == "1"
    assert VLLM.release_from_image(launcher.image) == "0.15.0"
    old = find_launcher(shlex.split("docker run vllm/vllm-openai:v0.10.0 --model M"))
    assert old.engine_argv == ["--model", "M"]  # images before 0.15 ran the api_server module
    assert VLLM.release_from_image("vllm/vllm-openai:latest") is None
    assert VLLM.release_from_image("lmsysorg/sglang:v0.5.5") is None


def test_docker_entrypoint_option_replaces_the_image_command():
    launcher = find_launcher(shlex.split("docker run --entrypoint python3 vllm/vllm-openai:v0.10.0 "
                                         "-m vllm.entrypoints.openai.api_server --model M"))
    assert launcher.entry == "python -m vllm.entrypoints.openai.api_server"
    assert launcher.engine_argv == ["--model", "M"]


def test_other_vllm_subcommands_and_images_are_not_servers():
    assert find_launcher(["vllm", "bench", "serve"]).engine == "none"
    assert find_launcher(shlex.split("docker run nginx:1.25")).engine == "none"


# ---------------------------------------------------------------- FlexibleArgumentParser

@pytest.mark.parametrize("version", RELEASES)
def test_underscores_and_equals(version):
    c = cfg(["serve", "M", "--max_num_seqs", "8", "--gpu_memory_utilization=0.85", "--tensor-parallel-size=2"],
            version)
    assert explicit(c)["max_num_seqs"] == 8
    assert explicit(c)["gpu_memory_utilization"] == pytest.approx(0.85)
    assert explicit(c)["tensor_parallel_size"] == 2
    assert not errors(c)


@pytest.mark.parametrize("version", RELEASES)
def test_abbreviations(version):
    c = cfg(["serve", "M", "--max-num-seq", "8", "--gpu-mem", "0.8"], version)
    assert explicit(c)["max_num_seqs"] == 8
    assert c.flags["max_num_seqs"].flag == "--max-num-seq"  # the spelling typed is kept


def test_ambiguous_abbreviation_refuses_to_start():
    c = cfg(["serve", "M", "--max-num", "8"])
    assert "ambiguous-flag" in kinds(c)
    assert "max_num_seqs" not in explicit(c)


def test_duplicates_last_wins():
    c = cfg(["serve", "M", "--max-num-seqs", "8", "--max-num-seqs", "16"])
    assert explicit(c)["max_num_seqs"] == 16
    assert any("more than once" in n for n in c.notes)


@pytest.mark.parametrize("argv", [
    ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}'],
    ["--speculative-config.method", "ngram", "--speculative-config.num_speculative_tokens", "3"],
    ["--speculative_config.method=ngram", "--speculative-config.num_speculative_tokens=3"],
    ["-sc", '{"num_speculative_tokens": 3, "method": "ngram"}'],
])
def test_speculative_json_and_dotted_keys_are_the_same(argv):
    c = cfg(["serve", "M", *argv])
    assert explicit(c)["speculative_config.method"] == "ngram"
    assert explicit(c)["speculative_config.num_speculative_tokens"] == 3
    assert "speculative_config" not in c.flags  # read key by key
    assert not errors(c)


def test_dotted_keys_replace_an_earlier_whole_json():
    # vLLM appends the merged dotted keys at the end, so they replace the whole JSON given before.
    c = cfg(["serve", "M", "--speculative-config", '{"method": "eagle3", "model": "a/b", "num_speculative_tokens": 5}',
             "--speculative-config.num_speculative_tokens", "2"])
    assert explicit(c)["speculative_config.num_speculative_tokens"] == 2
    assert "speculative_config.model" not in explicit(c)


def test_dotted_keys_need_090():
    c = cfg(["serve", "M", "--speculative-config.method", "ngram"], "0.8.2")
    assert any("dotted keys" in m and "from vLLM 0.9.0 on" in m and "(accepted by 0.9.0, 0.10.0" in m
               for m in errors(c))


@pytest.mark.parametrize("flag", [["-O3"], ["-O", "3"], ["-O=3"]])
def test_O_is_the_optimization_level_from_015(flag):
    c = cfg(["serve", "M", *flag], "0.15.0")
    assert explicit(c)["optimization_level"] == 3


@pytest.mark.parametrize("flag", [["-O3"], ["-O", "3"], ["-O=3"]])
@pytest.mark.parametrize("version", ["0.10.0", "0.11.0"])
def test_O_is_the_compilation_level_in_010_011(flag, version):
    c = cfg(["serve", "M", *flag], version)
    assert explicit(c)["compilation_config.level"] == 3
    assert "optimization_level" not in c.flags


def test_default_optimization_level_equals_O2():
    c = cfg(["serve", "M"], "0.33.0")
    assert c.flags["optimization_level"].value == 2
    assert c.flags["optimization_level"].source == DEFAULT


@pytest.mark.parametrize("version, flag, value", [
    ("0.30.0", "--no-enable-prefix-caching", False),
    ("0.33.0", "--no-enable-prefix-caching", False),  # hidden, still accepted
    ("0.33.0", "--disable-prefix-caching", False),
    ("0.33.0", "--enable-prefix-caching", True),
    ("0.33.0", "--no-enforce-eager", False),
    ("0.33.0", "--disable-chunked-prefill", False),
])
def test_boolean_pairs(version, flag, value):
    c = cfg(["serve", "M", flag], version)
    field = "enforce_eager" if "eager" in flag else "enable_chunked_prefill" if "chunked" in flag \
        else "enable_prefix_caching"
    assert explicit(c)[field] is value
    assert not errors(c)


def test_disable_pairs_only_in_033():
    assert "unknown-flag" in kinds(cfg(["serve", "M", "--disable-prefix-caching"], "0.30.0"))
    assert "unknown-flag" in kinds(cfg(["serve", "M", "--no-disable-prefix-caching"], "0.33.0"))


def test_removed_flags_name_the_releases_that_accept_them():
    c = cfg(["serve", "M", "--swap-space", "4"], "0.33.0")
    issue = next(i for i in c.issues if i.flag == "--swap-space")
    assert issue.kind == "removed-flag" and issue.severity == "error"
    assert "0.15.0" in issue.releases and "0.20.0" not in issue.releases
    old = cfg(["serve", "M", "--speculative-model", "d", "--num-speculative-tokens", "3"], "0.33.0")
    assert {i.flag for i in old.issues if i.kind == "removed-flag"} == {"--speculative-model",
                                                                        "--num-speculative-tokens"}
    assert all(i.releases == ["0.8.2"] for i in old.issues if i.kind == "removed-flag")


def test_disable_log_requests_left_and_came_back():
    accepted = VLLM.catalogs.releases_accepting("--disable-log-requests")
    assert "0.15.0" in accepted and "0.33.0" in accepted
    assert "0.20.0" not in accepted and "0.30.0" not in accepted


def test_model_option_with_serve_crashes_before_015():
    c = cfg(["serve", "--model", "M"], "0.10.0")
    assert any("refuses to start" in m and "--model" in m for m in errors(c))
    assert not errors(cfg(["serve", "--model", "M"], "0.15.0"))
    assert not errors(cfg(["--model", "M"], "0.10.0"))  # the api_server module takes --model


def test_served_model_name_without_model_crashes_from_017():
    assert errors(cfg(["serve", "--served-model-name", "a"], "0.20.0"))
    assert errors(cfg(["serve", "--served-model-name", "a"], "0.17.0"))  # vLLM 0.17's argparse_utils raises
    assert not errors(cfg(["serve", "--served-model-name", "a"], "0.15.0"))


def test_positional_model_ignored_by_the_module_entry():
    c = cfg(["/models/x", "--max-num-seqs", "8"], "0.33.0")
    assert "ignored-argument" in kinds(c)
    assert c.flags["model"].source == DEFAULT  # the api_server serves --model's default


def test_release_choice_prefers_a_release_that_parses():
    version, why = VLLM.choose_release([["serve", "M", "--swap-space", "4"]])
    having = [v for v in VLLM.catalogs.versions if "--swap-space" in VLLM.catalogs.load(v).by_option]
    assert version == having[-1] and "0.15.0" in having and "0.20.0" not in having, why  # newest that has it
    version, _ = VLLM.choose_release([["serve", "M", "--disable-prefix-caching"]])
    assert version == VLLM.catalogs.versions[-1]  # parses in the newest shipped release (0.33.0 on)


# ---------------------------------------------------------------- --config FILE

CONFIG = """\
model: Qwen/Qwen3-8B
tensor-parallel-size: 2
max_num_seqs: 32
enable-prefix-caching: false
served-model-name: [a, b]
speculative-config:
  method: ngram
  num_speculative_tokens: 2
"""


def with_file(argv, text=CONFIG, path="/etc/vllm/q.yaml"):
    return config_file.with_payloads(argv, EngineFiles({path: text}))


def test_config_file_values_are_flags_and_cli_wins():
    argv = with_file(["serve", "--config", "/etc/vllm/q.yaml", "-tp", "4"])
    c = cfg(argv, "0.33.0")
    values = explicit(c)
    assert values["model"] == "Qwen/Qwen3-8B"
    assert values["tensor_parallel_size"] == 4  # CLI > config
    assert values["max_num_seqs"] == 32
    assert values["served_model_name"] == ["a", "b"]
    assert values["speculative_config.method"] == "ngram"
    assert c.flags["max_num_seqs"].note == "from --config /etc/vllm/q.yaml"
    assert "overrides" in c.flags["tensor_parallel_size"].note
    # `false` is dropped by vLLM (the top-level `vllm` parser has no --no-… options): the default applies
    assert c.flags["enable_prefix_caching"].source != EXPLICIT
    assert any("enable-prefix-caching: false" in n for n in c.notes)


def test_config_file_false_is_read_by_the_module_entry_from_030():
    argv = with_file(["--model", "M", "--config", "/etc/vllm/q.yaml"])
    assert explicit(cfg(argv, "0.30.0"))["enable_prefix_caching"] is False
    assert "enable_prefix_caching" not in explicit(cfg(argv, "0.25.0"))


def test_config_file_mappings_are_json_only_from_020():
    argv = with_file(["serve", "M", "--config", "/etc/vllm/q.yaml"])
    assert explicit(cfg(argv, "0.20.0"))["speculative_config.method"] == "ngram"
    old = cfg(argv, "0.15.0")  # Python's str of the dict: not JSON
    assert "bad-value" in kinds(old)


def test_config_file_travels_in_the_argv():
    argv = with_file(["serve", "--config", "/etc/vllm/q.yaml"])
    assert explicit(cfg(argv))["max_num_seqs"] == 32


def test_config_file_missing_is_one_finding():
    c = cfg(["serve", "M", "--config", "/etc/vllm/absent.yaml", "--port", "8001"])
    issues = [i for i in c.issues if i.kind == "engine-config"]
    assert len(issues) == 1 and issues[0].severity == "warning"
    assert explicit(c)["config"] == "/etc/vllm/absent.yaml"  # the path is compared at least
    assert explicit(c)["port"] == 8001


def test_config_file_not_yaml_is_a_startup_crash():
    argv = with_file(["serve", "M", "--config", "/etc/vllm/q.yaml"], text="model: [unclosed\n")
    c = cfg(argv)
    assert any("not valid YAML" in m and "refuses to start" in m for m in errors(c))
    argv = with_file(["serve", "M", "--config", "/etc/vllm/q.yaml"], text="- just\n- a list\n")
    assert any("not a mapping" in m for m in errors(cfg(argv)))


def test_config_file_wrong_extension_crashes():
    c = cfg(["serve", "M", "--config", "/etc/vllm/q.json"])
    assert any(".yaml or .yml" in m for m in errors(c))


def test_config_equals_form_is_ignored_by_vllm():
    c = cfg(["serve", "M", "--config=/etc/vllm/q.yaml"])
    assert any(i.kind == "engine-config" and "`--config FILE`" in i.message for i in c.issues)


def test_config_without_model_crashes():
    argv = with_file(["serve", "--config", "/etc/vllm/q.yaml"], text="max-num-seqs: 4\n")
    assert any("without a model" in m for m in errors(cfg(argv)))


# ---------------------------------------------------------------- bad input

def test_malformed_speculative_json_is_one_finding():
    c = cfg(["serve", "M", "--speculative-config", '{"method": "eagle3",'])
    bad = [i for i in c.issues if i.kind == "bad-value"]
    assert len(bad) == 1 and "--speculative-config" in bad[0].message
    assert c.flags["speculative_config"].value == '{"method": "eagle3",'  # compared as text


def test_unknown_dotted_key():
    old = cfg(["serve", "M", "--speculative-config.num_spec", "3"], "0.15.0")
    assert [i.kind for i in old.issues] == ["ignored-argument"]  # pydantic ignores extra keys before 0.20
    new = cfg(["serve", "M", "--speculative-config.num_spec", "3"], "0.20.0")
    assert any("num_spec" in m and "refuses to start" in m for m in errors(new))


def test_dotted_key_without_value():
    c = cfg(["serve", "M", "--speculative-config.method"])
    assert errors(c)


def test_spec_shorthands_and_json_are_exclusive():
    c = cfg(["serve", "M", "--spec-tokens", "3", "--speculative-config", '{"num_speculative_tokens": 2}'], "0.25.0")
    assert any("mutually exclusive" in m for m in errors(c))
    ok = cfg(["serve", "M", "--spec-method", "eagle3", "--spec-model", "a/b", "--spec-tokens", "3"], "0.25.0")
    assert explicit(ok)["speculative_config.method"] == "eagle3"
    assert explicit(ok)["speculative_config.num_speculative_tokens"] == 3
    assert ok.flags["speculative_config.method"].flag == "--spec-method"
    assert "spec_method" not in ok.flags


# ---------------------------------------------------------------- concepts and start-up values

def concepts(config) -> dict:
    return config.concept_values()[0]


def test_throughput_concepts_are_mapped():
    c = cfg(["serve", "M", "--max-num-seqs", "64", "--max-model-len", "32768", "--gpu-memory-utilization", "0.8",
             "-tp", "2", "-pp", "2", "--data-parallel-size", "2", "--enable-expert-parallel", "--enforce-eager",
             "--enable-prefix-caching", "--max-num-batched-tokens", "8192", "--kv-cache-dtype", "fp8",
             "--quantization", "fp8", "--dtype", "bfloat16", "--attention-backend", "FLASHINFER",
             "--no-async-scheduling", "--speculative-config",
             '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'])
    got = concepts(c)
    assert got["batch.max_running_requests"] == 64
    assert got["kv.context_length"] == 32768
    assert got["kv.memory_fraction"] == pytest.approx(0.8)
    assert got["parallel.tensor"] == 2 and got["parallel.pipeline"] == 2 and got["parallel.data"] == 2
    assert got["parallel.expert_enabled"] is True
    assert got["cuda_graph.enabled"] is False  # --enforce-eager, inverted
    assert got["kv.prefix_cache"] is True
    assert got["prefill.chunk_size"] == 8192
    assert got["kv.cache_dtype"] == "fp8" and got["quant.method"] == "fp8" and got["model.dtype"] == "bfloat16"
    assert got["kernel.attention_backend"] == "FLASHINFER"
    assert got["scheduler.overlap"] is False
    assert got["speculative.algorithm"] == "EAGLE3"
    assert got["speculative.steps"] == 3
    assert got["speculative.draft_model"] == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"


@pytest.mark.parametrize("method, algorithm", [
    ("mtp", "EAGLE"), ("deepseek_mtp", "EAGLE"), ("qwen3_next_mtp", "EAGLE"), ("eagle", "EAGLE"),
    ("eagle3", "EAGLE3"), ("ngram", "NGRAM"), ("draft_model", "STANDALONE"), ("suffix", "SUFFIX"),
])
def test_speculative_methods_compare_with_sglang_names(method, algorithm):
    assert normalise_method(method) == algorithm


def test_speculation_off_is_a_known_concept_value():
    c = cfg(["serve", "M"])
    values, runtime = c.concept_values()
    assert values["speculative.algorithm"] is None and "speculative.algorithm" not in runtime


def test_runtime_values_by_release():
    new = cfg(["serve", "M"], "0.33.0")
    for key in ("max_num_seqs", "max_num_batched_tokens", "max_model_len"):
        assert new.flags[key].source == RUNTIME and new.flags[key].value is None, key
    assert new.flags["enable_prefix_caching"].source == RUNTIME and new.flags["enable_prefix_caching"].value is True
    assert new.flags["async_scheduling"].value is True  # None -> on from 0.15
    assert cfg(["serve", "M"], "0.11.0").flags["async_scheduling"].value is False
    assert cfg(["serve", "M"], "0.33.0").flags["gpu_memory_utilization"].value == pytest.approx(0.92)
    assert cfg(["serve", "M"], "0.15.0").flags["gpu_memory_utilization"].value == pytest.approx(0.9)


def test_async_scheduling_off_with_ngram():
    c = cfg(["serve", "M", "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}'], "0.15.0")
    assert c.flags["async_scheduling"].value is False
    crash = cfg(["serve", "M", "--async-scheduling", "--speculative-config",
                 '{"method": "ngram", "num_speculative_tokens": 3}'], "0.15.0")
    assert any("async" in m for m in errors(crash))


def test_async_scheduling_with_pipeline_parallelism_starts_on_033():
    """0.33 vllm/config/vllm.py: only the V1 model runner refuses async scheduling with PP; the V2
    runner, the default where Triton is installed, runs it (vLLM PR #32618: +30.8 % throughput)."""
    c = cfg(["serve", "M", "-pp", "4", "--async-scheduling"], "0.33.0")
    assert errors(c) == []
    assert any("V1 model runner" in i.message and i.severity == "warning" for i in c.issues)
    assert cfg(["serve", "M", "-pp", "4"], "0.33.0").flags["async_scheduling"].value is True


def test_chunked_prefill_cannot_be_turned_off_in_010():
    c = cfg(["serve", "M", "--no-enable-chunked-prefill"], "0.10.0")
    assert c.flags["enable_chunked_prefill"].value is True
    assert any("no effect" in n for n in c.notes)
    assert cfg(["serve", "M", "--no-enable-chunked-prefill"], "0.15.0").flags["enable_chunked_prefill"].value is False


def test_legacy_speculative_flags_map_to_the_same_keys():
    c = cfg(["serve", "M", "--speculative-model", "/d", "--num-speculative-tokens", "3"], "0.8.2")
    assert explicit(c)["speculative_config.model"] == "/d"
    assert explicit(c)["speculative_config.num_speculative_tokens"] == 3
    assert c.flags["speculative_config.model"].flag == "--speculative-model"


def test_primary_flag_of_a_sub_key():
    assert VLLM.primary_flag("speculative_config.method", "0.33.0") == "--speculative-config.method"
    assert VLLM.primary_flag("max_num_seqs", "0.33.0") == "--max-num-seqs"
