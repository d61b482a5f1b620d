"""Every stage is total on its input: random and mutated units and snapshots end as a result or as
driftwatch's own one-line error, never another exception, never NaN/Infinity in JSON, never a stall.

A fixed hypothesis budget keeps this under ~15 s in CI; benchmarks/fuzz.py is the long-running
version (100 000 units, 10 000 snapshots).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import fuzz  # benchmarks/fuzz.py (benchmarks/ is on pytest's pythonpath)
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from driftwatch.collect.raw import RawUnit
from driftwatch.errors import DriftwatchError
from driftwatch.fileio import dump_yaml, load_yaml_text
from driftwatch.findings.compare import compare
from driftwatch.findings.rulebook import load_rules
from driftwatch.report import get_format
from driftwatch.report.data import comparison_to_dict
from driftwatch.report.show import render_show
from driftwatch.snapshots.baseline import Baseline, baseline_from_dict, baseline_to_dict
from driftwatch.snapshots.snapshot import build_snapshot, snapshot_from_dict, snapshot_to_dict

RULES = load_rules(None)
CORPUS = fuzz.seeds()[:40]
BASE = Baseline(name="seed", snapshot=build_snapshot(RawUnit(
    host="b", unit="sglang-qwen.service", source="systemctl cat",
    text=(Path(__file__).resolve().parents[2] / "examples/sglang-qwen-70toks.service").read_text())))
DOCS = fuzz.documents(CORPUS[:12])

# A live snapshot with what the server reported (start-up lines, a probe answer) and model facts,
# so mutations reach runtime.startup / runtime.effective / runtime.model_facts too.
_REPORTED = [
    "[2026-11-28 09:12:41 TP0] max_total_num_tokens=19456, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=1, context_len=19456, available_gpu_mem=2.14 GB",
    "[2026-11-28 09:12:58 TP0] Capture cuda graph bs [1, 2, 4, 8]",
]
_LIVE = build_snapshot(RawUnit(
    host="b", unit="sglang-qwen.service", source="systemctl cat", text=BASE.snapshot.unit_text,
    startup_lines=_REPORTED, probe={"/server_info": json.dumps({"max_total_num_tokens": 19000, "internal_states": [
        {"last_gen_throughput": 39.5, "effective_max_running_requests_per_dp": 2}]}).encode()},
    model_configs={"/root/models/Qwen3.6-27B": json.dumps({"architectures": ["Qwen3ForCausalLM"],
                                                           "num_hidden_layers": 64, "hidden_size": 5120})}))
assert _LIVE.runtime.get("startup") and _LIVE.runtime.get("effective")
DOCS.append(snapshot_to_dict(_LIVE))

BUDGET = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _strict(text: str) -> None:
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


def _everything(snap) -> None:
    render_show(snap, "text", False)
    _strict(render_show(snap, "json", True))
    doc = comparison_to_dict(compare(BASE, snap, RULES))
    for fmt in ("text", "json", "markdown", "html"):
        out = get_format(fmt).render_comparison(doc)
        if fmt == "json":
            _strict(out)


def _total(fn) -> None:
    start = time.process_time()
    try:
        fn()
    except DriftwatchError as exc:
        assert "\n" not in str(exc).strip() and "Traceback" not in str(exc)
    assert time.process_time() - start < 2.0, "an input took more than 2 s of CPU"


@BUDGET
@given(seed=st.sampled_from(range(len(CORPUS))), rnd=st.randoms(use_true_random=False))
def test_mutated_units_are_total(seed, rnd):
    text = fuzz.mutate_text(CORPUS[seed], rnd)
    _total(lambda: _everything(build_snapshot(RawUnit(host="f", unit="f.service", text=text, source="file"))))


_line = st.one_of(st.sampled_from(fuzz.TOKENS), st.text(max_size=40))


@BUDGET
@given(lines=st.lists(_line, max_size=12))
def test_random_units_are_total(lines):
    text = "[Service]\nExecStart=/v/bin/python -m sglang.launch_server " + " ".join(lines) + "\n" + "\n".join(lines)
    _total(lambda: _everything(build_snapshot(RawUnit(host="f", unit="f.service", text=text, source="file"))))


@BUDGET
@given(which=st.sampled_from(range(len(DOCS))), rnd=st.randoms(use_true_random=False))
def test_mutated_snapshots_and_baselines_are_total(which, rnd):
    doc = fuzz.mutate_doc(DOCS[which], rnd)
    try:
        text = dump_yaml(doc)
    except Exception:  # noqa: BLE001 - not a document driftwatch could have been given as YAML
        return

    def one():
        data = load_yaml_text(text, "f.yaml", "baseline")
        if isinstance(data, dict) and data.get("schema") == "driftwatch.baseline/v1":
            b = baseline_from_dict(data, "f.yaml")
            _everything(b.snapshot)
            dump_yaml(baseline_to_dict(b))
        else:
            _everything(snapshot_from_dict(data, "f.yaml"))

    _total(one)


_journal_line = st.one_of(
    st.text(max_size=200),
    st.builds(lambda a, b: f"[x TP0] max_total_num_tokens={a}, max_running_requests={b}, context_len={a}",
              st.text(max_size=12), st.text(max_size=12)),
    st.builds(lambda a: f"server_args=ServerArgs({a})", st.text(max_size=80)),
    st.builds(lambda a: f"INFO [x] non-default args: {{{a}}}", st.text(max_size=80)),
    st.builds(lambda a: f"GPU KV cache size: {a} tokens", st.text(max_size=12)),
)


@BUDGET
@given(lines=st.lists(_journal_line, max_size=8), body=st.binary(max_size=300))
def test_what_a_server_reports_is_total(lines, body):
    """Start-up lines and probe answers of any shape end in a snapshot (or one line), never a crash."""
    for text in (BASE.snapshot.unit_text, (Path(__file__).resolve().parents[2] /
                                           "examples/vllm-qwen-mtp3.service").read_text()):
        raw = RawUnit(host="f", unit="f.service", text=text, source="systemctl cat", startup_lines=lines,
                      probe={"/server_info": body, "/metrics": body, "/v1/models": body})
        _total(lambda raw=raw: _everything(snapshot_from_dict(
            json.loads(json.dumps(snapshot_to_dict(build_snapshot(raw)))), "f.yaml")))


@pytest.mark.parametrize("key, value, problem", [
    ("paths", [["deep"]], "snapshot key paths[0]: expected a string, found a list"),
    ("source", {}, "snapshot key source: expected a string, found a mapping"),
    ("engine_version", 0.5, "snapshot key engine_version: expected a string, found a number (quote it)"),
    ("runtime", {"measured": {"throughput": float("inf")}}, "snapshot key runtime.measured.throughput: not a finite"),
    ("runtime", {"main_pid": 10 ** 40}, "runtime.main_pid: a number too large"),
    ("environment", {"A": [1]}, "snapshot key environment.A: expected a string, found a list"),
])
def test_hand_edited_snapshot_fields_are_one_clear_line(key, value, problem):
    doc = dict(DOCS[0])
    doc[key] = value
    with pytest.raises(DriftwatchError) as exc:
        snapshot_from_dict(doc, "edited.yaml")
    assert str(exc.value).startswith("edited.yaml: ") and problem in str(exc.value)


def test_hand_edited_baseline_fields_name_the_key():
    doc = json.loads(json.dumps(DOCS[1]))
    doc["metrics"] = {"throughput": 10 ** 400}
    with pytest.raises(DriftwatchError, match="baseline key metrics.throughput: a number too large"):
        baseline_from_dict(doc, "b.yaml")
    doc = json.loads(json.dumps(DOCS[1]))
    doc["snapshot"]["exec_start"]["argv"] = "one string"
    with pytest.raises(DriftwatchError, match="baseline key snapshot.exec_start.argv: expected a list of strings"):
        baseline_from_dict(doc, "b.yaml")


@pytest.mark.parametrize("value", ["nan", "inf", "-1e400", "1e400"])
def test_non_finite_numbers_are_a_finding(value):
    snap = build_snapshot(RawUnit(host="f", unit="f.service", text=(
        "[Service]\nExecStart=/v/bin/python -m sglang.launch_server --model-path /m "
        f"--mem-fraction-static {value}\n")))
    assert any(i.kind == "bad-value" and "--mem-fraction-static" in i.message for i in snap.issues)
    doc = comparison_to_dict(compare(BASE, snap, RULES))
    _strict(get_format("json").render_comparison(doc))
    _strict(render_show(snap, "json", True))


def test_a_json_text_value_holding_a_huge_integer_compares():
    # found by benchmarks/fuzz.py (seed 11, 110 000 inputs): OverflowError in the value comparison
    snap = build_snapshot(RawUnit(host="f", unit="f.service", text=(
        "[Service]\nExecStart=/v/bin/python -m sglang.launch_server --model-path /m "
        "--served-model-name '[" + "9" * 400 + "]'\n")))
    _everything(snap)
    comparison_to_dict(compare(Baseline(name="same", snapshot=snap), snap, RULES))
