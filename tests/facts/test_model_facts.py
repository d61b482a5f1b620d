"""Model facts from config.json: shapes, experts, parameter counts checked against published totals."""
import json
import os

import pytest

from driftwatch.errors import InputError
from driftwatch.facts import ModelFacts, load_model_config, model_facts
from driftwatch.facts.model import find_config_json

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "calibration_models")


def facts(name):
    return load_model_config(os.path.join(MODELS, name + ".json"))


@pytest.mark.parametrize("name, total, active", [
    # Published totals (model cards): parameters in billions, embeddings included.
    ("Qwen--Qwen3-30B-A3B", 30.5, 3.3),
    ("Qwen--Qwen3-8B", 8.2, 8.2),
    ("Qwen--Qwen3-32B", 32.8, 32.8),
    ("Qwen--Qwen3-0.6B", 0.6, 0.6),
    ("Qwen--Qwen2-7B-Instruct", 7.6, 7.6),
    ("Qwen--Qwen2-72B-Instruct", 72.7, 72.7),
    ("Qwen--Qwen2-57B-A14B-Instruct", 57.4, 14.2),
    ("Qwen--Qwen2.5-0.5B-Instruct", 0.49, 0.49),
    ("huggyllama--llama-7b", 6.7, 6.7),
    ("deepseek-ai--DeepSeek-V3", 671, 37),
    ("Qwen--Qwen3.5-122B-A10B", 122, 10),
    ("Qwen--Qwen3.6-27B", 27, 27),
])
def test_parameter_counts_match_the_published_totals(name, total, active):
    f = facts(name)
    assert f.params / 1e9 == pytest.approx(total, rel=0.03)
    assert f.active_params / 1e9 == pytest.approx(active, rel=0.06)


def test_moe_shape_of_qwen3_30b_a3b():
    f = facts("Qwen--Qwen3-30B-A3B")
    assert (f.architecture, f.layers, f.hidden_size, f.heads, f.kv_heads, f.head_dim, f.vocab) == \
        ("Qwen3MoeForCausalLM", 48, 2048, 32, 4, 128, 151936)
    assert (f.experts, f.experts_per_token, f.shared_experts, f.moe_layers) == (128, 8, 0, 48)
    assert f.is_moe and f.attention == "gqa" and f.bytes_per_weight == 2.0 and f.dtype == "bfloat16"
    assert f.summary() == "128-expert MoE (8 active), 30.5B params (3.4B active), bfloat16"


def test_deepseek_v3_mla_first_dense_layers_shared_expert_and_fp8():
    f = facts("deepseek-ai--DeepSeek-V3")
    assert f.attention == "mla" and f.moe_layers == 58 and f.shared_experts == 1 and f.mtp_layers == 1
    assert f.quantization == "fp8" and f.bytes_per_weight == 1.0
    assert f.kv_bytes_per_token == (512 + 64) * 2 * 61  # compressed latent + rope key, 16-bit


def test_hybrid_linear_attention_from_text_config():
    f = facts("Qwen--Qwen3.5-122B-A10B")  # a multimodal wrapper: the language model is in text_config
    assert f.architecture == "Qwen3_5MoeForConditionalGeneration" and f.layers == 48
    assert (f.full_attention_layers, f.linear_attention_layers) == (12, 36)
    assert f.attention == "hybrid-linear" and f.mtp_layers == 1
    assert f.kv_bytes_per_token == 12 * 2 * 2 * 256 * 2  # only the full-attention layers cache KV
    # fp32 recurrent state per linear-attention layer (value heads × key dim × value dim) + the conv window
    assert f.state_bytes_per_request == pytest.approx(36 * 64 * 128 * 128 * 4, rel=0.03)


def test_quantization_bytes_per_weight():
    base = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "hidden_size": 64,
            "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128, "torch_dtype": "float16"}
    assert model_facts(base).bytes_per_weight == 2.0
    gptq = model_facts({**base, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}})
    assert gptq.quantization == "gptq 4-bit" and gptq.bytes_per_weight == pytest.approx(0.5 + 4 / 128)
    nvfp4 = model_facts({**base, "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}})
    assert nvfp4.quantization == "nvfp4" and nvfp4.bytes_per_weight == pytest.approx(0.5625)
    ct = model_facts({**base, "quantization_config": {"quant_method": "compressed-tensors", "config_groups": {
        "group_0": {"weights": {"num_bits": 8, "type": "float"}}}}})
    assert ct.quantization == "fp8" and ct.bytes_per_weight == 1.0
    odd = model_facts({**base, "quantization_config": {"quant_method": "mystery"}})
    assert odd.bytes_per_weight == 2.0 and "not understood" in odd.notes[0]


def test_unknown_stays_unknown():
    f = model_facts({"architectures": ["Foo"], "hidden_size": 1024})
    assert f.layers is None and f.params is None and f.experts is None
    assert "no parameter count" in f.notes[0]
    with pytest.raises(InputError):
        model_facts(["not", "an", "object"])


def test_round_trip_through_a_snapshot_dict():
    f = facts("Qwen--Qwen3-8B")
    again = ModelFacts.from_dict(json.loads(json.dumps(f.to_dict())))
    assert again == f
    assert ModelFacts.from_dict(None) is None and ModelFacts.from_dict({"bogus": 1}) is not None
    assert ModelFacts.from_dict("text") is None


def test_config_found_in_a_directory_and_in_the_hf_cache_layout(tmp_path):
    cfg = json.load(open(os.path.join(MODELS, "Qwen--Qwen3-8B.json")))
    plain = tmp_path / "Qwen3-8B"
    plain.mkdir()
    (plain / "config.json").write_text(json.dumps(cfg))
    assert load_model_config(str(plain)).layers == 36
    cache = tmp_path / "hub" / "models--Qwen--Qwen3-8B"
    snap = cache / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(cfg))
    assert find_config_json(str(cache)) == str(snap / "config.json")
    assert load_model_config(str(cache)).hidden_size == 4096


def test_unreadable_configs_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no config.json"):
        load_model_config(str(tmp_path / "missing"))
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        load_model_config(str(bad))


def test_facts_context_reads_snapshots_and_shares_one_sides_facts():
    from types import SimpleNamespace

    from driftwatch.facts import facts_context
    f = facts("Qwen--Qwen3-8B").to_dict()
    base = SimpleNamespace(runtime={})
    cur = SimpleNamespace(runtime={"model_facts": f, "gpus": [{"index": 0, "name": "NVIDIA H200"}]})
    ctx = facts_context(base, cur)
    assert ctx["model_facts"].layers == 36 and ctx["baseline_model_facts"] is ctx["model_facts"]
    assert ctx["gpu_facts"].spec.key == "h200"
    empty = facts_context(SimpleNamespace(runtime={}), SimpleNamespace(runtime={}))
    assert empty == {"model_facts": None, "baseline_model_facts": None, "gpu_facts": None,
                     "draft_model_facts": None, "baseline_draft_model_facts": None}
    # a draft head's facts belong to their own side: no sharing (a changed draft model is another head)
    head = SimpleNamespace(runtime={"draft_model_facts": f})
    assert facts_context(SimpleNamespace(runtime={}), head)["baseline_draft_model_facts"] is None


def test_a_draft_heads_config_reads_its_draft_vocabulary(tmp_path):
    import json

    from driftwatch.facts import load_draft_config
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1, "hidden_size": 4096,
        "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
        "draft_vocab_size": 32000}))
    head = load_draft_config(str(tmp_path))
    assert head.layers == 1 and head.vocab == 32000 and "draft vocabulary 32000" in " ".join(head.notes)
