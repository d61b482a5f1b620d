"""Report's "since" from the kept changes (schema v2), on SQLite and a real PostgreSQL server: the
answer is the walk's (every snapshot judged newest first) on a unit with many snapshots whose
values go back and forth (A -> B -> A), with rows whose changes were never kept (v1 rows, a pruned
gap) judged as the walk judges them, and it judges only the snapshots where a finding's key changed."""
from __future__ import annotations

import datetime as dt
import functools
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from driftwatch.diff.changes import changes_between
from driftwatch.findings.judging import Judging
from driftwatch.findings.rulebook import load_rules
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.run.since import FindingsThroughTime, since_by_walk, since_from_changes
from driftwatch.snapshots.baseline import load_baseline
from driftwatch.snapshots.store import SnapshotStore

ROOT = Path(__file__).resolve().parents[2]
U70 = ROOT / "examples" / "sglang-qwen-70toks.service"
UNIT = "sglang-qwen.service"
T0 = dt.datetime(2026, 10, 1, 3, 0, tzinfo=dt.timezone.utc)
# (speculative steps, max running requests) per day; the baseline has 3 and 16. Steps go back and
# forth (1 -> 2 -> 1, 3 = the baseline's in between), requests change on days steps do not.
PLAN = [(3, 16), (1, 16), (1, 32), (2, 32), (1, 32), (1, 16), (3, 16), (3, 32), (2, 32), (1, 32),
        (2, 32), (2, 16), (4, 16), (1, 16), (1, 32), (2, 32), (1, 32), (2, 16), (2, 32), (1, 32)] * 3


@functools.cache
def _state(steps: int, requests: int):
    text = U70.read_text().replace("--speculative-num-steps 3", f"--speculative-num-steps {steps}").replace(
        "--max-running-requests 16", f"--max-running-requests {requests}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / UNIT
        path.write_text(text)
        return snapshot_from_unit_file(str(path), host="ct129")


def _fill(store, plan) -> None:
    for day, (steps, requests) in enumerate(plan):
        stamp = (T0 + dt.timedelta(days=day)).strftime("%Y-%m-%dT%H:%M:%SZ")
        store.save(replace(_state(steps, requests), unit=UNIT, collected_at=stamp))


def _answers(store, judging, baseline, wanted):
    """(key -> the run's first snapshot name, newest name, snapshots judged) from each way."""
    out = []
    for way in (since_from_changes, since_by_walk):
        findings = FindingsThroughTime(baseline, judging)
        got = way(store, "ct129", UNIT, wanted, findings, None)
        assert got is not None, way.__name__
        start, newest = got
        out.append(({k: s.record.name for k, s in start.items()}, newest.record.name, len(findings._cache)))
    return out


@pytest.mark.parametrize("tail", [(1, 32), (3, 32), (2, 16)], ids=["away-and-back", "no-finding-now", "short-run"])
def test_since_from_kept_changes_is_the_walks(db_location, tail):
    baseline = load_baseline("70toks", ROOT / "baselines")
    judging = Judging(load_rules())
    store = SnapshotStore(db_location, changes=changes_between)
    _fill(store, PLAN + [tail])
    assert len(store.records("ct129", UNIT)) > 50
    wanted = {"speculative_num_steps", "max_running_requests", "no.such.key"}
    (kept, newest, judged), (walked, walk_newest, walk_judged) = _answers(store, judging, baseline, wanted)
    assert (kept, newest) == (walked, walk_newest)
    assert "speculative_num_steps" in kept or tail[0] == 3
    assert judged < walk_judged or walk_judged <= 3  # bounded by the changes of the wanted keys


def test_rows_whose_changes_were_not_kept_are_judged_as_the_walk_judges_them(db_location):
    baseline = load_baseline("70toks", ROOT / "baselines")
    judging = Judging(load_rules())
    store = SnapshotStore(db_location, changes=changes_between)
    _fill(store, PLAN)
    ids = [r.id for r in store.records("ct129", UNIT)]
    # v1 rows (no changes kept) and a pruned gap (kept against a row that is gone)
    store._write(lambda cur, run: [run("UPDATE snapshots SET changes_from = NULL WHERE id = ?", (i,)) for i in ids[5:40:3]])
    store._write(lambda cur, run: run("UPDATE snapshots SET changes_from = ? WHERE id = ?", (ids[-1] + 99, ids[-4])))
    wanted = {"speculative_num_steps", "max_running_requests"}
    (kept, newest, _), (walked, walk_newest, _) = _answers(store, judging, baseline, wanted)
    assert (kept, newest) == (walked, walk_newest) and kept
