"""Fixtures for the report tests: real documents built from the shipped seed-000 examples.

The comparison is examples/sglang-qwen-40toks.service against baselines/70toks.yaml (the README's
first command); the fleet report adds a clean host (the 70 tok/s unit) and an unreadable one.
"""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from driftwatch.findings.compare import compare
from driftwatch.findings.judging import Judging
from driftwatch.findings.rulebook import load_rules
from driftwatch.report.data import build_report, comparison_to_dict, host_entry
from driftwatch.run.fleet import Judge
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.baseline import load_baseline

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
BASELINES = REPO / "baselines"
UNIT_40 = EXAMPLES / "sglang-qwen-40toks.service"
UNIT_70 = EXAMPLES / "sglang-qwen-70toks.service"


@pytest.fixture(scope="session")
def rules():
    return load_rules()


@pytest.fixture(scope="session")
def baseline():
    return load_baseline("70toks", BASELINES, unit_reader=lambda p: snapshot_from_unit_file(p))


@pytest.fixture(scope="session")
def _seed_comparison(baseline, rules):
    return compare(baseline, snapshot_from_unit_file(str(UNIT_40)), rules, [])


@pytest.fixture
def seed_comparison(_seed_comparison):
    """The Comparison behind the README's sample output (40 tok/s unit vs baseline 70toks)."""
    return _seed_comparison


@pytest.fixture(scope="session")
def _seed_doc(_seed_comparison):
    return comparison_to_dict(_seed_comparison)


@pytest.fixture
def seed_doc(_seed_doc):
    """Its driftwatch.compare/v1 document (a fresh copy: tests may plant values in it)."""
    return copy.deepcopy(_seed_doc)


@pytest.fixture(scope="session")
def _fleet_doc(baseline, rules):
    drifted = snapshot_from_unit_file(str(UNIT_40))
    drifted.host = "ct129"
    clean = snapshot_from_unit_file(str(UNIT_70))
    clean.host = "ct130"
    entries = [Judge(baseline, Judging(rules)).snapshot(drifted),
               Judge(baseline, Judging(rules)).snapshot(clean),
               host_entry("ct200", "sglang-qwen.service", "error", error="timeout after 10 s")]
    return build_report(baseline, entries)


@pytest.fixture
def fleet_doc(_fleet_doc):
    """A driftwatch.report/v1 document: ct129 drifted (the seed), ct130 clean, ct200 unreadable."""
    return copy.deepcopy(_fleet_doc)
