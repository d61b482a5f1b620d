"""read_engine_config: SGLang engine argv -> typed EngineConfig (issue 2, item 6).

The flags used here were picked from the shipped catalogs (driftwatch/engines/sglang/catalogs/*.json).
The last section compares driftwatch with SGLang's own argparse parser where an oracle venv exists.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from driftwatch.engines.config import DEFAULT, EXPLICIT, RUNTIME
from driftwatch.engines.sglang.engine import ENGINE as SGLANG

available_versions, load_catalog = SGLANG.releases, SGLANG.catalogs.load
choose_version, read_engine_config = SGLANG.choose_release, SGLANG.read_config

RELEASES = ["0.4.10.post2", "0.5.5", "0.5.12", "0.5.23"]

# The 70 tok/s seed unit (examples/sglang-qwen-70toks.service), engine argv only.
SEED_70 = ["--model-path", "/root/models/Qwen3.6-27B", "--port", "30000", "--host", "0.0.0.0",
           "--tp-size", "2", "--mem-fraction-static", "0.88", "--context-length", "131072",
           "--max-running-requests", "16", "--mamba-full-memory-ratio", "0.5",
           "--mamba-scheduler-strategy", "extra_buffer", "--reasoning-parser", "qwen3",
           "--tool-call-parser", "qwen3_coder", "--speculative-algorithm", "NEXTN",
           "--speculative-num-steps", "3", "--speculative-eagle-topk", "1"]
# The 122B MTP seed (examples/sglang-qwen35-122b-mtp2.service): parses on every 0.5.x release.
SEED_122B = ["--model-path", "/root/models/Qwen3.5-122B-A10B", "--served-model-name", "qwen3.5-122b",
             "--host", "0.0.0.0", "--port", "30000", "--tp", "4", "--mem-fraction-static", "0.85",
             "--reasoning-parser", "qwen3", "--tool-call-parser", "qwen3_coder",
             "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "2", "--speculative-eagle-topk", "1"]


def cfg(argv, version="0.5.23", **kw):
    return read_engine_config(list(argv), engine_version=version, **kw)


def kinds(config):
    return [issue.kind for issue in config.issues]


def test_shipped_catalogs():
    assert set(RELEASES) <= set(available_versions())
    for version in RELEASES:
        catalog = load_catalog(version)
        assert catalog.version == version
        assert len(catalog.options) > 100
        assert "--tp-size" in catalog.by_option


# ---------------------------------------------------------------- argparse semantics


@pytest.mark.parametrize("version", RELEASES)
def test_prefix_abbreviations(version):
    config = cfg(["--tp", "2", "--mem-frac", "0.8"], version)
    assert config.flags["tp_size"].value == 2
    assert config.flags["tp_size"].source == EXPLICIT
    assert config.flags["mem_fraction_static"].value == pytest.approx(0.8)
    assert config.flags["mem_fraction_static"].source == EXPLICIT
    assert config.issues == []


# Regression: FlagValue.flag used to be the option argparse expanded the prefix to (--tp-size).
@pytest.mark.parametrize("argv, field, spelling", [
    (["--tp", "2"], "tp_size", "--tp"),
    (["--tp=2"], "tp_size", "--tp"),
    (["--mem-frac", "0.8"], "mem_fraction_static", "--mem-frac"),
])
def test_abbreviation_spelling_is_recorded(argv, field, spelling):
    assert cfg(argv, "0.5.23").flags[field].flag == spelling


@pytest.mark.parametrize("argv", [["--tp-size", "4"], ["--tp-size=4"], ["--tp", "4"], ["--tp=4"],
                                  ["--tensor-parallel-size", "4"], ["--tensor-parallel-size=4"]])
@pytest.mark.parametrize("version", ["0.5.12", "0.5.23"])
def test_equals_and_space_forms_and_alias(argv, version):
    config = cfg(argv, version)
    assert config.flags["tp_size"].value == 4
    assert config.flags["tp_size"].source == EXPLICIT
    assert "tensor_parallel_size" not in config.flags  # canonical key is the ServerArgs field on every release


def test_alias_spelling_kept():
    assert cfg(["--tensor-parallel-size", "2"], "0.5.12").flags["tp_size"].flag == "--tensor-parallel-size"
    assert cfg(["--tp-size", "2"], "0.5.12").flags["tp_size"].flag == "--tp-size"


def test_catalog_dest_differs_but_field_is_canonical():
    # 0.5.12 names the argparse dest tensor_parallel_size; 0.5.23 calls it tp_size. Both are field tp_size.
    assert load_catalog("0.5.12").by_option["--tp-size"].dest == "tensor_parallel_size"
    assert load_catalog("0.5.23").by_option["--tp-size"].dest == "tp_size"
    a, b = cfg(["--tp-size", "8"], "0.5.12"), cfg(["--tp-size", "8"], "0.5.23")
    assert a.flags["tp_size"].value == b.flags["tp_size"].value == 8


@pytest.mark.parametrize("argv, expected", [
    (["--tp", "2", "--tp-size", "4"], 4),
    (["--tp-size=4", "--tp", "2"], 2),
    (["--tensor-parallel-size", "8", "--port", "1", "--tp", "1"], 1),
])
def test_last_occurrence_wins(argv, expected):
    assert cfg(argv).flags["tp_size"].value == expected


def test_last_occurrence_wins_spelling_follows():
    assert cfg(["--tp-size", "4", "--tensor-parallel-size", "2"]).flags["tp_size"].flag == "--tensor-parallel-size"


@pytest.mark.parametrize("version", RELEASES)
def test_store_true(version):
    on = cfg(["--enable-metrics", "--trust-remote-code"], version)
    off = cfg([], version)
    assert on.flags["enable_metrics"].value is True
    assert on.flags["enable_metrics"].source == EXPLICIT
    assert on.flags["trust_remote_code"].value is True
    assert off.flags["enable_metrics"].value is False
    assert off.flags["enable_metrics"].source == DEFAULT


def test_boolean_optional_action():
    assert cfg(["--no-lora-strict-loading"]).flags["lora_strict_loading"].value is False
    assert cfg(["--lora-strict-loading"]).flags["lora_strict_loading"].value is True
    both = cfg(["--lora-strict-loading", "--no-lora-strict-loading"])
    assert both.flags["lora_strict_loading"].value is False
    assert both.flags["lora_strict_loading"].source == EXPLICIT


def test_json_typed_value():
    assert load_catalog("0.5.23").by_option["--preferred-sampling-params"].type == "json"
    config = cfg(["--preferred-sampling-params", '{"temperature": 0.6, "top_p": 0.95}'])
    assert config.flags["preferred_sampling_params"].value == {"temperature": 0.6, "top_p": 0.95}
    assert config.issues == []
    eq = cfg(['--preferred-sampling-params={"top_k": 20}'])
    assert eq.flags["preferred_sampling_params"].value == {"top_k": 20}


def test_bad_json_is_bad_value():
    config = cfg(["--preferred-sampling-params", "{not json"])
    issue = next(i for i in config.issues if i.kind == "bad-value")
    assert issue.key == "preferred_sampling_params"


def test_nargs_plus():
    config = cfg(["--cuda-graph-bs-decode", "1", "2", "4", "--tp", "2"])
    assert config.flags["cuda_graph_bs_decode"].value == [1, 2, 4]
    assert config.flags["tp_size"].value == 2


def test_negative_number_value():
    assert cfg(["--port", "-5"]).flags["port"].value == -5


# Regression: human_readable_int options (0.5.12+) used to stay strings ('131072', '4k').
# Expected values checked against SGLang 0.5.23's own parser: SI k/M are powers of ten, IEC Ki binary,
# suffixes case-sensitive, no hex.
@pytest.mark.parametrize("version", ["0.5.12", "0.5.23"])
@pytest.mark.parametrize("word, expected", [("131072", 131072), ("4k", 4000), ("1Ki", 1024), ("1M", 1_000_000),
                                            ("2.5k", 2500)])
def test_human_readable_int(word, expected, version):
    config = cfg(["--context-length", word], version)
    assert config.flags["context_length"].value == expected
    assert config.issues == []


@pytest.mark.parametrize("word", ["128K", "0x10", "lots"])
def test_human_readable_int_rejects_what_sglang_rejects(word):
    config = cfg(["--context-length", word], "0.5.23")
    assert [i.kind for i in config.issues] == ["bad-value"]


def test_int_value_on_old_release_is_int():
    assert cfg(["--context-length", "131072"], "0.5.5").flags["context_length"].value == 131072


# ---------------------------------------------------------------- defaults and runtime values


@pytest.mark.parametrize("version", RELEASES)
def test_defaults_and_runtime(version):
    config = cfg(["--model-path", "/m"], version)
    catalog = load_catalog(version)
    assert config.flags["tp_size"].value == 1
    assert config.flags["tp_size"].source == DEFAULT
    assert config.flags["port"].value == 30000
    assert config.flags["port"].source == DEFAULT
    for field in ("context_length", "chunked_prefill_size", "mem_fraction_static", "max_running_requests"):
        value = config.flags[field]
        assert value.source == RUNTIME, field
        assert value.value is None, field
        assert value.note, field
    # every catalog field is present, explicit or not
    assert {spec.field for spec in catalog.options} <= set(config.flags)
    assert set(config.explicit()) == {"model_path"}


def test_explicit_value_equal_to_default_is_still_explicit():
    config = cfg(["--port", "30000"])
    assert config.flags["port"].source == EXPLICIT
    assert config.flags["port"].value == 30000


def test_explicit_runtime_field_is_explicit():
    config = cfg(["--chunked-prefill-size", "8192"])
    assert config.flags["chunked_prefill_size"].value == 8192
    assert config.flags["chunked_prefill_size"].source == EXPLICIT


# ---------------------------------------------------------------- issues, never exceptions


def test_unknown_flag():
    config = cfg(["--tp", "2", "--no-such-flag", "7", "--port", "1"])
    issue = next(i for i in config.issues if i.flag == "--no-such-flag")
    assert issue.kind == "unknown-flag"
    assert issue.releases == []
    assert config.flags["tp_size"].value == 2
    assert config.flags["port"].value == 1
    assert len(config.issues) == 1  # its value '7' is not reported again as a stray word


def test_unknown_flag_with_equals():
    config = cfg(["--no-such-flag=7", "--tp", "2"])
    assert kinds(config) == ["unknown-flag"]
    assert config.issues[0].flag == "--no-such-flag"


def test_stray_positional():
    config = cfg(["--tp", "2", "stray"])
    assert "unknown-flag" in kinds(config)
    assert config.flags["tp_size"].value == 2


@pytest.mark.parametrize("flag", ["--mamba-scheduler-strategy", "--enable-nan-detection"])
def test_removed_flag(flag):
    assert flag in load_catalog("0.5.12").by_option and flag not in load_catalog("0.5.23").by_option
    argv = [flag] + (["extra_buffer"] if flag == "--mamba-scheduler-strategy" else []) + ["--tp", "2"]
    config = cfg(argv, "0.5.23")
    issue = next(i for i in config.issues if i.flag == flag)
    assert issue.kind == "removed-flag"
    assert "0.5.12" in issue.releases and "0.5.23" not in issue.releases
    accepting = [v for v in available_versions() if load_catalog(v).resolve(flag)[0] in ("exact", "prefix")]
    assert issue.releases == accepting
    assert config.flags["tp_size"].value == 2


def test_flag_only_in_newer_release_on_older():
    config = cfg(["--cuda-graph-max-bs-decode", "16"], "0.5.12")
    issue = config.issues[0]
    assert issue.kind == "unknown-flag"
    having = [v for v in SGLANG.catalogs.versions if "--cuda-graph-max-bs-decode" in load_catalog(v).by_option]
    assert issue.releases == having and having[-1] == "0.5.23" and "0.5.12" not in having  # new after 0.5.12
    assert "0.5.23" in issue.message


def test_ambiguous_prefix():
    assert load_catalog("0.5.23").resolve("--cuda-graph-max-bs")[0] == "ambiguous"
    config = cfg(["--cuda-graph-max-bs", "8", "--tp", "2"], "0.5.23")
    issue = next(i for i in config.issues if i.kind == "ambiguous-flag")
    assert issue.flag == "--cuda-graph-max-bs"
    assert "--cuda-graph-max-bs-decode" in issue.message
    exact = [v for v in SGLANG.catalogs.versions if load_catalog(v).resolve("--cuda-graph-max-bs")[0] == "exact"]
    assert issue.releases == exact and {"0.4.10.post2", "0.5.5", "0.5.12"} <= set(exact) and "0.5.23" not in exact
    assert config.flags["tp_size"].value == 2
    assert len(config.issues) == 1  # the value 8 is dropped with the flag


def test_ambiguous_flag_is_fine_where_exact():
    config = cfg(["--cuda-graph-max-bs", "8"], "0.5.12")
    assert config.issues == []
    assert config.flags["cuda_graph_max_bs"].value == 8


@pytest.mark.parametrize("flag, replacement", [("--disable-cuda-graph", "--cuda-graph-backend"),
                                               ("--enable-dp-attention", "--attn-dp-size")])
def test_deprecated_flag(flag, replacement):
    assert load_catalog("0.5.23").by_option[flag].deprecated
    config = cfg([flag], "0.5.23")
    issue = next(i for i in config.issues if i.kind == "deprecated-flag")
    assert issue.flag == flag
    assert replacement in issue.message
    field = load_catalog("0.5.23").by_option[flag].field
    assert config.flags[field].value is True


@pytest.mark.parametrize("argv, key", [
    (["--tp", "two"], "tp_size"),
    (["--mem-fraction-static", "lots"], "mem_fraction_static"),
    (["--port", "3.5"], "port"),
])
def test_bad_typed_value(argv, key):
    config = cfg(argv)
    issue = next(i for i in config.issues if i.kind == "bad-value")
    assert issue.key == key
    assert issue.severity == "error"


def test_choices_violation():
    config = cfg(["--load-format", "nope"], "0.5.23")
    issue = next(i for i in config.issues if i.kind == "bad-value")
    assert issue.key == "load_format"
    assert "safetensors" in issue.message
    assert cfg(["--load-format", "safetensors"], "0.5.23").issues == []


def test_missing_value():
    config = cfg(["--tp"])
    assert kinds(config) == ["bad-value"]
    assert config.flags["tp_size"].source == DEFAULT


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(["--tp", "--tp-size", "--mem-frac", "--cuda-graph-max-bs", "--port",
                                           "--preferred-sampling-params", "--load-format", "--enable-metrics",
                                           "--no-such", "--", "-", "-x", "=", "1", "-1", "{", "x", "NEXTN",
                                           "--speculative-algorithm", "--speculative-num-steps"]),
                          st.text(max_size=10)), max_size=12),
       st.sampled_from([None] + RELEASES))
def test_random_argv_never_raises(argv, version):
    config = read_engine_config(argv, engine_version=version)
    assert config.version in available_versions()  # every shipped release, full or delta


# ---------------------------------------------------------------- release selection


def test_engine_version_exact():
    config = read_engine_config(["--tp", "2"], engine_version="0.5.5")
    assert config.version == "0.5.5"
    assert "0.5.5" in config.version_reason
    assert "nearest" not in config.version_reason


@pytest.mark.parametrize("requested, used", [("0.5.0", "0.4.10.post2"), ("0.5.99", "0.5.23"), ("0.5.5.post3", "0.5.5"),
                                             ("0.5.12.post1", "0.5.12")])
def test_engine_version_nearest_older(requested, used):
    config = read_engine_config(["--tp", "2"], engine_version=requested)
    assert config.version == used
    assert requested in config.version_reason
    assert "nearest older" in config.version_reason
    assert used in config.version_reason


def test_engine_version_older_than_all():
    config = read_engine_config(["--tp", "2"], engine_version="0.3.0")
    assert config.version == "0.4.6"
    assert "oldest" in config.version_reason


def test_recorded_version():
    config = read_engine_config(["--tp", "2"], recorded_version="0.5.12")
    assert config.version == "0.5.12"
    assert "recorded" in config.version_reason


def test_engine_version_beats_recorded():
    config = read_engine_config(["--tp", "2"], engine_version="0.5.5", recorded_version="0.5.12")
    assert config.version == "0.5.5"


def test_inferred_seed_is_the_last_release_with_mamba_scheduler_strategy():
    # --mamba-scheduler-strategy: 0.5.7 - 0.5.19 (a deprecated alias from 0.5.14), gone in 0.5.20
    assert "--mamba-scheduler-strategy" in load_catalog("0.5.19").by_option
    assert "--mamba-scheduler-strategy" not in load_catalog("0.5.20").by_option
    config = read_engine_config(SEED_70)
    assert config.version == "0.5.19"
    assert config.version_reason.startswith("inferred")
    assert "newest" in config.version_reason
    # it parses: the one issue is a warning that the spelling is deprecated there
    assert [(i.kind, i.flag, i.severity) for i in config.issues] == [
        ("deprecated-flag", "--mamba-scheduler-strategy", "warning")]
    # 0.5.14 - 0.5.19 store it under the new name's field
    assert config.flags["mamba_radix_cache_strategy"].value == "extra_buffer"
    assert read_engine_config(SEED_70, engine_version="0.5.13").flags["mamba_scheduler_strategy"].value == "extra_buffer"


def test_inferred_newest_when_all_parse():
    config = read_engine_config(SEED_122B)
    assert config.version == "0.5.23"
    assert config.version_reason.startswith("inferred")


def test_inferred_new_only_flag():
    config = read_engine_config(["--tp", "2", "--cuda-graph-max-bs-decode", "16"])
    assert config.version == "0.5.23"
    assert config.issues == []


def test_inferred_old_only_flag():
    # --cuda-graph-max-bs is exact up to 0.5.19 and an ambiguous prefix from 0.5.20 (-decode, -prefill)
    assert "--cuda-graph-max-bs" in load_catalog("0.5.19").by_option
    assert "--cuda-graph-max-bs" not in load_catalog("0.5.20").by_option
    assert read_engine_config(["--cuda-graph-max-bs", "8"]).version == "0.5.19"


def test_inferred_when_nothing_parses_everywhere():
    # --enable-response-store is new in 0.5.20, the release that dropped --mamba-scheduler-strategy
    config = read_engine_config(["--mamba-scheduler-strategy", "extra_buffer", "--enable-response-store"])
    assert config.version in ("0.5.19", "0.5.23")
    assert "no shipped release" in config.version_reason
    assert len(config.issues) == 1


def test_choose_version_for_two_units():
    version, reason = choose_version([SEED_70, SEED_122B])
    assert version == "0.5.19"
    assert "both" in reason
    a = read_engine_config(SEED_122B, choose_from=[SEED_70, SEED_122B])
    b = read_engine_config(SEED_70, choose_from=[SEED_70, SEED_122B])
    assert a.version == b.version == "0.5.19"
    assert read_engine_config(SEED_122B).version == "0.5.23"  # alone it would be newer


def test_choose_version_single():
    assert choose_version([["--tp", "2"]])[0] == "0.5.23"


# ---------------------------------------------------------------- the SGLang oracle

# Runs inside the oracle venv (stdlib + sglang): SGLang's own parser on each argv.
_ORACLE_SCRIPT = r"""
import argparse, json, logging, sys, warnings
sys.path.insert(0, sys.argv[1])
import gen_sglang_catalog as g
import importlib.metadata as md
version = md.version("sglang")
g._install_stubs(g.STUBS.get(version, []))
warnings.simplefilter("ignore")
logging.disable(logging.CRITICAL)
from sglang.srt.server_args import ServerArgs
argvs = json.loads(sys.stdin.read())
out = []
for argv in argvs:
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    base = vars(parser.parse_args(["--model-path", "/m"]))
    try:
        ns = vars(parser.parse_args(argv))
    except SystemExit:
        out.append({"error": True})
        continue
    changed = sorted(k for k in ns if ns[k] != base.get(k))
    out.append({"ns": ns, "changed": changed})
print("@@ORACLE@@" + json.dumps({"version": version, "results": out}, default=repr))
"""

ORACLE_ARGVS = [
    ["--model-path", "/m", "--tp", "2", "--mem-frac", "0.8"],
    ["--model-path", "/m", "--tp=2", "--tp-size", "4", "--port=31000", "--port", "32000"],
    ["--model-path", "/m", "--tensor-parallel-size", "2", "--enable-metrics", "--trust-remote-code"],
    ["--model-path", "/m", "--host=0.0.0.0", "--mem-fraction-static=0.85", "--disable-radix-cache",
     "--max-running-requests", "16", "--reasoning-parser", "qwen3"],
    ["--model", "/m", "--served-model-name", "a", "--served-model-name", "b", "--log-level", "debug"],
    ["--model-path", "/m", "--chunked-prefill-size", "8192", "--max-prefill-tokens", "16384",
     "--context-length", "32768", "--tp", "2", "--tp", "1"],
    SEED_70,
    SEED_122B,
]


def _oracle_python(version: str) -> str | None:
    env = os.environ.get("DRIFTWATCH_SGLANG_ORACLE_" + version.replace(".", "_").upper()) or \
        os.environ.get("DRIFTWATCH_SGLANG_ORACLE_" + version)
    candidates = [env] if env else []
    candidates.append(f"/work/oracles/sglang-{version}/bin/python")
    for candidate in candidates:
        path = Path(candidate)
        if path.is_dir():
            path = path / "bin" / "python"
        if path.exists():
            return str(path)
    return None


_ORACLE_CACHE: dict[str, dict] = {}


def _run_oracle(version: str) -> dict:
    if version in _ORACLE_CACHE:
        return _ORACLE_CACHE[version]
    python = _oracle_python(version)
    if python is None:
        pytest.skip(f"no SGLang {version} oracle venv (/work/oracles/sglang-{version} or "
                    f"DRIFTWATCH_SGLANG_ORACLE_{version.replace('.', '_').upper()})")
    tools = Path(__file__).resolve().parents[2] / "tools"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "SGL_", "PYTHON"))}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1",
               PYTHONWARNINGS="ignore")
    try:
        res = subprocess.run([python, "-c", _ORACLE_SCRIPT, str(tools)], input=json.dumps(ORACLE_ARGVS),
                             capture_output=True, text=True, env=env, cwd="/", timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"SGLang {version} oracle took more than 120 s")
    if "@@ORACLE@@" not in res.stdout:
        pytest.fail(f"SGLang {version} oracle failed (exit {res.returncode}): {res.stderr[-2000:]}")
    data = json.loads(res.stdout.split("@@ORACLE@@", 1)[1])
    assert data["version"] == version
    _ORACLE_CACHE[version] = data
    return data


def _applicable(argv, version):
    catalog = load_catalog(version)
    return all(catalog.resolve(w)[0] in ("exact", "prefix") for w in argv if w.startswith("--"))


@pytest.mark.parametrize("index", range(len(ORACLE_ARGVS)))
@pytest.mark.parametrize("version", RELEASES)
def test_matches_sglang_parser(version, index):
    argv = ORACLE_ARGVS[index]
    if not _applicable(argv, version):
        pytest.skip(f"argv {index} uses flags SGLang {version} does not have")
    oracle = _run_oracle(version)["results"][index]
    assert "error" not in oracle, f"SGLang {version} refused {argv}"
    ns = oracle["ns"]
    config = read_engine_config(argv, engine_version=version)
    assert config.issues == []
    catalog = load_catalog(version)
    explicit = config.explicit()
    dests = {catalog.by_field[field].dest: field for field in explicit}
    # every dest SGLang set away from its default is one driftwatch reports as explicit
    assert set(oracle["changed"]) <= set(dests), set(oracle["changed"]) - set(dests)
    for dest, field in dests.items():
        value = explicit[field]
        if value.note:  # rewritten by driftwatch (NEXTN -> EAGLE, forced draft tokens): compared below
            continue
        assert ns[dest] == value.value, (field, ns[dest], value.value)


@pytest.mark.parametrize("version", ["0.5.5", "0.5.12", "0.5.23"])
def test_oracle_nextn_is_raw_and_driftwatch_notes_it(version):
    index = ORACLE_ARGVS.index(SEED_122B)
    ns = _run_oracle(version)["results"][index]["ns"]
    assert ns["speculative_algorithm"] == "NEXTN"
    flag = read_engine_config(SEED_122B, engine_version=version).flags["speculative_algorithm"]
    assert flag.value == "EAGLE" and "NEXTN" in flag.note


@pytest.mark.parametrize("version", RELEASES)
def test_oracle_context_length_type(version):
    # the seed's --context-length 131072 is an int for SGLang on every release
    index = ORACLE_ARGVS.index(SEED_70)
    if not _applicable(SEED_70, version):
        pytest.skip(f"seed 70 does not parse on {version}")
    ns = _run_oracle(version)["results"][index]["ns"]
    assert ns["context_length"] == 131072
