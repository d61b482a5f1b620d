"""An upgrade explained (issue 35 item 5): between two shipped releases of each engine, the defaults the
upgrade changed are findings of their own, priced by their concept's model and ranked with the rest; the
others stay listed on the engine.version finding; a public regression the upgrade crosses is named
there when the unit's model and GPUs fit, and not when they are known to differ."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from driftwatch.collect.raw import RawUnit
from driftwatch.diff.upgrade import (
    KnownRegression,
    UpgradeSubject,
    load_regressions,
    matching_regressions,
)
from driftwatch.findings.compare import compare
from driftwatch.report.wording import explain
from driftwatch.snapshots.baseline import Baseline
from driftwatch.snapshots.snapshot import build_snapshot

REPO = Path(__file__).resolve().parents[2]
QWEN3_30B = (REPO / "tools" / "calibration_models" / "Qwen--Qwen3-30B-A3B.json").read_text()
H200X4 = [{"index": i, "name": "NVIDIA H200", "memory_total": "143771 MiB"} for i in range(4)]
H100X8 = [{"index": i, "name": "NVIDIA H100 80GB HBM3", "memory_total": "81559 MiB"} for i in range(8)]

VLLM = """[Service]
ExecStart=/opt/venv/bin/vllm serve /models/Qwen3-30B-A3B --tensor-parallel-size 4 --port 8000
"""
SGLANG = """[Service]
ExecStart=/opt/venv/bin/python3 -m sglang.launch_server --model-path /models/GLM-4.5-Air-FP8 --tp-size 8 \
 --speculative-algorithm EAGLE --port 30000
"""


def _snap(text: str, version: str, gpus: list, configs: dict | None = None):
    raw = RawUnit(host="gpu1", unit="llm.service", text=text, source="systemctl cat",
                  paths=["/etc/systemd/system/llm.service"], engine_version=version, gpus=copy.deepcopy(gpus),
                  model_configs=configs or {})
    return build_snapshot(raw)


def _compare(rules, text: str, versions: tuple[str, str], gpus: list, configs: dict | None = None):
    base = Baseline(name="before", snapshot=_snap(text, versions[0], gpus, configs),
                    metrics={"throughput": 1000.0, "concurrency": 64})
    return compare(base, _snap(text, versions[1], gpus, configs), rules)


def test_the_table_is_well_formed_and_cited():
    table = load_regressions()
    assert len(table) >= 15
    assert {e.engine for e in table} == {"vllm", "sglang"}
    for e in table:
        assert e.url == f"https://github.com/{e.repo}/{'pull' if '/pull/' in e.url else 'issues'}/{e.number}"


def test_vllm_0_10_to_0_15_ranks_its_changed_defaults_and_names_the_public_regression(shipped_rules):
    result = _compare(shipped_rules, VLLM, ("0.10.0", "0.15.0"), H200X4,
                      {"/models/Qwen3-30B-A3B": QWEN3_30B})
    by_key = {f.key: f for f in result.findings}
    overlap = by_key["engine.version.async_scheduling"]
    assert overlap.difference.concept == "scheduler.overlap"
    assert (overlap.difference.concept_baseline, overlap.difference.concept_current) == (False, True)
    assert overlap.throughput_ratio is not None and overlap.throughput_ratio > 1.0  # priced, not "re-measure"
    assert "by default in vLLM 0.15.0" in overlap.difference.notes[0]
    release = by_key["engine.version"]
    details = release.difference.details
    assert "async_scheduling" in details["defaults_priced"]
    assert "async_scheduling" not in details["defaults_changed"] and details["defaults_changed"]  # the rest listed
    named = {m["id"]: m for m in details["known_regressions"]}
    # 0.10.2 -> 0.12.0, Qwen3 on H200: crossed by 0.10.0 -> 0.15.0 (0.10.0 is older than the last fast release)
    assert named["vllm-31030"]["certainty"] == "matches"
    assert "vllm-35048" not in named  # MiniMax on H100/H200: the model is known and differs
    assert any("vllm-project/vllm#31030" in n for n in release.difference.notes)
    said = explain(release)  # the report's sentence names it, with its link
    assert "Known regression vllm-project/vllm#31030 matches" in said and "issues/31030" in said
    assert "--async-scheduling" in said and "ranked as a finding of its own" in said
    # the priced default ranks above the unpriced release finding only by its weight, like any finding
    assert overlap.rank > 0 and release.rank > 0


def test_sglang_0_5_5_to_0_5_23_ranks_its_changed_default_and_names_the_public_regression(shipped_rules):
    result = _compare(shipped_rules, SGLANG, ("0.5.5", "0.5.23"), H100X8)
    by_key = {f.key: f for f in result.findings}
    # the 48 cap on running requests is every release's (0.4.6 on): no change, no finding
    assert "engine.version.max_running_requests" not in by_key
    # 0.5.5 turned the overlap scheduler off under EAGLE (SGLANG_ENABLE_SPEC_V2 off by default); 0.5.11 on
    # keeps it on: a priced finding of its own, faster
    overlap = by_key["engine.version.disable_overlap_schedule"]
    assert overlap.difference.concept == "scheduler.overlap"
    assert (overlap.difference.concept_baseline, overlap.difference.concept_current) == (False, True)
    assert overlap.throughput_ratio is not None and overlap.throughput_ratio > 1
    assert "by default in SGLang 0.5.23" in overlap.difference.notes[0]
    release = by_key["engine.version"]
    assert "findings of their own" in release.detail and "disable_overlap_schedule" in \
        release.difference.details["defaults_priced"]
    named = {m["id"]: m for m in by_key["engine.version"].difference.details["known_regressions"]}
    assert named["sglang-24795"]["certainty"] == "matches"  # GLM + EAGLE, first bad 0.5.10
    assert "mlsys-tutorial-294" not in named  # Higgs TTS: not this model


def test_no_regression_named_for_releases_it_does_not_cross(shipped_rules):
    result = _compare(shipped_rules, SGLANG, ("0.5.12", "0.5.23"), H100X8)
    named = [m["id"] for m in next(f for f in result.findings if f.key == "engine.version")
             .difference.details["known_regressions"]]
    assert "sglang-24795" not in named  # 0.5.12 already had it


@pytest.mark.parametrize(("subject", "expected"), [
    (UpgradeSubject("vllm", "0.10.0", "0.15.0", model="/models/qwen3-235b", gpus=("NVIDIA H200",)), "matches"),
    (UpgradeSubject("vllm", "0.10.0", "0.15.0", model=None, gpus=()), "may apply"),  # model and GPU unknown
    (UpgradeSubject("vllm", "0.11.0", "0.15.0", model="/models/qwen3-235b", gpus=("NVIDIA H200",)), "may apply"),  # inside
    (UpgradeSubject("vllm", "0.10.0", "0.15.0", model="/models/llama-3-70b", gpus=("NVIDIA H200",)), None),
    (UpgradeSubject("vllm", "0.10.0", "0.15.0", model="/models/qwen3-235b", gpus=("NVIDIA A100",)), None),
    (UpgradeSubject("vllm", "0.12.0", "0.15.0", model="/models/qwen3-235b", gpus=("NVIDIA H200",)), None),
    (UpgradeSubject("sglang", "0.10.0", "0.15.0", model="/models/qwen3-235b", gpus=("NVIDIA H200",)), None),
])
def test_matching_by_release_model_and_gpu(subject, expected):
    entry = KnownRegression(id="t-1", engine="vllm", title="t", repo="o/r", number=1, url="https://github.com/o/r/issues/1",
                            first_bad="0.12.0", last_good="0.10.2", measured="m", models=("qwen3",),
                            hardware=("h200",))
    found = matching_regressions(subject, (entry,))
    assert (found[0].certainty if found else None) == expected


def test_a_fixed_regression_is_not_named_past_its_fix():
    entry = KnownRegression(id="t-2", engine="vllm", title="t", repo="o/r", number=2, url="https://github.com/o/r/issues/2",
                            first_bad="0.12.0", last_good="0.10.2", fixed_in="0.14.0", measured="m")
    assert matching_regressions(UpgradeSubject("vllm", "0.10.0", "0.13.0"), (entry,))
    assert not matching_regressions(UpgradeSubject("vllm", "0.10.0", "0.15.0"), (entry,))


def test_restore_leaves_the_release_defaults_with_the_release(shipped_rules):
    """A default the upgrade changed goes with the release: the restore plan says so, it does not call it
    something the running server reports."""
    from driftwatch.findings.restore import plan_restore
    raw = RawUnit(host="gpu1", unit="llm.service", text=VLLM, source="systemctl cat",
                  paths=["/etc/systemd/system/llm.service"], engine_version="0.15.0", gpus=copy.deepcopy(H200X4))
    result = _compare(shipped_rules, VLLM, ("0.10.0", "0.15.0"), H200X4)
    plan = plan_restore(result, raw)
    left = {x.key: x.reason for x in plan.left}
    assert left["engine.version.async_scheduling"] == "release" and left["engine.version"] == "release"
    assert not plan.undoes
