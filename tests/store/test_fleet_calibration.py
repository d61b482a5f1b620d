"""The fleet teaches the model (issue 35 item 4), end to end on a store: the 61 public calibration cases
replayed as history (each case one unit, its baseline and current units two snapshots a day apart, the
measured throughputs on both), `driftwatch calibration` keeps a (predicted interval, measured ratio) pair
per change in the store, shows per family how often the measurements fell inside, and re-sizes the
intervals of a family with 10 pairs or more to this fleet's own 80 % coverage; a comparison judged with
the fleet's calibration says "interval from N changes on this fleet"."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from driftwatch.findings.fleet import MIN_PAIRS, FamilyCalibration, FleetCalibration, history_pairs
from driftwatch.findings.judging import Judging, load_judging
from driftwatch.snapshots.baseline import Baseline
from driftwatch.snapshots.store import open_store
from driftwatch.snapshots.store_calibration import CalibrationPair, load_pairs, save_pairs
from tools import fit_calibration as fit

REPO = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).with_name("driftwatch")


def _replay(store_dir: Path) -> list:
    """Every calibration case as one unit's history in a fresh store: baseline on day 1, current on day 2,
    each with the throughput measured on it (and what the source measured on the current server)."""
    cases = fit.load_cases(fit.DEFAULT_CASES)
    runner = fit.Runner(cases)
    store = open_store(store_dir)
    replayed = []
    for case in cases:
        base, cur = runner.sides[case.name]
        before = case.args["baseline_metrics"].get("throughput") or 100.0
        after = before * case.measured
        conc = case.args["concurrency"]
        common = {"concurrency": float(conc)} if conc else {}
        for snap, day, measured in ((base.snapshot, 1, {"throughput": before}),
                                    (cur, 2, {"throughput": after, **case.args["current_metrics"],
                                              **(case.workload or {})})):
            snap.host, snap.unit = case.name[:60], "llm.service"
            snap.collected_at = f"2026-11-0{day}T03:00:00Z"
            snap.runtime["measured"] = {**common, **measured}
            if runner.facts[case.name]:
                snap.runtime["model_facts"] = runner.facts[case.name]
            if case.gpus:
                snap.runtime["gpus"] = case.gpus
            store.save(snap, dedupe=False)
        replayed.append(case)
    store.close()
    return replayed


@pytest.fixture(scope="module")
def fleet_store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fleet")
    cases = _replay(folder)
    return folder, cases


def test_the_history_holds_one_pair_per_measured_change_and_the_store_keeps_them(fleet_store):
    folder, cases = fleet_store
    store = open_store(folder)
    try:
        assert load_pairs(store) == []  # nothing kept before the first run
        pairs = history_pairs(store, load_judging())
        assert len(pairs) >= 40, len(pairs)  # most cases predict an interval (the rest have no number)
        for p in pairs:
            case = next(c for c in cases if c.name[:60] == p.host)
            assert p.measured == pytest.approx(case.measured, rel=1e-6)  # the history's own measurement
            assert p.lo <= (p.point or p.lo) <= p.hi
        save_pairs(store, pairs)
        save_pairs(store, pairs)  # saved twice: still one row per change
        assert sorted(load_pairs(store), key=lambda p: p.host) == sorted(pairs, key=lambda p: p.host)
    finally:
        store.close()


def test_calibration_command_shows_coverage_per_family_and_resizes_the_big_ones(fleet_store):
    folder, _ = fleet_store
    out = subprocess.run([str(DW), "calibration", "--store", str(folder),
                          "--format", "json"], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema"] == "driftwatch.calibration/v1"
    families = {f["family"]: f for f in doc["families"]}
    assert sum(f["pairs"] for f in families.values()) == doc["pairs"]
    big = [f for f in families.values() if f["pairs"] >= MIN_PAIRS]
    assert big, families  # speculative decoding at least
    for f in families.values():
        assert f["active"] == (f["pairs"] >= MIN_PAIRS)
        if f["active"]:
            assert f["coverage_after"] >= 0.8  # the fleet's own 80 %
    text = subprocess.run([str(DW), "calibration", "--store", str(folder)],
                          capture_output=True, text=True, cwd=REPO)
    assert text.returncode == 0 and "speculative decoding" in text.stdout and "on this fleet" in text.stdout


def test_a_comparison_judged_with_the_fleet_says_where_its_interval_comes_from(fleet_store):
    folder, cases = fleet_store
    store = open_store(folder)
    try:
        fleet = FleetCalibration.from_pairs(load_pairs(store) or history_pairs(store, load_judging()))
        family = next(f for f in fleet.families.values() if f.active)
        pair = family.pairs[0]
        stored = store.load(pair.host, pair.unit)
    finally:
        store.close()
    base = Baseline(name="day1", snapshot=stored[0].snapshot, metrics=dict(stored[0].snapshot.runtime["measured"]))
    plain = load_judging().compare(base, stored[1].snapshot)
    judged = Judging(rules=plain and load_judging().rules, fleet=fleet).compare(base, stored[1].snapshot)
    said = [f for f in judged.findings if f"interval from {family.n} changes on this fleet" in f.detail]
    assert said
    f = said[0]
    before = next(g for g in plain.findings if g.key == f.key).interval
    assert f.interval[0] == pytest.approx(min(before[0] * math.exp(-family.q), f.throughput_ratio))
    assert f.interval[1] == pytest.approx(max(before[1] * math.exp(family.q), f.throughput_ratio))
    assert judged.measured_vs_predicted is not None


def test_split_conformal_narrows_where_the_fleet_lands_inside_and_widens_where_it_misses():
    def pairs(measured):
        return [CalibrationPair("h", "u", f"b{i}", f"c{i}", "CUDA graphs", lo=0.8, hi=1.25, measured=m, point=1.0)
                for i, m in enumerate(measured)]
    tight = FamilyCalibration("CUDA graphs", pairs([1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.03, 0.97, 1.0, 1.01, 0.99]))
    assert tight.active and tight.q < 0  # narrowed
    lo, hi = tight.resize((0.8, 1.25), 1.0)
    assert 0.8 < lo <= 1.0 <= hi < 1.25 and tight.coverage(tight.q) >= 0.8
    loose = FamilyCalibration("CUDA graphs", pairs([1.5, 0.6, 1.4, 0.7, 1.3, 1.0, 1.6, 0.65, 1.1, 0.9]))
    assert loose.q > 0 and loose.coverage() < 0.8 <= loose.coverage(loose.q)  # widened to the fleet's 80 %
    few = FamilyCalibration("CUDA graphs", pairs([1.5] * (MIN_PAIRS - 1)))
    assert not few.active and few.resize((0.8, 1.25), 1.0) == (0.8, 1.25)


def test_a_store_with_a_calibrated_family_gives_the_judging_its_fleet(fleet_store, tmp_path):
    from driftwatch.findings.fleet import with_fleet
    folder, _ = fleet_store
    store = open_store(folder)
    try:
        save_pairs(store, history_pairs(store, load_judging()))
    finally:
        store.close()
    plain = load_judging()
    judged = with_fleet(plain, str(folder))
    assert judged.fleet is not None and any(f.active for f in judged.fleet.families.values())
    assert with_fleet(plain, str(tmp_path / "empty")).fleet is None  # nothing measured: the models' intervals
    assert not (tmp_path / "empty" / "store.db").exists()  # and asking created nothing


def test_a_fleet_report_on_that_store_resizes_the_seed_regressions_interval(fleet_store, tmp_path):
    """The seed regression (speculative steps 3 → 1 against baseline 70toks) reported with the replayed store:
    its finding's interval comes from the fleet's speculative-decoding changes, and says so."""
    import os
    folder, _ = fleet_store
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}
    env["HOME"] = str(tmp_path)
    assert subprocess.run([str(DW), "calibration", "--store", str(folder)], capture_output=True, text=True,
                          cwd=REPO, env=env).returncode == 0  # the pairs are kept in the store
    docs = {}
    for name, store in (("fleet", folder), ("empty", tmp_path / "empty")):
        out = subprocess.run([str(DW), "report", "--unit-file", "examples/sglang-qwen-40toks.service", "--baseline",
                              "70toks", "--store", str(store), "--no-store", "--format", "json"],
                             capture_output=True, text=True, cwd=REPO, env=env)
        assert out.returncode == 1, out.stderr  # drift
        docs[name] = json.loads(out.stdout)
    text = json.dumps(docs["fleet"])
    fam = FleetCalibration.from_pairs(_stored_pairs(folder)).families["speculative decoding"]
    assert f"interval from {fam.n} changes on this fleet" in text
    assert "changes on this fleet" not in json.dumps(docs["empty"])  # no pairs: the models' own intervals


def _stored_pairs(folder):
    store = open_store(folder)
    try:
        return load_pairs(store)
    finally:
        store.close()
