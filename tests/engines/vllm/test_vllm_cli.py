"""show / compare / report / snapshot on the vLLM examples through driftwatch's entry point, in-process
(issue 10, items 1, 6, 7, and "Bad input")."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_helpers import run_in_process

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
DRIFTWATCH = Path(sys.executable).with_name("driftwatch")
CONFIG_YAML = EXAMPLES / "vllm-qwen3-8b.yaml"


class Run:
    def __init__(self, proc):
        self.code, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr

    def json(self):
        return json.loads(self.stdout)

    def __repr__(self):
        return f"<exit {self.code}\nstdout: {self.stdout[:3000]}\nstderr: {self.stderr[:2000]}>"


@pytest.fixture
def dw(tmp_path):
    def run(*args, env=None, cwd=None) -> Run:
        return Run(run_in_process(*args, cwd=cwd or REPO, env={"DRIFTWATCH_ENGINE_CONFIG": None, **(env or {})}))
    return run


def one_line_error(run: Run, *needles: str) -> None:
    assert run.code == 2, run
    assert "Traceback" not in run.stderr + run.stdout, run
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("driftwatch: "), run
    for needle in needles:
        assert needle in lines[0], (needle, run)


def flags(data: dict) -> dict:
    return {k: v["value"] for k, v in data["engine"]["flags"].items()}


# example -> (entry, release chosen or None for "any", explicit values that must be read)
EXPECTED = {
    "vllm-qwen-mtp3.service": ("vllm serve", None, {
        "model": "/models/Qwen3.6-27B", "tensor_parallel_size": 2, "max_model_len": 131072, "max_num_seqs": 16,
        "gpu_memory_utilization": 0.88, "enable_prefix_caching": True, "speculative_config.method": "mtp",
        "speculative_config.num_speculative_tokens": 3}),
    "vllm-qwen-mtp1-eager.service": ("vllm serve", None, {
        "tensor_parallel_size": 2, "max_num_seqs": 16, "gpu_memory_utilization": 0.88, "enforce_eager": True,
        "speculative_config.method": "mtp", "speculative_config.num_speculative_tokens": 1}),
    "vllm-qwen-migrated.service": ("python -m vllm.entrypoints.openai.api_server", None, {
        "model": "/root/models/Qwen3.6-27B", "max_model_len": 32768,
        "speculative_config.method": "qwen3_next_mtp"}),
    "vllm-docker-llama.service": ("", "0.15.0", {
        "model": "meta-llama/Llama-3.1-8B-Instruct", "max_model_len": 16384, "max_num_seqs": 64,
        "enable_chunked_prefill": True, "max_num_batched_tokens": 4096}),
    "vllm-qwen3-8b-config.service": ("vllm serve", None, {"port": 8001, "config": "/etc/vllm/qwen3-8b.yaml"}),
}


def test_every_vllm_example_is_covered():
    assert {p.name for p in EXAMPLES.glob("vllm-*.service")} == set(EXPECTED)


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_show_reads_vllm_examples(dw, example):
    entry, release, expected = EXPECTED[example]
    run = dw("show", "--unit-file", EXAMPLES / example, "--format", "json")
    assert run.code == 0, run
    data = run.json()
    assert data["engine"]["name"] == "vllm"
    assert data["launcher"]["entry"] == entry
    if release:
        assert data["engine"]["version"] == release
    got = flags(data)
    for key, value in expected.items():
        assert got.get(key) == pytest.approx(value) if isinstance(value, float) else got.get(key) == value, key
    assert not [f for f in data["findings"] if f["severity"] == "error"], data["findings"]
    text = dw("show", "--unit-file", EXAMPLES / example)
    assert text.code == 0 and "vLLM" in text.stdout


def test_show_config_example_with_its_file(dw):
    run = dw("show", "--unit-file", EXAMPLES / "vllm-qwen3-8b-config.service", "--format", "json",
             env={"DRIFTWATCH_ENGINE_CONFIG": str(CONFIG_YAML)})
    assert run.code == 0, run
    data = run.json()
    got = flags(data)
    assert got["model"] == "Qwen/Qwen3-8B" and got["max_num_seqs"] == 128 and got["kv_cache_dtype"] == "fp8"
    assert got["port"] == 8001  # the command line wins over `port: 8000` in the file
    assert got["speculative_config.method"] == "ngram"
    assert data["engine"]["flags"]["max_num_seqs"]["note"] == "from --config /etc/vllm/qwen3-8b.yaml"
    assert not [f for f in data["findings"] if f["kind"] == "engine-config"]


def test_show_config_example_without_its_file_is_one_finding(dw):
    data = dw("show", "--unit-file", EXAMPLES / "vllm-qwen3-8b-config.service", "--format", "json").json()
    config = [f for f in data["findings"] if f["kind"] == "engine-config"]
    assert len(config) == 1 and config[0]["severity"] == "warning"


def test_engine_config_file_that_does_not_exist_is_one_line(dw, tmp_path):
    run = dw("show", "--unit-file", EXAMPLES / "vllm-qwen3-8b-config.service",
             env={"DRIFTWATCH_ENGINE_CONFIG": str(tmp_path / "absent.yaml")})
    one_line_error(run, "DRIFTWATCH_ENGINE_CONFIG", "absent.yaml")


def test_a_bad_engine_config_stops_only_the_commands_that_read_units(dw, tmp_path):
    """The files are read when a command reads a unit, not at start: `rules list` never needs them."""
    env = {"DRIFTWATCH_ENGINE_CONFIG": str(tmp_path / "absent.yaml")}
    listed = dw("rules", "list", env=env)
    assert listed.code == 0 and "DW101" in listed.stdout and not listed.stderr, listed
    one_line_error(dw("--engine-config", tmp_path / "absent.yaml", "show", "--unit-file",
                      EXAMPLES / "vllm-qwen3-8b-config.service"), "absent.yaml")


def test_config_file_settings_survive_a_saved_snapshot(dw, tmp_path):
    env = {"DRIFTWATCH_ENGINE_CONFIG": str(CONFIG_YAML)}
    store = tmp_path / "store"
    assert dw("snapshot", "--unit-file", EXAMPLES / "vllm-qwen3-8b-config.service", "--host-name", "gpu7",
              "--store", store, env=env).code == 0
    from driftwatch.snapshots.store import SnapshotStore
    saved = [r.path for r in SnapshotStore(store).records()]  # listed as STORE/HOST/UNIT/NAME.yaml
    assert saved
    shown = dw("show", "--snapshot", saved[-1], "--format", "json").json()  # no file given now
    assert flags(shown)["max_num_seqs"] == 128


def test_config_file_drift_is_compared_flag_by_flag(dw, tmp_path):
    changed = tmp_path / "qwen3-8b.yaml"
    changed.write_text(CONFIG_YAML.read_text().replace("max-num-seqs: 128", "max-num-seqs: 32")
                       .replace("kv-cache-dtype: fp8\n", ""))
    baseline = dw("baseline", "save", "cfg", "--unit-file", EXAMPLES / "vllm-qwen3-8b-config.service",
                  "--host-name", "gpu7", "--baselines-dir", tmp_path / "b",
                  env={"DRIFTWATCH_ENGINE_CONFIG": str(CONFIG_YAML)})
    assert baseline.code == 0, baseline
    run = dw("compare", "--baseline", "cfg", "--baselines-dir", tmp_path / "b", "--unit-file",
             EXAMPLES / "vllm-qwen3-8b-config.service", "--format", "json",
             env={"DRIFTWATCH_ENGINE_CONFIG": str(changed)})
    assert run.code == 1, run
    keys = {f["key"]: f for f in run.json()["findings"]}
    assert keys["max_num_seqs"]["baseline"] == 128 and keys["max_num_seqs"]["current"] == 32
    assert keys["max_num_seqs"]["rule"] == "DW201"
    assert keys["kv_cache_dtype"]["rule"] == "DW402"


def test_compare_vllm_regression_example(dw):
    run = dw("compare", "--baseline", "vllm-qwen-mtp3", "--unit-file", EXAMPLES / "vllm-qwen-mtp1-eager.service",
             "--format", "json")
    assert run.code == 1, run
    data = run.json()
    ranked = [(f["rank"], f["key"], f["rule"]) for f in data["findings"]]
    assert ranked[0] == (1, "speculative_config.num_speculative_tokens", "DW101"), ranked
    assert ("enforce_eager", "DW206") in [(k, r) for _, k, r in ranked]
    assert len(ranked) == 2  # -tp / --max_num_seqs / --gpu-memory-utilization= are only spelling
    assert 35 <= data["predicted_throughput"] <= 48, data["predicted_throughput"]
    text = dw("compare", "--baseline", "vllm-qwen-mtp3", "--unit-file", EXAMPLES / "vllm-qwen-mtp1-eager.service")
    assert "--enforce-eager" in text.stdout and "tok/s" in text.stdout


def test_compare_migration_against_sglang_baseline(dw):
    run = dw("compare", "--baseline", "70toks", "--unit-file", EXAMPLES / "vllm-qwen-migrated.service",
             "--format", "json")
    assert run.code == 1, run
    data = run.json()
    assert data["predicted_throughput"] is None and data["predicted_throughput_ratio"] is None
    by_key = {f["key"]: f for f in data["findings"]}
    assert by_key["launcher.engine"]["baseline"].startswith("SGLang")
    assert by_key["launcher.engine"]["current"].startswith("vLLM")
    ctx = next(f for f in data["findings"] if f.get("concept") == "kv.context_length")
    assert (ctx["baseline"], ctx["current"]) == (131072, 32768)
    cap = next(f for f in data["findings"] if f.get("concept") == "batch.max_running_requests")
    assert cap["baseline"] == 16 and cap["current_source"] == "runtime"
    # NEXTN (SGLang) and qwen3_next_mtp (vLLM) are the same MTP drafter; 3 steps on both sides.
    assert not [f for f in data["findings"] if (f.get("concept") or "").startswith("speculative.")]


def test_mixed_sglang_and_vllm_report_in_one_run(dw):
    run = dw("report", "--baseline", "70toks", "--unit-file", EXAMPLES / "sglang-qwen-40toks.service",
             "--unit-file", EXAMPLES / "vllm-qwen-migrated.service", "--unit-file",
             EXAMPLES / "vllm-docker-llama.service", "--format", "json")
    assert run.code == 1, run
    data = run.json()
    hosts = data.get("hosts") or data.get("entries")
    assert len(hosts) == 3
    assert all(h["status"] == "drift" for h in hosts), hosts
    text = dw("report", "--baseline", "70toks", "--unit-file", EXAMPLES / "sglang-qwen-40toks.service",
              "--unit-file", EXAMPLES / "vllm-qwen-migrated.service")
    assert "unreadable: 0" in text.stdout and "vLLM" in text.stdout


def test_removed_flag_is_a_startup_finding(dw, tmp_path):
    unit = tmp_path / "old.service"
    unit.write_text("[Service]\nExecStart=/opt/v/bin/vllm serve /m --swap-space 4 --max-num-seqs 8\n")
    new = tmp_path / "new.service"
    new.write_text("[Service]\nExecStart=/opt/v/bin/vllm serve /m --max-num-seqs 8\n")
    run = dw("compare", "--baseline", new, "--unit-file", unit, "--engine-version", "0.33.0", "--format", "json")
    data = run.json()
    assert data["findings"][0]["key"] == "engine.startup", data["findings"]
    assert "0.15.0" in data["findings"][0]["explanation"]  # names the releases that accept it


@pytest.mark.parametrize("exec_start, needle", [
    ("/opt/v/bin/vllm serve /m --speculative-config '{\"method\": \"eagle3\",'", "--speculative-config"),
    ("/opt/v/bin/vllm serve /m --speculative-config.num_spec 3", "num_spec"),
    ("/opt/v/bin/vllm serve /m --config /etc/vllm/absent.yaml", "--config"),
])
def test_bad_input_is_a_finding_never_a_crash(dw, tmp_path, exec_start, needle):
    unit = tmp_path / "bad.service"
    unit.write_text(f"[Service]\nExecStart={exec_start}\n")
    run = dw("show", "--unit-file", unit, "--format", "json")
    assert run.code == 0, run
    assert any(needle in f["message"] for f in run.json()["findings"]), run.json()["findings"]
    run = dw("compare", "--baseline", EXAMPLES / "vllm-qwen-mtp3.service", "--unit-file", unit)
    assert run.code in (0, 1) and "Traceback" not in run.stderr, run


def test_speculative_switched_on_is_one_finding(dw, tmp_path):
    off = tmp_path / "off.service"
    off.write_text("[Service]\nExecStart=/opt/v/bin/vllm serve /m -tp 2\n")
    on = tmp_path / "on.service"
    on.write_text("[Service]\nExecStart=/opt/v/bin/vllm serve /m -tp 2 --speculative-config "
                  "'{\"method\": \"eagle3\", \"model\": \"x/eagle3\", \"num_speculative_tokens\": 3}'\n")
    data = dw("compare", "--baseline", off, "--unit-file", on, "--baseline-metric", "throughput=40",
              "--format", "json").json()
    assert [(f["key"], f["rule"]) for f in data["findings"]] == [("speculative_config.method", "DW102")]
    assert data["findings"][0]["details"]["speculative_config.num_speculative_tokens"]["current"] == 3
    assert data["predicted_throughput"] > 40


def test_engine_config_option(dw, tmp_path):
    run = dw("--engine-config", f"/etc/vllm/qwen3-8b.yaml={CONFIG_YAML}", "show", "--unit-file",
             EXAMPLES / "vllm-qwen3-8b-config.service", "--format", "json")
    assert run.code == 0, run
    assert flags(run.json())["max_num_seqs"] == 128
    other = dw("--engine-config", f"/etc/vllm/other.yaml={CONFIG_YAML}", "show", "--unit-file",
               EXAMPLES / "vllm-qwen3-8b-config.service", "--format", "json")
    assert "max_num_seqs" not in flags(other.json())  # given for another path only
    one_line_error(dw("--engine-config", tmp_path / "absent.yaml", "show", "--unit-file",
                      EXAMPLES / "vllm-qwen3-8b-config.service"), "--engine-config", "absent.yaml")
