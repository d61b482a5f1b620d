"""The fourth truth end to end: start-up lines and probe answers in a RawUnit -> snapshot (kept,
redacted, saved, read back) -> comparison (laid over the unit, or withheld when another process
printed them). Lines are SGLang's own (formats in tests/engines/sglang/test_sglang_startup_log.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from driftwatch.collect.raw import RawUnit
from driftwatch.errors import InputError
from driftwatch.fileio import dump_yaml
from driftwatch.findings.compare import compare
from driftwatch.findings.rulebook import load_rules
from driftwatch.report.wording import display_pair
from driftwatch.snapshots.baseline import load_baseline
from driftwatch.snapshots.snapshot import build_snapshot, snapshot_from_dict, snapshot_to_dict

REPO = Path(__file__).resolve().parents[2]
SEED_000 = (REPO / "examples" / "sglang-qwen-40toks.service").read_text()
# What SGLang printed when it started the seed-000 unit (two TP ranks; 0.5.x formats).
STARTUP = [
    "[2026-11-28 09:12:30 TP0] server_args=ServerArgs(model_path='/root/models/Qwen3.6-27B', tp_size=2, "
    "context_length=None, max_running_requests=None, api_key='sk-live-4242abcd', mem_fraction_static=0.88)",
    "[2026-11-28 09:12:40 TP0] KV Cache is allocated. #tokens: 19456, K size: 0.56 GB, V size: 0.56 GB",
    "[2026-11-28 09:12:41 TP0] max_total_num_tokens=19456, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=1, context_len=19456, available_gpu_mem=2.14 GB",
    "[2026-11-28 09:12:41 TP1] max_total_num_tokens=19456, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=1, context_len=19456, available_gpu_mem=2.17 GB",
]


def _raw(text: str = SEED_000, **kw) -> RawUnit:
    raw = RawUnit(host="ct129", unit="sglang-qwen.service", text=text, source="systemctl cat",
                  paths=["/etc/systemd/system/sglang-qwen.service"], engine_version="0.5.12")
    for k, v in kw.items():
        setattr(raw, k, v)
    return raw


def _baseline():
    return load_baseline("70toks", REPO / "baselines")


def _finding(result, key):
    found = [f for f in result.findings if f.key == key]
    assert found, [f.key for f in result.findings]
    return found[0]


def test_seed_000_values_computed_at_startup_replace_the_dropped_flags():
    snap = build_snapshot(_raw(startup_lines=STARTUP))
    kept = snap.runtime["startup"]["fields"]
    assert kept["context_length"] == 19456 and kept["max_running_requests"] == 1
    assert kept["max_total_tokens"] == 19456
    assert "tp_size" not in kept and "mem_fraction_static" not in kept  # the unit already says those
    result = compare(_baseline(), snap, load_rules(), concurrency=4)
    context = _finding(result, "context_length")
    assert display_pair(context.difference) == ("131072", "19456 (computed at start-up)")
    cap = _finding(result, "max_running_requests")
    assert display_pair(cap.difference) == ("16", "1 (computed at start-up)")
    # 4 concurrent requests decoded 1 at a time: about a quarter (a batch of 1 steps a little faster)
    assert 0.24 < cap.throughput_ratio < 0.3
    # without the start-up values the cap is only "computed at start-up": no number to estimate with
    blind = compare(_baseline(), build_snapshot(_raw()), load_rules(), concurrency=4)
    assert _finding(blind, "max_running_requests").throughput_ratio is None


def test_reported_secret_never_stored_and_round_trip_keeps_the_values(tmp_path):
    text = SEED_000.replace("--tp-size 2", "--tp-size 2 --api-key sk-live-4242abcd")
    snap = build_snapshot(_raw(text, startup_lines=STARTUP,
                               probe={"/server_info": json.dumps({"api_key": "sk-live-4242abcd",
                                                                  "max_total_num_tokens": 19000,
                                                                  "internal_states": [
                                                                      {"last_gen_throughput": 39.5}]}).encode()}))
    saved = dump_yaml(snapshot_to_dict(snap))
    assert "sk-live-4242abcd" not in saved
    assert snap.runtime["effective"]["fields"]["max_total_tokens"] == 19000
    assert snap.runtime["effective"]["figures"]["throughput"] == 39.5
    back = snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(snap))), "saved.yaml")
    assert back.runtime["startup"] == snap.runtime["startup"]
    assert back.runtime["effective"] == snap.runtime["effective"]
    result = compare(_baseline(), back, load_rules())
    assert result.current_metrics["throughput"] == 39.5  # the server's own figure is measured


def test_explicit_value_the_server_changed_is_its_own_finding():
    text = SEED_000.replace("--tp-size 2", "--tp-size 2 --max-running-requests 16 --context-length 131072")
    result = compare(_baseline(), build_snapshot(_raw(text, startup_lines=STARTUP)), load_rules(), concurrency=8)
    finding = _finding(result, "effective.max_running_requests")
    assert finding.rule.id == "DW604"
    assert display_pair(finding.difference) == ("16", "1 (computed at start-up)")
    assert 1 / 8 - 0.01 < finding.throughput_ratio < 0.2  # 8 concurrent requests, 1 decoded at a time
    assert not [f for f in result.findings if f.key == "max_running_requests"]  # the unit matches the baseline


def test_values_of_another_process_are_not_laid_over_the_unit():
    running = ["/root/ml-env/bin/python3", "-m", "sglang.launch_server", "--model-path", "/root/models/Qwen3.6-27B",
               "--tp-size", "2"]
    snap = build_snapshot(_raw(startup_lines=STARTUP, running_argv=running))
    result = compare(_baseline(), snap, load_rules(), concurrency=4)
    assert display_pair(_finding(result, "context_length").difference)[1] != "19456 (computed at start-up)"
    assert any("not used" in n and "restart pending" in n for n in result.notes)


def test_hand_edited_reported_values_are_refused_with_one_line():
    data = snapshot_to_dict(build_snapshot(_raw(startup_lines=STARTUP)))
    data["runtime"]["startup"]["fields"]["context_length"] = {"nested": 1}
    with pytest.raises(InputError) as err:
        snapshot_from_dict(data, "edited.yaml")
    assert "edited.yaml" in str(err.value) and "runtime.startup.fields.context_length" in str(err.value)
    assert "\n" not in str(err.value)


VLLM_UNIT = ("[Service]\nExecStart=/opt/vllm/bin/vllm serve /models/Qwen3-8B --port 8000 "
             "--gpu-memory-utilization 0.90\n")


def _vllm_startup(tokens: str, context: str) -> list[str]:
    # vllm 0.10.0 v1/core/kv_cache_utils.py:833/837 (formats; real lines in tests/engines/vllm)
    return [f"(EngineCore_0 pid=2211) INFO 08-01 10:00:30 [kv_cache_utils.py:833] GPU KV cache size: {tokens} tokens",
            f"(EngineCore_0 pid=2211) INFO 08-01 10:00:30 [kv_cache_utils.py:837] Maximum concurrency for "
            f"{context} tokens per request: 24.77x"]


def test_vllm_values_both_servers_computed_are_compared():
    from driftwatch.snapshots.baseline import Baseline

    def snap(tokens, context):
        raw = RawUnit(host="gpu7", unit="vllm.service", text=VLLM_UNIT, source="systemctl cat",
                      engine_version="0.10.0", startup_lines=_vllm_startup(tokens, context))
        return build_snapshot(raw)

    base, cur = snap("811,808", "40,960"), snap("122,880", "32,768")
    assert cur.runtime["startup"]["concepts"] == {"kv.max_total_tokens": 122880}
    result = compare(Baseline(name="b", snapshot=base, metrics={}), cur, load_rules())
    context = _finding(result, "max_model_len")
    assert display_pair(context.difference) == ("40960 (computed at start-up)", "32768 (computed at start-up)")
    tokens = _finding(result, "measured.max_total_tokens")  # no native field: compared as measured
    assert (tokens.difference.baseline, tokens.difference.current) == (811808, 122880)


def test_values_the_engine_picks_at_random_are_not_drift():
    """SGLang fills random_seed (and ports) at start-up: two servers differ there every time."""
    def snap(seed):
        lines = [f"[2026-11-28 09:12:30 TP0] server_args=ServerArgs(model_path='/root/models/Qwen3.6-27B', "
                 f"random_seed={seed}, max_running_requests=None)"] + STARTUP[2:3]
        return build_snapshot(_raw(SEED_000, startup_lines=lines))

    from driftwatch.snapshots.baseline import Baseline
    result = compare(Baseline(name="b", snapshot=snap(12345), metrics={}), snap(67890), load_rules())
    assert snap(1).runtime["startup"]["fields"]["random_seed"] == 1  # recorded, for the operator
    assert result.findings == []


def test_lines_of_a_run_that_has_ended_are_not_laid_over_the_unit():
    snap = build_snapshot(_raw(startup_lines=STARTUP, active_state="failed"))
    result = compare(_baseline(), snap, load_rules(), concurrency=4)
    assert display_pair(_finding(result, "context_length").difference)[1] == "computed at start-up"
    assert any("the unit is failed" in n for n in result.notes)


def test_nothing_the_server_reported_is_used_while_a_restart_is_pending():
    from driftwatch.snapshots.baseline import Baseline

    running = ["/opt/vllm/bin/vllm", "serve", "/models/Qwen3-8B", "--port", "8000"]

    def snap(tokens, **kw):
        raw = RawUnit(host="gpu7", unit="vllm.service", text=VLLM_UNIT, source="systemctl cat",
                      engine_version="0.10.0", startup_lines=_vllm_startup(tokens, "40,960"), **kw)
        return build_snapshot(raw)

    result = compare(Baseline(name="b", snapshot=snap("811,808"), metrics={}), snap("20,000", running_argv=running),
                     load_rules())
    assert not [f for f in result.findings if f.key.startswith("measured.")]
    assert "max_total_tokens" not in result.current_metrics


def test_an_idle_servers_throughput_of_zero_is_not_a_measurement():
    idle = build_snapshot(_raw(probe={"/server_info": json.dumps({"internal_states": [
        {"last_gen_throughput": 0.0}]}).encode()}))
    result = compare(_baseline(), idle, load_rules())
    assert "throughput" not in result.current_metrics and result.measured_throughput_ratio is None


def test_capture_sizes_in_another_order_are_the_same_sizes():
    text = SEED_000.replace("--tp-size 2", "--tp-size 2 --cuda-graph-bs 8 4 2 1")
    snap = build_snapshot(_raw(text, startup_lines=["[2026-11-28 09:12:58 TP0] Capture cuda graph bs [1, 2, 4, 8]"]))
    assert "cuda_graph_bs" not in (snap.runtime.get("startup") or {}).get("fields", {})
    from driftwatch.snapshots.baseline import Baseline
    assert compare(Baseline(name="b", snapshot=build_snapshot(_raw(text)), metrics={}), snap, load_rules()).findings == []


def test_a_number_no_snapshot_could_read_back_is_not_stored():
    snap = build_snapshot(_raw(probe={"/server_info": json.dumps({"max_total_num_tokens": 10 ** 17,
                                                                   "context_length": 19456}).encode()}))
    assert snap.runtime["effective"]["fields"] == {"context_length": 19456}
    snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(snap))), "saved.yaml")  # reads back
