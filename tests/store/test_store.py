"""The snapshot store on real files: save, list in time order, read, latest, prune, history."""
from __future__ import annotations

import datetime as dt
import os
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from driftwatch.errors import InputError
from driftwatch.fileio import dump_yaml
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.baseline import load_baseline, save_baseline
from driftwatch.snapshots.snapshot import snapshot_to_dict
from driftwatch.snapshots.store import (
    LATEST,
    FileStore as SnapshotStore,  # the YAML-file format (import, export)
    open_store,
    save_snapshot,
    snapshot_hash,
)

ROOT = Path(__file__).resolve().parents[2]
U70 = ROOT / "examples" / "sglang-qwen-70toks.service"
U40 = ROOT / "examples" / "sglang-qwen-40toks.service"
UNIT = "sglang-qwen.service"
UTC = dt.timezone.utc


def snap(unit_file=U70, host="ct129", at="2026-11-28T03:00:00Z"):
    s = snapshot_from_unit_file(str(unit_file), host=host)
    return replace(s, unit=UNIT, collected_at=at)


def steps(snapshot) -> int:
    return snapshot.engine.flags["speculative_num_steps"].value


def stored_names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != LATEST)


# ----------------------------------------------------------------------------- saving and order


def test_two_snapshots_in_one_second_sort_in_time_order(tmp_path):
    store = SnapshotStore(tmp_path)
    first = store.save(snap(U70))
    second = store.save(snap(U40))  # same collected_at second, saved after
    assert first != second and first.parent == second.parent
    assert [first.name, second.name] == sorted([first.name, second.name])  # lexical order == time order
    assert stored_names(first.parent) == [first.name, second.name]
    records = store.records("ct129", UNIT)
    assert [r.path for r in records] == [first, second]
    assert [steps(r.read()) for r in records] == [3, 1]
    # latest.yaml is a copy of the last one saved, and latest() agrees
    assert (first.parent / LATEST).read_text() == second.read_text()
    assert store.latest("ct129", UNIT).path == second


def test_names_sort_in_time_order_across_seconds_and_many_in_one_second(tmp_path):
    store = SnapshotStore(tmp_path)
    # dedupe=False: the same state saved again gets a file of its own (the naming scheme under test)
    saved = [store.save(snap(at="2026-11-28T03:00:00Z"), dedupe=False) for _ in range(12)]
    saved.append(store.save(snap(at="2026-11-28T03:00:01Z"), dedupe=False))
    names = [p.name for p in saved]
    assert len(set(names)) == 13
    assert names == sorted(names)
    assert names[0] == "20261128T030000Z-00.yaml" and names[11] == "20261128T030000Z-11.yaml"
    assert [r.path for r in store.records("ct129", UNIT)] == saved


def test_collected_at_is_stored_in_the_one_format(tmp_path):
    store = SnapshotStore(tmp_path)
    path = store.save(snap(at="2026-11-28T05:00:00+02:00"))  # an offset: the same instant as 03:00Z
    assert path.name == "20261128T030000Z-00.yaml"
    assert yaml.safe_load(path.read_text())["collected_at"] == "2026-11-28T03:00:00Z"
    with pytest.raises(InputError, match="ct129:sglang-qwen.service.*offset"):
        store.save(snap(at="2026-11-28T03:00:00"))  # no zone: which instant is it?


def test_save_never_overwrites_a_file_in_the_way(tmp_path):
    store = SnapshotStore(tmp_path)
    folder = store.folder("ct129", UNIT)
    folder.mkdir(parents=True)
    (folder / "20261128T030000Z-00.yaml").write_text("someone else's\n")
    path = store.save(snap())
    assert path.name == "20261128T030000Z-01.yaml"
    assert (folder / "20261128T030000Z-00.yaml").read_text() == "someone else's\n"


def test_save_snapshot_and_host_names_as_folders(tmp_path):
    p1 = save_snapshot(snap(host="gpu7.example.internal:2222"), str(tmp_path))
    p2 = save_snapshot(snap(host=".."), str(tmp_path))
    p3 = save_snapshot(replace(snap(), host=None), str(tmp_path))
    assert p1.parent == tmp_path / "gpu7.example.internal:2222" / UNIT
    assert p2.resolve().is_relative_to(tmp_path.resolve()) and p2.parent.parent.name == "%2E%2E"
    assert p3.parent.parent.name == "local"
    store = open_store(tmp_path)  # save_snapshot writes the default store: the database in the directory
    assert [r.path for r in store.records("gpu7.example.internal:2222")] == [p1]
    assert [r.path for r in store.records(None, UNIT)] == sorted([p1, p2, p3], key=lambda p: p.parent.parent.name)
    assert sorted(store.groups()) == sorted([("gpu7.example.internal:2222", UNIT), ("..", UNIT), ("local", UNIT)])
    later = save_snapshot(snap(host="zz", at="2026-11-29T00:00:00Z"), str(tmp_path))
    assert store.latest(None, UNIT).path == p3  # no host: this machine's snapshots, not everyone's
    assert store.latest("zz", UNIT).path == later and store.latest("zz", "other.service") is None


# ----------------------------------------------------------------------------- an old-style store


def old_save(root: Path, snapshot) -> Path:
    """What `sources.save_snapshot` wrote before the store had an owner: the stamp is collected_at
    with ':' and '-' removed (the SSH collector wrote '+00:00'), de-duplicated with '-1', '-2'…"""
    folder = root / snapshot.host / snapshot.unit
    folder.mkdir(parents=True, exist_ok=True)
    stamp = snapshot.collected_at.replace(":", "").replace("-", "")
    text = dump_yaml(snapshot_to_dict(snapshot))
    for n in range(1000):
        path = folder / (f"{stamp}.yaml" if n == 0 else f"{stamp}-{n}.yaml")
        if not path.exists():
            path.write_text(text)
            (folder / "latest.yaml").write_text(text)
            return path
    raise AssertionError


def test_reading_an_old_style_store(tmp_path):
    a = old_save(tmp_path, snap(U70, at="2026-11-28T02:59:59+00:00"))  # SSH collector, old format
    b = old_save(tmp_path, snap(U70, at="2026-11-28T03:00:00Z"))
    c = old_save(tmp_path, snap(U40, at="2026-11-28T03:00:00Z"))  # same second: '-1' suffix
    d = old_save(tmp_path, snap(U40, at="2026-11-28T04:00:00+00:00"))
    assert [a.name, b.name, c.name, d.name] == ["20261128T025959+0000.yaml", "20261128T030000Z.yaml",
                                                "20261128T030000Z-1.yaml", "20261128T040000+0000.yaml"]
    assert sorted(p.name for p in (a, b, c)) != [a.name, b.name, c.name]  # by name alone, '-1' came first
    store = SnapshotStore(tmp_path)
    records = store.records("ct129", UNIT)
    assert [r.path for r in records] == [a, b, c, d]
    assert [r.stamp for r in records] == ["2026-11-28T02:59:59Z", "2026-11-28T03:00:00Z",
                                          "2026-11-28T03:00:00Z", "2026-11-28T04:00:00Z"]
    assert [steps(s.snapshot) for s in store.load("ct129", UNIT)] == [3, 3, 1, 1]
    assert store.latest("ct129", UNIT).path == d
    # a new snapshot in the same second as the old ones sorts after them
    e = store.save(snap(U70, at="2026-11-28T03:00:00Z"))
    assert e.name == "20261128T030000Z-02.yaml"
    assert [r.path for r in store.records("ct129", UNIT)] == [a, b, c, e, d]


def test_foreign_and_corrupt_files_are_skipped_with_a_problem(tmp_path):
    store = SnapshotStore(tmp_path)
    good = store.save(snap())
    folder = good.parent
    copy = folder / "copied-by-hand.yaml"  # no stamp in the name: dated by its content
    copy.write_text(good.read_text().replace("2026-11-28T03:00:00Z", "2026-11-27T12:00:00+00:00"))
    (folder / "notes.yaml").write_text("just: notes\n")
    (folder / "20261128T040000Z-00.yaml").write_bytes(b"\0binary")  # dated by name, unreadable
    (folder / ".20261128T050000Z-00.yaml.x1.tmp").write_text("half")  # a writer's temp file
    seen = []
    store = SnapshotStore(tmp_path, on_problem=seen.append)
    names = [r.path.name for r in store.records("ct129", UNIT)]
    assert names == ["copied-by-hand.yaml", good.name, "20261128T040000Z-00.yaml"]
    assert len(seen) == 1 and "notes.yaml" in seen[0] and "skipped" in seen[0]
    loaded = store.load("ct129", UNIT)
    assert [s.path.name for s in loaded] == ["copied-by-hand.yaml", good.name]
    assert any("20261128T040000Z-00.yaml" in p and "binary" in p for p in store.problems)
    assert store.latest("ct129", UNIT).path.name == "20261128T040000Z-00.yaml"


def test_empty_or_missing_store(tmp_path):
    store = SnapshotStore(tmp_path / "nothing-here")
    assert store.records() == [] and store.latest("h", "u") is None and store.load("h", "u") == []
    assert store.prune(keep=1) == []


# ----------------------------------------------------------------------------- prune


def five(tmp_path, host="ct129") -> tuple[SnapshotStore, list[Path]]:
    store = SnapshotStore(tmp_path)
    paths = [store.save(snap(U70 if i % 2 else U40, host=host, at=f"2026-11-0{i + 1}T03:00:00Z")) for i in range(5)]
    return store, paths


def test_prune_keep_n_per_host_and_unit(tmp_path):
    store, a = five(tmp_path, "a")
    _, b = five(tmp_path, "b")
    latest_a = (a[0].parent / LATEST).read_bytes()
    gone = store.prune(keep=2)
    assert sorted(r.path for r in gone) == sorted(a[:3] + b[:3])
    assert [r.path for r in store.records("a", UNIT)] == a[3:]
    assert [r.path for r in store.records("b", UNIT)] == b[3:]
    assert (a[0].parent / LATEST).read_bytes() == latest_a  # never rewritten
    assert sorted(os.listdir(a[0].parent)) == sorted([p.name for p in a[3:]] + [LATEST])


def test_prune_older_than_never_deletes_the_newest(tmp_path):
    store, paths = five(tmp_path)
    now = dt.datetime(2026, 11, 4, 12, tzinfo=UTC)
    assert [r.path for r in store.prune(older_than=dt.timedelta(days=2), now=now)] == paths[:2]
    assert [r.path for r in store.records()] == paths[2:]
    # everything is old now, but the newest stays
    assert [r.path for r in store.prune(older_than=dt.timedelta(0), now=dt.datetime(2030, 1, 1, tzinfo=UTC))] \
        == paths[2:4]
    assert [r.path for r in store.records()] == paths[4:]
    assert store.prune(keep=1, older_than=dt.timedelta(0)) == []


def test_prune_with_both_criteria_deletes_only_what_both_allow(tmp_path):
    store, paths = five(tmp_path)
    now = dt.datetime(2026, 11, 4, 12, tzinfo=UTC)  # paths[0..3] are older than 12 hours
    gone = store.prune(keep=3, older_than=dt.timedelta(hours=12), now=now, dry_run=True)
    assert [r.path for r in gone] == paths[:2]  # outside the newest 3 AND older than 12 h
    assert all(p.exists() for p in paths)  # dry run
    assert [r.path for r in store.prune(keep=3, older_than=dt.timedelta(days=2), now=now)] == paths[:2]
    assert [r.path for r in store.prune(keep=1, older_than=dt.timedelta(days=1), now=now)] == [paths[2]]


def test_prune_keeps_protected_paths_and_baseline_sources(tmp_path):
    store, paths = five(tmp_path / "store")
    # `baseline save 70toks --from <snapshot>`: the baseline protects the file it was made from
    source = store.read(paths[1])
    bdir = tmp_path / "baselines"
    save_baseline(bdir, "70toks", source, {"throughput": 70.0}, None, force=False)
    baseline = load_baseline("70toks", bdir)
    digest = snapshot_hash(baseline.snapshot)
    assert digest == store.records()[1].content_hash()
    assert digest != store.records()[3].content_hash()  # same unit text, another time: another snapshot
    gone = store.prune(keep=1, protected=[digest, str(paths[2])])
    assert [r.path for r in gone] == [paths[0], paths[3]]
    assert [r.path for r in store.records()] == [paths[1], paths[2], paths[4]]


def test_prune_keeps_what_it_cannot_check(tmp_path):
    store, paths = five(tmp_path)
    paths[0].write_bytes(b"\0not yaml")  # dated by its name, but its content cannot be hashed
    undated = paths[0].parent / "mine.yaml"
    undated.write_text("not: a snapshot\n")
    gone = store.prune(keep=1, protected=["sha256:" + "0" * 64])
    assert [r.path for r in gone] == paths[1:4]
    assert paths[0].exists() and undated.exists()
    assert any(str(paths[0]) in p and "kept" in p for p in store.problems)
    assert [r.path for r in store.prune(keep=1)] == [paths[0]]  # no hashes to check: it goes
    assert undated.exists()


@pytest.mark.parametrize("kwargs, match", [
    ({}, "say what to delete"),
    ({"keep": 0}, "at least 1"),
    ({"keep": True}, "at least 1"),
    ({"older_than": dt.timedelta(days=-1)}, "negative"),
])
def test_prune_refuses_bad_requests(tmp_path, kwargs, match):
    store, paths = five(tmp_path)
    with pytest.raises(InputError, match=match):
        store.prune(**kwargs)
    assert all(p.exists() for p in paths)


# ----------------------------------------------------------------------------- history


def history_store(tmp_path) -> tuple[SnapshotStore, list[Path]]:
    """steps: 3, 1, 3, 1, 1 (changed, reverted, changed again and kept; the last two are the same
    state, saved as two files as a store written before deduplication holds them)."""
    store = SnapshotStore(tmp_path)
    units = [U70, U40, U70, U40, U40]
    return store, [store.save(snap(u, at=f"2026-11-2{i}T03:00:00Z"), dedupe=False) for i, u in enumerate(units)]


def test_history_skips_a_corrupt_snapshot(tmp_path):
    store, paths = history_store(tmp_path)
    paths[2].write_text("schema: driftwatch.snapshot/v1\nexec_start: [\n")
    assert [s.path for s in store.load("ct129", UNIT)] == [paths[0], paths[1], paths[3], paths[4]]
    assert any(paths[2].name in p and "invalid YAML" in p for p in store.problems)
