"""The store's deduplication and run log, retention of baselines' sources, "since" and the mail's
"new since last run", on real snapshots of the shipped examples."""
from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest
from history_helpers import ROOT, U40, U70, UNIT

from driftwatch.errors import InputError
from driftwatch.findings.judging import Judging
from driftwatch.findings.rulebook import load_rules
from driftwatch.notify.state import mark_changes, state_for
from driftwatch.report import get_format
from driftwatch.report.data import build_report
from driftwatch.run.fleet import Judge
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.run.since import annotate_since
from driftwatch.snapshots.baseline import load_baseline, save_baseline
from driftwatch.snapshots.store import (
    RUNS,
    BaselineSource,
    FileStore as SnapshotStore,  # the YAML-file format (import, export)
    SnapshotKey,
    baseline_protections,
    state_hash,
)
from driftwatch.timestamps import parse_duration, parse_when

UTC = dt.timezone.utc


def snap(unit_file=U70, host="ct129", at="2026-11-28T03:00:00Z", measured=None):
    s = replace(snapshot_from_unit_file(str(unit_file), host=host), unit=UNIT, collected_at=at)
    if measured:
        s.runtime = dict(s.runtime, measured=measured)
    return s


def test_same_state_is_one_file_whatever_was_measured(tmp_path):
    store = SnapshotStore(tmp_path)
    first = store.save_run(snap(measured={"throughput": 70.1}))
    again = store.save_run(snap(at="2026-11-28T03:05:00Z", measured={"throughput": 69.4}))
    assert first.written and not again.written and again.path == first.path
    assert state_hash(snap()) == state_hash(snap(at="2026-12-01T00:00:00Z", measured={"accept_length": 3.1}))
    changed = store.save_run(snap(U40, at="2026-11-28T03:10:00Z"))
    assert changed.written and changed.path != first.path
    back = store.save_run(snap(U70, at="2026-11-28T03:15:00Z"))  # reverted: a new file, not the old one
    assert back.written and back.path not in (first.path, changed.path)
    earlier = store.save_run(snap(U70, at="2026-11-28T03:12:00Z"))  # older than the newest: kept as a file
    assert earlier.written
    seen = store.seen("ct129", UNIT)
    assert seen[first.path].runs == 2 and seen[first.path].last == dt.datetime(2026, 11, 28, 3, 5, tzinfo=UTC)
    assert seen[changed.path].runs == 1
    assert store.runs("ct129", UNIT) == [dt.datetime(2026, 11, 28, 3, 5, tzinfo=UTC)]


def test_runs_in_the_second_of_a_later_snapshot_keep_their_owner(tmp_path):
    store = SnapshotStore(tmp_path)
    a = store.save(snap(at="2026-11-28T03:00:00Z"))
    assert store.save(snap(at="2026-11-28T03:00:01Z")) == a
    b = store.save(snap(U40, at="2026-11-28T03:00:01Z"))  # same second as the run, saved after it
    assert store.save(snap(U40, at="2026-11-28T03:00:02Z")) == b
    seen = store.seen("ct129", UNIT)
    assert (seen[a].runs, seen[b].runs) == (2, 2)


def test_a_torn_run_line_is_skipped_with_a_problem(tmp_path):
    store = SnapshotStore(tmp_path)
    a = store.save(snap())
    store.save(snap(at="2026-11-28T03:05:00Z"))
    with open(a.parent / RUNS, "ab") as fh:
        fh.write(b"2026112")  # a crash in the middle of a line
    assert store.seen("ct129", UNIT)[a].runs == 2
    assert any(RUNS in p and "1 line skipped" in p for p in store.problems)


def test_prune_trims_the_run_log(tmp_path):
    store = SnapshotStore(tmp_path)
    a = store.save(snap(at="2026-11-01T00:00:00Z"))
    for day in range(2, 6):
        store.save(snap(at=f"2026-11-0{day}T00:00:00Z"))
    b = store.save(snap(U40, at="2026-11-06T00:00:00Z"))
    for day in range(7, 10):
        store.save(snap(U40, at=f"2026-11-0{day}T00:00:00Z"))
    now = dt.datetime(2026, 11, 9, 12, tzinfo=UTC)
    # a was collected on the 1st but seen again until the 5th: not older than 5 days
    assert store.prune(older_than=dt.timedelta(days=5), now=now) == []
    gone = store.prune(keep=1, now=now)
    assert [r.path for r in gone] == [a]
    assert store.seen("ct129", UNIT)[b].runs == 4
    store.prune(older_than=dt.timedelta(days=1), now=now)  # b is the newest: stays; its old runs go
    seen = store.seen("ct129", UNIT)[b]
    assert (seen.runs, seen.last) == (2, dt.datetime(2026, 11, 9, tzinfo=UTC))  # the newest run is kept


def test_baseline_protections_follow_the_source_even_renamed(tmp_path):
    store = SnapshotStore(tmp_path / "store")
    paths = [store.save(snap(U70 if i % 2 else U40, at=f"2026-11-0{i + 1}T03:00:00Z")) for i in range(5)]
    bdir = tmp_path / "baselines"
    renamed = store.read(paths[1])
    renamed.host = "elsewhere"  # baseline save --from FILE --host-name elsewhere
    save_baseline(bdir, "renamed", renamed, {}, None, force=False)
    edited = store.read(paths[2])
    edited.unit_text += "\n# edited by hand\n"  # no file has its content any more: its key protects
    save_baseline(bdir, "edited", edited, {}, None, force=False)
    (bdir / "junk.yaml").write_text("- not a baseline\n")
    seen = []
    protected = baseline_protections(bdir, seen.append)
    assert [p.name for p in protected] == ["edited", "renamed"] and all(isinstance(p, BaselineSource) for p in protected)
    assert protected[0].key == SnapshotKey("ct129", UNIT, dt.datetime(2026, 11, 3, 3, tzinfo=UTC))
    assert len(seen) == 1 and "junk.yaml" in seen[0]
    gone = store.prune(keep=1, protected=protected)
    assert [r.path for r in gone] == [paths[0], paths[3]]
    assert baseline_protections(tmp_path / "nowhere") == []


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("30m", 1800), ("12h", 43200), ("7d", 604800),
                                           ("2w", 1209600), ("1d12h", 129600)])
def test_durations(text, seconds):
    assert parse_duration(text) == dt.timedelta(seconds=seconds)
    now = dt.datetime(2026, 12, 1, tzinfo=UTC)
    assert parse_when(text, now) == now - dt.timedelta(seconds=seconds)


def test_when_is_rfc3339_with_a_zone():
    assert parse_when("2026-11-28T05:00:00+02:00") == dt.datetime(2026, 11, 28, 3, tzinfo=UTC)
    for bad in ("2026-11-28T03:00:00", "yesterday", "7 days", "", "-1d"):
        with pytest.raises(InputError):
            parse_when(bad)
    with pytest.raises(InputError, match="--older-than"):
        parse_duration("soon")


# ----------------------------------------------------------------------------- report and mail


@pytest.fixture(scope="module")
def baseline():
    return load_baseline("70toks", ROOT / "baselines")


def fleet(baseline, *units):
    rules = load_rules()
    entries = [Judge(baseline, Judging(rules)).snapshot(replace(snapshot_from_unit_file(str(u), host=h), unit=UNIT))
               for h, u in units]
    return build_report(baseline, entries), rules


def test_since_in_the_report_and_new_since_the_last_snapshot(tmp_path, baseline):
    store = SnapshotStore(tmp_path)
    store.save(snap(U70, at="2026-11-27T03:00:00Z"))
    relaunch = store.save(snap(U40, at="2026-11-28T03:00:00Z"))
    store.save(snap(U40, at="2026-11-29T03:00:00Z"))  # an unchanged run
    store.save(snap(U70, host="ct130", at="2026-11-28T03:00:00Z"))  # ct130's newest has no drift yet
    doc, rules = fleet(baseline, ("ct129", U40), ("ct130", U40))
    annotate_since(doc, store, baseline, Judging(rules))
    by_host = {h["host"]: {f["key"]: f for f in h["comparison"]["findings"]} for h in doc["hosts"]}
    assert by_host["ct129"]["speculative_num_steps"]["since"] == {
        "at": "2026-11-28T03:00:00Z", "snapshot": relaunch.name, "id": f"ct129/{UNIT}/speculative_num_steps"}
    assert by_host["ct130"]["speculative_num_steps"]["since"] == {"at": None, "snapshot": None,
                                                                  "after": "2026-11-28T03:00:00Z"}
    text = get_format("text").render_fleet(doc)
    assert f"since 2026-11-28T03:00:00Z, first seen in snapshot {relaunch.name}" in text
    assert "new since the last snapshot (2026-11-28T03:00:00Z)" in text
    assert f"first seen in snapshot {relaunch.name}" in get_format("html").render_fleet(doc)
    assert f"first seen in snapshot {relaunch.name}" in get_format("markdown").render_fleet(doc)


def test_mail_says_new_since_last_run_or_still_present(baseline):
    before, _ = fleet(baseline, ("ct129", U40))
    previous = state_for(before)
    assert f"ct129/{UNIT}/speculative_num_steps" in previous["findings"]
    now, _ = fleet(baseline, ("ct129", U40), ("ct130", U40))
    assert mark_changes(now, None) == {"new": 0, "still present": 0}  # no state: nothing to say
    counts = mark_changes(now, previous)
    assert counts["new"] == counts["still present"] > 0
    marks = {h["host"]: {f["last_run"] for f in h["comparison"]["findings"]} for h in now["hosts"]}
    assert marks == {"ct129": {"still present"}, "ct130": {"new"}}
    text = get_format("text").render_fleet(now)
    assert "new since last run" in text and "still present" in text
    assert "new since last run" in get_format("html").render_fleet(now)
    assert mark_changes(now, {"fingerprint": "sha256:x"}) == {"new": 0, "still present": 0}  # an older state file


def test_history_since_counts_two_snapshots_of_one_second_as_two_readable(tmp_path):
    """The window `load` reads starts at the last snapshot before the cut, by position: a snapshot of
    the same second before it is outside the window, read or not, and counted readable (it was counted
    unreadable when the window was cut by time)."""
    from driftwatch.run.history_document import unit_history
    store = SnapshotStore(tmp_path)
    for unit_file, at in ((U70, "2026-11-28T03:00:00Z"), (U40, "2026-11-28T03:00:00Z"),
                          (U70, "2026-11-28T04:00:00Z"), (U40, "2026-11-28T05:00:00Z")):
        assert store.save_run(snap(unit_file, at=at)).written
    entry = unit_history(store, "ct129", UNIT, since=dt.datetime(2026, 11, 28, 3, 30, tzinfo=UTC))
    assert (entry["snapshots"], entry["readable"]) == (4, 4)
    assert len(entry["changes"]) > 0  # 03:00 (the second one) -> 04:00 -> 05:00 read and diffed
