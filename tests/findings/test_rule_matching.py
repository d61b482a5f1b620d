"""Rules match differences by concept (any engine) or by native key; the most specific rule wins."""
from __future__ import annotations

import pytest

from driftwatch.concepts import CONCEPTS
from driftwatch.errors import InputError
from driftwatch.findings.rulebook import UNKNOWN_RULE, Rule, load_rules, load_rules_dir, match_rule

RULES = load_rules()


def rule(rule_id, keys=(), concepts=(), origin="shipped", when="any"):
    return Rule(id=rule_id, name=rule_id.lower(), keys=list(keys), severity="low", dimension="none",
                model="no_impact", explanation="x", when=when, origin=origin, concepts=list(concepts),
                shipped=origin == "shipped")


# --- shipped rules speak concepts ------------------------------------------------------------
@pytest.mark.parametrize("key,concept,want", [
    # another engine's native field names (vLLM-style): the concept alone finds the rule
    ("tensor_parallel_size", "parallel.tensor", "DW301"),
    ("pipeline_parallel_size", "parallel.pipeline", "DW301"),
    ("data_parallel_size", "parallel.data", "DW302"),
    ("num_speculative_tokens", "speculative.steps", "DW101"),
    ("speculative_method", "speculative.algorithm", "DW102"),
    ("max_num_seqs", "batch.max_running_requests", "DW201"),
    ("max_model_len", "kv.context_length", "DW202"),
    ("gpu_memory_utilization", "kv.memory_fraction", "DW203"),
    ("max_num_batched_tokens", "batch.max_prefill_tokens", "DW204"),
    ("max_cudagraph_capture_size", "cuda_graph.max_batch", "DW205"),
    ("enforce_eager", "cuda_graph.enabled", "DW206"),
    ("block_size", "kv.page_size", "DW207"),
    ("enable_prefix_caching", "kv.prefix_cache", "DW403"),
    ("async_scheduling", "scheduler.overlap", "DW404"),
    ("scheduling_policy", "scheduler.policy", "DW404"),
    ("compilation_config", "compile.torch_compile", "DW405"),
    ("quantization", "quant.method", "DW402"),
    ("model", "model.path", "DW501"),
    ("served_model_name", "model.served_name", "DW901"),
    ("uvicorn_log_level", "server.log_level", "DW901"),
    ("api_key", "server.api_key", "DW901"),
    # SGLang's own fields, as its engine maps them
    ("tp_size", "parallel.tensor", "DW301"),
    ("speculative_num_steps", "speculative.steps", "DW101"),
    ("disable_radix_cache", "kv.prefix_cache", "DW403"),
    ("disable_overlap_schedule", "scheduler.overlap", "DW404"),
    ("disable_cuda_graph", "cuda_graph.enabled", "DW206"),
    ("cuda_graph_max_bs_decode", "cuda_graph.max_batch", "DW205"),
])
def test_shipped_rule_matches_by_concept(key, concept, want):
    assert match_rule(RULES, key, "changed", concept).id == want


@pytest.mark.parametrize("key,want", [
    # engine fields with no concept, and the engine-neutral prefixes, still match by key
    ("radix_eviction_policy", "DW403"),
    ("enable_mixed_chunk", "DW404"),
    ("mamba_full_memory_ratio", "DW208"),
    ("enable_flashinfer_allreduce_fusion", "DW405"),
    ("cuda_graph_max_bs_prefill", "DW205"),
    ("attn_dp_size", "DW302"),
    ("env.NCCL_P2P_DISABLE", "DW505"),
    ("env.CUDA_VISIBLE_DEVICES", "DW504"),
    ("env.SOMETHING_ELSE", "DW507"),
    ("unit.Service.User", "DW901"),
    ("launcher.interpreter", "DW502"),
    ("engine.version", "DW502"),
    ("launcher.engine", "DW509"),
    ("exec.argv", "DW510"),
    ("engine.startup", "DW001"),
])
def test_shipped_rule_matches_by_key(key, want):
    assert match_rule(RULES, key, "changed", None).id == want


def test_a_native_field_whose_concept_is_unknown_falls_to_dw999():
    # the shipped rules no longer list SGLang's concept-mapped fields as keys
    assert match_rule(RULES, "tp_size", "changed", None) is UNKNOWN_RULE
    assert match_rule(RULES, "some_new_flag", "changed", None) is UNKNOWN_RULE


def test_every_concept_has_a_shipped_rule():
    orphans = [c for c in CONCEPTS if match_rule(RULES, "__no_such_key__", "changed", c) is UNKNOWN_RULE]
    assert not orphans, f"concepts no shipped rule matches (they would read as DW999): {orphans}"


def test_new_rules_for_engine_change_and_unknown_commands():
    by_id = {r.id: r for r in RULES}
    engine = by_id["DW509"]
    assert (engine.keys, engine.severity, engine.dimension, engine.model) == (
        ["launcher.engine"], "high", "stability", "engine_change")
    argv = by_id["DW510"]
    assert (argv.keys, argv.severity, argv.model) == (["exec.argv"], "medium", "command_change")


# --- specificity -----------------------------------------------------------------------------
def test_exact_concept_beats_a_glob_key():
    rules = [rule("AA001", keys=["*_size"]), rule("BB001", concepts=["parallel.tensor"])]
    assert match_rule(rules, "tensor_parallel_size", "changed", "parallel.tensor").id == "BB001"
    # without the concept only the glob is left
    assert match_rule(rules, "tensor_parallel_size", "changed", None).id == "AA001"


def test_exact_key_beats_a_glob_concept():
    rules = [rule("AA001", concepts=["parallel.*"]), rule("BB001", keys=["tp_size"])]
    assert match_rule(rules, "tp_size", "changed", "parallel.tensor").id == "BB001"


def test_longer_glob_wins_across_keys_and_concepts():
    rules = [rule("AA001", keys=["t*"]), rule("BB001", concepts=["parallel.*"])]
    assert match_rule(rules, "tp_size", "changed", "parallel.tensor").id == "BB001"
    rules = [rule("AA001", keys=["tp_si*"]), rule("BB001", concepts=["p*"])]
    assert match_rule(rules, "tp_size", "changed", "parallel.tensor").id == "AA001"


def test_user_rule_beats_shipped_on_a_tie_of_key_and_concept():
    shipped = rule("DW202", concepts=["kv.context_length"])
    user = rule("ACME001", keys=["context_length"], origin="/site/extra.yml")
    assert match_rule([shipped, user], "context_length", "changed", "kv.context_length").id == "ACME001"
    # and the other way round: a user concept rule beats a shipped key rule
    shipped = rule("DW403", keys=["radix_eviction_policy"])
    user = rule("ACME002", concepts=["kv.prefix_cache"], origin="/site/extra.yml")
    assert match_rule([shipped, user], "radix_eviction_policy", "changed", "kv.prefix_cache").id == "ACME002"


def test_same_origin_tie_prefers_the_rule_naming_the_native_key():
    rules = [rule("AA001", concepts=["parallel.tensor"]), rule("BB001", keys=["tp_size"])]
    assert match_rule(rules, "tp_size", "changed", "parallel.tensor").id == "BB001"
    assert match_rule(list(reversed(rules)), "tp_size", "changed", "parallel.tensor").id == "BB001"


def test_when_filters_concept_matches_too():
    r = rule("AA001", concepts=["speculative.algorithm"], when="added")
    assert r.matches("speculative_algorithm", "added", "speculative.algorithm")
    assert not r.matches("speculative_algorithm", "changed", "speculative.algorithm")
    assert not r.matches("speculative_algorithm", "added", None)


# --- loading ---------------------------------------------------------------------------------
def _load(tmp_path, body: str):
    (tmp_path / "r.yaml").write_text("rules:\n  - id: ACME001\n    name: x\n    severity: low\n"
                                     "    dimension: none\n    model: no_impact\n    explanation: x\n" + body)
    return load_rules_dir(tmp_path, {"no_impact"})


def test_a_rule_with_concepts_only_loads(tmp_path):
    (r,) = _load(tmp_path, "    concepts: [parallel.tensor, 'speculative.*']\n")
    assert r.concepts == ["parallel.tensor", "speculative.*"] and r.keys == []
    (r,) = _load(tmp_path, "    concepts: kv.context_length\n")
    assert r.concepts == ["kv.context_length"]


@pytest.mark.parametrize("body", ["", "    keys: []\n", "    keys: []\n    concepts: []\n", "    concepts:\n"])
def test_a_rule_with_neither_keys_nor_concepts_is_an_input_error(tmp_path, body):
    with pytest.raises(InputError, match=r"r\.yaml: rule ACME001: needs concepts: .* or keys:"):
        _load(tmp_path, body)


def test_an_unknown_concept_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="unknown concept.*parallel.tensr"):
        _load(tmp_path, "    concepts: [parallel.tensr]\n")
    with pytest.raises(InputError, match=r"unknown concept.*nothing\.\*"):
        _load(tmp_path, "    concepts: ['nothing.*']\n")


def test_patterns_must_be_strings(tmp_path):
    with pytest.raises(InputError, match="concepts must be a list"):
        _load(tmp_path, "    concepts: [{a: 1}]\n")
    with pytest.raises(InputError, match="keys must be a list"):
        _load(tmp_path, "    keys: [3]\n")


def test_a_rule_that_is_not_a_mapping_is_an_input_error(tmp_path):
    (tmp_path / "r.yaml").write_text("rules:\n  - just a string\n")
    with pytest.raises(InputError, match="each rule must be a mapping"):
        load_rules_dir(tmp_path, None)
