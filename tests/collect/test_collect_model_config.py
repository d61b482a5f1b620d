"""The collector reads the served model's config.json on the host (a directory, or the Hugging Face
cache for ORG/NAME), through a real sshd; the snapshot records its facts. Nothing is downloaded."""
from __future__ import annotations

import json

from dw_sshlab import plain_unit

from driftwatch.collect.fleet import collect_fleet
from driftwatch.collect.inventory import HostTarget
from driftwatch.snapshots.reader import EngineReader
from driftwatch.snapshots.snapshot import build_snapshot

READER = EngineReader()  # reads command lines for the collectors, as driftwatch's runs do

# Qwen3-30B-A3B's config.json (the fields facts read), as published on the Hugging Face hub
MOE = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
       "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
       "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
       "intermediate_size": 6144, "torch_dtype": "bfloat16"}


def _target(server):
    return HostTarget(name=server.name, address=server.address, user="root", port=server.port)


def test_model_config_from_a_directory(loopback, known_hosts, options):
    unit = "model-dir.service"
    loopback.write(f"/etc/systemd/system/{unit}", plain_unit(30100))  # --model-path /root/models/m
    loopback.write("/root/models/m/config.json", json.dumps(MOE))
    [raw] = collect_fleet([(_target(loopback), unit)], options(known_hosts(loopback)), reader=READER)
    assert raw.status == "fallback", raw.error
    assert json.loads(raw.model_configs["/root/models/m"]) == MOE
    facts = build_snapshot(raw).runtime["model_facts"]
    assert facts["experts"] == 128 and facts["experts_per_token"] == 8 and facts["layers"] == 48


def test_model_config_from_the_hugging_face_cache(loopback, known_hosts, options):
    unit = "model-hub.service"
    loopback.write(f"/etc/systemd/system/{unit}",
                   "[Service]\nExecStart=/root/ml-env/bin/vllm serve Qwen/Qwen3-30B-A3B --port 30101\n")
    cache = "/root/.cache/huggingface/hub/models--Qwen--Qwen3-30B-A3B/snapshots/0123abcd"
    loopback.write(f"{cache}/config.json", json.dumps(MOE))
    [raw] = collect_fleet([(_target(loopback), unit)], options(known_hosts(loopback)), reader=READER)
    assert list(raw.model_configs) == ["Qwen/Qwen3-30B-A3B"]
    assert build_snapshot(raw).runtime["model_facts"]["experts"] == 128


def test_no_config_json_means_facts_unknown(loopback, known_hosts, options):
    unit = "model-none.service"
    loopback.write(f"/etc/systemd/system/{unit}",
                   "[Service]\nExecStart=/root/ml-env/bin/python3 -m sglang.launch_server --model-path /nowhere/x\n")
    [raw] = collect_fleet([(_target(loopback), unit)], options(known_hosts(loopback)), reader=READER)
    assert raw.status == "fallback" and raw.model_configs == {}
    assert "model_facts" not in build_snapshot(raw).runtime


def test_a_config_json_nested_past_what_python_parses_is_facts_unknown(loopback, known_hosts, options):
    unit = "model-deep.service"
    loopback.write(f"/etc/systemd/system/{unit}",
                   "[Service]\nExecStart=/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/deep\n")
    loopback.write("/root/models/deep/config.json", "[" * 60000)
    [raw] = collect_fleet([(_target(loopback), unit)], options(known_hosts(loopback)), reader=READER)
    assert "/root/models/deep" in raw.model_configs
    assert "model_facts" not in build_snapshot(raw).runtime
