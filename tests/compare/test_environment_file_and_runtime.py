"""Issue 22 item 7: an EnvironmentFile= change is one finding carrying its variables (ranked as the
worst of them, each named once, secrets never shown); a container host against a venv baseline is one
finding that says "the server now runs in image X"."""
from __future__ import annotations

from pathlib import Path

from driftwatch.collect.raw import RawUnit
from driftwatch.findings.compare import compare
from driftwatch.findings.rulebook import load_rules
from driftwatch.report.data import comparison_to_dict
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.baseline import Baseline
from driftwatch.snapshots.snapshot import build_snapshot

REPO = Path(__file__).resolve().parents[2]
EXEC = "ExecStart=/root/ml-env/bin/python3 -m sglang.launch_server --model-path /m --tp-size 2\n"
TOKEN_A, TOKEN_B = "hf_abcdefghijklmnopqrstuvwxyz0123", "hf_zyxwvutsrqponmlkjihgfedcba9876"


def _snap(path: str, content: str, extra: str = ""):
    text = f"# /etc/systemd/system/sglang-qwen.service\n[Service]\nEnvironmentFile={path}\n{extra}{EXEC}"
    return build_snapshot(RawUnit(host="h", unit="sglang-qwen.service", text=text, source="systemctl cat",
                                  paths=["/etc/systemd/system/sglang-qwen.service"],
                                  environment_files={path: content}))


def _compare(b, c) -> dict:
    return comparison_to_dict(compare(Baseline(name="b", snapshot=b), c, load_rules()))


def test_environment_file_change_is_one_finding_with_its_variables():
    doc = _compare(_snap("/etc/a.env", f"CUDA_HOME=/usr/local/cuda-12\nFOO=1\nHF_TOKEN={TOKEN_A}\n"),
                   _snap("/etc/b.env", f"CUDA_HOME=/usr/local/cuda-13\nFOO=2\nHF_TOKEN={TOKEN_B}\n",
                         "Environment=OWN=1\n"))
    keys = [f["key"] for f in doc["findings"]]
    assert keys == ["unit.Service.EnvironmentFile", "env.OWN"]  # the file's variables: not findings again
    f = doc["findings"][0]
    assert [v["name"] for v in f["details"]["variables"]] == ["CUDA_HOME", "FOO", "HF_TOKEN"]
    assert f["severity"] == "medium"  # as CUDA_HOME (DW506), the worst it carries
    text = f["explanation"]
    assert "CUDA_HOME /usr/local/cuda-12 → /usr/local/cuda-13" in text and "FOO 1 → 2" in text
    assert "HF_TOKEN changed (redacted)" in text and TOKEN_A not in str(doc) and TOKEN_B not in str(doc)
    assert "JIT kernels" not in text  # not the CUDA toolkit sentence of DW506


def test_environment_file_with_only_unranked_variables_ranks_below_performance():
    doc = _compare(_snap("/etc/a.env", "FOO=1\n"), _snap("/etc/b.env", "FOO=2\n"))
    (f,) = doc["findings"]
    assert (f["key"], f["severity"], f["rule"]) == ("unit.Service.EnvironmentFile", "low", "DW511")


def test_a_container_host_against_a_venv_baseline_says_the_image():
    base = Baseline(name="b", snapshot=snapshot_from_unit_file(str(REPO / "examples" / "vllm-qwen-mtp3.service")))
    cur = snapshot_from_unit_file(str(REPO / "examples" / "vllm-docker-llama.service"))
    doc = comparison_to_dict(compare(base, cur, load_rules()))
    keys = [f["key"] for f in doc["findings"]]
    assert "launcher.runtime" in keys
    assert not {"launcher.entry", "launcher.image", "launcher.interpreter", "launcher.wrappers"} & set(keys)
    f = next(f for f in doc["findings"] if f["key"] == "launcher.runtime")
    assert "now runs in image vllm/vllm-openai:v0.15.0" in f["explanation"]
    assert '""' not in f["explanation"]
