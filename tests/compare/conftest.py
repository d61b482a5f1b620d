"""Fixtures for the compare tests: run driftwatch.findings.compare on two unit texts through the Python API."""
from __future__ import annotations

from pathlib import Path

import pytest

from driftwatch.findings.compare import compare
from driftwatch.findings.rulebook import load_rules
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.baseline import Baseline

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def shipped_rules():
    return load_rules()


@pytest.fixture
def compare_units(tmp_path, shipped_rules):
    """compare_units(baseline_text, current_text, ...) -> Comparison (units written to tmp files)."""

    def run(baseline_unit: str, current_unit: str, *, baseline_metrics=None, current_metrics=None,
            concurrency=None, current_runtime=None, ignore=None, rules=None):
        b = tmp_path / "baseline.service"
        c = tmp_path / "current.service"
        b.write_text(baseline_unit, encoding="utf-8")
        c.write_text(current_unit, encoding="utf-8")
        bsnap = snapshot_from_unit_file(str(b))
        csnap = snapshot_from_unit_file(str(c))
        if current_runtime:
            csnap.runtime.update(current_runtime)
        base = Baseline(name="fixture", snapshot=bsnap, metrics={k: float(v) for k, v in
                                                                 (baseline_metrics or {}).items()})
        return compare(base, csnap, rules if rules is not None else shipped_rules, ignore or [], concurrency,
                       None, {k: float(v) for k, v in (current_metrics or {}).items()})

    return run
