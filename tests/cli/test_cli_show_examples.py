"""`driftwatch show` on every shipped example reads the flags an operator sees in the unit."""
import json
from pathlib import Path

import pytest
from cli_helpers import run_in_process

ROOT = Path(__file__).resolve().parents[2]

# example -> (release chosen, explicit fields that must be read with these values). The Qwen3.6-27B units
# write --mamba-scheduler-strategy, which 0.5.19 is the last release to accept (as a deprecated alias whose
# field is mamba_radix_cache_strategy).
EXPECTED = {
    "sglang-qwen-70toks.service": ("0.5.19", {"tp_size": 2, "speculative_num_steps": 3, "speculative_eagle_topk": 1,
                                              "speculative_algorithm": "EAGLE", "context_length": 131072,
                                              "max_running_requests": 16, "mem_fraction_static": 0.88,
                                              "mamba_radix_cache_strategy": "extra_buffer"}),
    "sglang-qwen-40toks.service": ("0.5.19", {"tp_size": 2, "speculative_num_steps": 1,
                                              "speculative_algorithm": "EAGLE"}),
    "sglang-qwen35-122b-mtp1.service": ("0.5.23", {"tp_size": 4, "speculative_num_steps": 1,
                                                   "served_model_name": "qwen3.5-122b", "mem_fraction_static": 0.85}),
    "sglang-qwen35-122b-mtp2.service": ("0.5.23", {"tp_size": 4, "speculative_num_steps": 2}),
    "ddtree/sglang-qwen.service": ("0.5.19", {"speculative_num_steps": 3, "mem_fraction_static": 0.88}),
    "ddtree/sglang-qwen-current.service": ("0.5.19", {"mem_fraction_static": 0.85}),  # the drop-in's ExecStart
    "ddtree/sglang-qwen-ddtree-shadow.service": ("0.5.19", {"speculative_algorithm": "DDTREE", "port": 30001}),
}


def _show(example: str) -> dict:
    proc = run_in_process("show", "--unit-file", ROOT / "examples" / example, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_every_example_is_covered():
    shipped = {str(p.relative_to(ROOT / "examples")) for p in (ROOT / "examples").rglob("*.service")
               if "systemd" not in p.parts and not p.name.startswith("vllm-")}  # vLLM: tests/engines/vllm/
    assert shipped == set(EXPECTED)


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_show_reads_typed_flags(example):
    release, fields = EXPECTED[example]
    data = _show(example)
    assert data["engine"]["name"] == "sglang"
    assert data["engine"]["version"] == release
    assert data["engine"]["version_reason"]
    for field, value in fields.items():
        assert data["engine"]["flags"][field]["value"] == value, field
        assert data["engine"]["flags"][field]["source"] == "explicit"
    assert data["exec_start"]["argv"][1:3] == ["-m", "sglang.launch_server"]
    assert data["launcher"]["interpreter"].startswith("/root/ml-env/bin/python")


def test_ddtree_flags_are_findings_not_crashes():
    data = _show("ddtree/sglang-qwen-ddtree-shadow.service")
    unknown = {f["flag"] for f in data["findings"] if f["kind"] == "unknown-flag"}
    assert unknown == {"--speculative-ddtree-budget", "--speculative-ddtree-topk-cap",
                       "--speculative-ddtree-shadow-linear"}


def test_dropin_reset_replaces_exec_start_and_adds_environment():
    data = _show("ddtree/sglang-qwen-current.service")
    assert data["paths"][-1].endswith("sglang-qwen.service.d/override.conf")
    assert data["environment"] == {"CUDA_VISIBLE_DEVICES": "0,2"}
