"""benchmarks/fuzz.py's grammar-aware inputs (issue 21, item 7) in the suite: a fixed sample of every
generator but the huge units (tests/hardening/test_bounded_inputs.py has those, and the long runs
are in benchmarks/README.md) goes through show, compare in every format and a YAML round trip, and
raises nothing but driftwatch's own errors."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

import fuzz  # noqa: E402

from driftwatch.collect.raw import RawUnit  # noqa: E402
from driftwatch.findings.rulebook import load_rules  # noqa: E402
from driftwatch.snapshots.baseline import Baseline  # noqa: E402
from driftwatch.snapshots.snapshot import build_snapshot  # noqa: E402


@pytest.fixture(scope="module")
def seed_baseline():
    text = (ROOT / "examples/sglang-qwen-70toks.service").read_text()
    snap = build_snapshot(RawUnit(host="b", unit="sglang-qwen.service", text=text, source="systemctl cat"))
    return Baseline(name="seed", snapshot=snap, metrics={"throughput": 70.0})


@pytest.mark.parametrize("kind", [k for k in fuzz.GRAMMAR_KINDS if k != "huge-unit"])
def test_grammar_inputs_raise_only_driftwatch_errors(kind, seed_baseline):
    tally = fuzz.Tally(slow=60.0)
    fuzz.fuzz_grammar(12, random.Random(f"issue21-{kind}"), tally, load_rules(None), seed_baseline, kinds=(kind,))
    assert tally.inputs == 12
    assert not tally.exceptions, {where: tally.examples[where][:300] for where in tally.exceptions}


def test_jobs_share_the_inputs_and_sum_the_tallies(capsys):
    """--jobs N: every count split between the workers (none lost, none twice), each worker's tally summed."""
    assert [fuzz._share(10, 3, k) for k in range(3)] == [4, 3, 3]
    assert sum(fuzz._share(7, 4, k) for k in range(4)) == 7
    a, b = fuzz.Tally(1.0), fuzz.Tally(1.0)
    a.inputs, b.inputs = 3, 4
    a.exceptions["E at x.py:1 (unit)"] = 2
    b.exceptions["E at x.py:1 (unit)"] = 1
    a.examples["E at x.py:1 (unit)"] = "payload"
    b.slow_inputs.append((2.0, "slow", "unit", 10))
    b.slow_small, b.max_cpu, a.max_cpu = 1, 2.0, 0.5
    total = fuzz.merged([a, b], 1.0)
    assert (total.inputs, total.exceptions["E at x.py:1 (unit)"], total.slow_small, total.max_cpu) == (7, 3, 1, 2.0)
    assert total.examples == {"E at x.py:1 (unit)": "payload"} and len(total.slow_inputs) == 1
    assert fuzz.main(["--units", "3", "--snapshots", "0", "--grammar", "3", "--jobs", "2", "--slow", "60",
                      "--seed", "5"]) == 0
    assert capsys.readouterr().out.startswith("6 inputs (3 units, 0 snapshots/baselines")
