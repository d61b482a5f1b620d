"""`driftwatch history` over a store built by real `snapshot --unit-file` runs of changing units."""
from __future__ import annotations

import json
from pathlib import Path

from history_helpers import DROPIN, ROOT, U40, U70, UNIT, run, steps_text, with_dropin

from driftwatch.snapshots.store import SnapshotStore

BASELINE = ROOT / "baselines" / "70toks.yaml"
ENV_DROPIN = "[Service]\nEnvironment=NCCL_DEBUG=INFO"
STEPS_1_DROPIN = ENV_DROPIN + "\nExecStart=\nExecStart=" + " ".join(
    steps_text(1).split("ExecStart=", 1)[1].replace("\\\n", " ").split())


def stamp(path: Path) -> str:
    """2026-12-01T10:43:18Z from 20261201T104318Z-00.yaml."""
    s = path.name[:16]
    return f"{s[:4]}-{s[4:6]}-{s[6:8]}T{s[9:11]}:{s[11:13]}:{s[13:15]}Z"


def story(replay):
    """steps 3 (twice: one file, two runs), a drop-in adds NCCL_DEBUG, a drop-in's ExecStart= sets
    steps 1, the drop-in's ExecStart is removed again (steps 3: reverted), then steps 1 again."""
    a = replay.snapshot(U70.read_text())
    same = replay.snapshot(U70.read_text())
    b = replay.snapshot(with_dropin(U70.read_text(), ENV_DROPIN))
    c = replay.snapshot(with_dropin(U70.read_text(), STEPS_1_DROPIN))
    d = replay.snapshot(with_dropin(U70.read_text(), ENV_DROPIN))
    e = replay.snapshot(with_dropin(U70.read_text(), STEPS_1_DROPIN))
    return a, same, b, c, d, e


def test_identical_runs_are_one_snapshot_and_a_run_line(replay):
    # the store is a database (store.db in --store DIR): an unchanged run is one small row in `runs`
    a = replay.snapshot(U70.read_text())
    again = replay.snapshot(U70.read_text())
    assert again == a  # the run is recorded, no new snapshot
    store = SnapshotStore(replay.store)
    assert [r.path for r in store.records()] == [a]
    assert len(store.runs("ct129", UNIT)) == 1
    replay.snapshot(U70.read_text())
    assert [r.path for r in store.records()] == [a] and len(store.runs("ct129", UNIT)) == 2
    assert store.seen("ct129", UNIT)[a].runs == 3
    assert sorted(p.name for p in replay.store.iterdir() if not p.name.startswith("store.db-")) == ["store.db"]


def test_timeline_newest_first_with_origin_files(replay):
    a, same, b, c, d, e = story(replay)
    assert same == a and len({a, b, c, d, e}) == 5
    doc, _ = replay.history()
    assert doc["schema"] == "driftwatch.history/v1"
    [u] = doc["units"]
    assert (u["host"], u["unit"], u["snapshots"], u["runs"]) == ("ct129", UNIT, 5, 6)
    steps = [c_ for c_ in u["changes"] if c_["key"] == "speculative_num_steps"]
    assert [(x["at"], x["old"], x["new"]) for x in steps] == [(stamp(e), 3, 1), (stamp(d), 1, 3), (stamp(c), 3, 1)]
    assert steps[0]["concept"] == "speculative.steps"
    assert steps[0]["origin"] == {"old": "/etc/systemd/system/sglang-qwen.service", "new": DROPIN}
    assert steps[1]["origin"]["old"] == DROPIN  # reverted: the drop-in's ExecStart= is gone
    nccl = [x for x in u["changes"] if x["key"] == "env.NCCL_DEBUG"]
    assert [(x["at"], x["old"], x["new"], x["origin"]["new"]) for x in nccl] == [(stamp(b), None, "INFO", DROPIN)]
    ats = [x["at"] for x in u["changes"]]
    assert ats == sorted(ats, reverse=True)
    # the change happened after the last run that still saw the old state
    first = [x for x in u["changes"] if x["snapshot"] == b.name][0]
    assert first["previous"]["snapshot"] == a.name and first["previous"]["last_seen"] >= stamp(a)
    text, _ = replay.history(fmt="text")
    assert "--speculative-num-steps 3 → 1" in text and "override.conf" in text
    md, _ = replay.history(fmt="markdown")
    assert "| time | change | set by | snapshot |" in md and "`--speculative-num-steps 3 → 1`" in md


def test_baseline_findings_say_since_when_and_whether_they_went_away(replay):
    a, same, b, c, d, e = story(replay)
    doc, _ = replay.history("--baseline", BASELINE)
    [u] = doc["units"]
    by_key = {f["key"]: f for f in u["findings"]}
    steps = by_key["speculative_num_steps"]
    assert (steps["baseline"], steps["current"], steps["rule"]) == (3, 1, "DW101")
    assert steps["first_seen"] == {"snapshot": c.name, "collected_at": stamp(c)}
    assert steps["since"] == {"snapshot": e.name, "collected_at": stamp(e)}
    assert steps["went_away"] is True
    assert [x["gone_at"] for x in steps["episodes"]] == [{"snapshot": d.name, "collected_at": stamp(d)}, None]
    nccl = by_key["env.NCCL_DEBUG"]
    assert nccl["since"]["snapshot"] == b.name and nccl["went_away"] is False
    text, _ = replay.history("--baseline", BASELINE, fmt="text")
    flat = " ".join(text.split())
    assert f"--speculative-num-steps (from override.conf) 3 → 1: since {stamp(e)} (snapshot {e.name}); first seen {stamp(c)} " \
           f"(snapshot {c.name}); went away at {stamp(d)} (snapshot {d.name}) and came back" in flat
    assert f"NCCL_DEBUG (from override.conf) unset → INFO: since {stamp(b)}, first seen in snapshot {b.name}; " \
           "never went away" in flat


def test_seed_000_replayed_answers_since_when(replay):
    """The seed-000 story: the 70 tok/s unit, then the relaunched 40 tok/s one."""
    replay.snapshot(U70.read_text())
    relaunched = replay.snapshot(U40.read_text())
    text, r = replay.history("ct129", "--baseline", BASELINE, fmt="text")
    assert r.returncode == 0 and r.stderr == ""
    flat = " ".join(text.split())
    assert f"--speculative-num-steps 3 → 1: since {stamp(relaunched)}, first seen in snapshot " \
           f"{relaunched.name}; never went away" in flat
    assert f"{stamp(relaunched)} --speculative-num-steps 3 → 1" in flat  # the timeline row


def test_since_filters_changes(replay):
    a, same, b, c, d, e = story(replay)
    doc, _ = replay.history("--since", stamp(d))
    [u] = doc["units"]
    assert doc["since"] == stamp(d)
    assert {x["at"] for x in u["changes"]} == {stamp(d), stamp(e)}
    doc, _ = replay.history("--since", "3650d")  # relative: everything in the last ten years
    assert len(doc["units"][0]["changes"]) > 3
    r = run("history", "--store", replay.store, "--since", "yesterday", cwd=replay.tmp, check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--since 'yesterday'" in r.stderr


def test_hosts_units_and_an_empty_selection(replay):
    replay.snapshot(U70.read_text())
    replay.snapshot(U40.read_text(), host="ct130")
    doc, _ = replay.history("ct130")
    assert [(u["host"], u["snapshots"]) for u in doc["units"]] == [("ct130", 1)]
    doc, _ = replay.history()
    assert sorted(u["host"] for u in doc["units"]) == ["ct129", "ct130"]
    _, r = replay.history("nosuchhost", fmt="text", check=False)  # a typo: exit 2, one line (issue 22)
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1
    assert "nosuchhost" in r.stderr and "ct129, ct130" in r.stderr
    inv = replay.tmp / "inv.yaml"
    inv.write_text(f"hosts:\n  ct129:\n    units: [{UNIT}]\n")
    doc, _ = replay.history("--inventory", inv)
    assert [(u["host"], u["unit"]) for u in doc["units"]] == [("ct129", UNIT)]


def test_corrupt_and_foreign_files_are_skipped_with_a_warning_naming_them(replay):
    # the database's rows replace the files: a row whose document cannot be read is the corrupt file
    import sqlite3
    a, same, b, c, d, e = story(replay)
    with sqlite3.connect(replay.store / "store.db") as db:  # corrupt, in the middle
        db.execute("UPDATE snapshots SET document = ? WHERE name = ?", (b"\0binary", c.name))
    db.close()
    doc, r = replay.history("--baseline", BASELINE)
    assert r.returncode == 0
    assert c.name in r.stderr and any(c.name in p for p in doc["problems"])
    assert all(line.startswith("driftwatch: warning: ") for line in r.stderr.splitlines())
    [u] = doc["units"]
    steps = {f["key"]: f for f in u["findings"]}["speculative_num_steps"]
    assert steps["first_seen"]["snapshot"] == e.name  # c unreadable: d (steps 3) then e
    assert u["readable"] == 4


def test_prune_keeps_the_newest_and_every_baseline_source(replay):
    # every state distinct: two snapshots of one state in one second would be one source (both kept)
    a = replay.snapshot(U70.read_text())
    replay.snapshot(U70.read_text())  # an unchanged run of a
    b = replay.snapshot(with_dropin(U70.read_text(), ENV_DROPIN))
    c = replay.snapshot(with_dropin(U70.read_text(), STEPS_1_DROPIN))
    d = replay.snapshot(with_dropin(U70.read_text(), ENV_DROPIN.replace("INFO", "WARN")))
    e = replay.snapshot(with_dropin(U70.read_text(), STEPS_1_DROPIN.replace("INFO", "WARN")))
    bdir = replay.tmp / "baselines"
    run("baseline", "save", "kept", "--from", b, "--baselines-dir", bdir, cwd=replay.tmp)
    # renamed on save: its content hash differs from the file's, its collected_at still names it
    run("baseline", "save", "renamed", "--from", c, "--host-name", "elsewhere", "--baselines-dir", bdir,
        cwd=replay.tmp)
    dry = run("prune", "--keep", "1", "--store", replay.store, "--baselines-dir", bdir, "-n", cwd=replay.tmp)
    assert [line.split("\t")[1] for line in dry.stdout.splitlines()] == [str(a), str(d)]
    assert [rec.path for rec in SnapshotStore(replay.store).records()] == [a, b, c, d, e]
    r = run("prune", "--keep", "1", "--store", replay.store, "--baselines-dir", bdir, cwd=replay.tmp)
    assert "pruned 2 snapshots" in r.stderr
    left = [rec.path for rec in SnapshotStore(replay.store).records()]
    assert left == [b, c, e]
    assert SnapshotStore(replay.store).runs("ct129", UNIT) == []  # a's extra run went with it
    r = run("prune", "--older-than", "0s", "--store", replay.store, "--baselines-dir", bdir, cwd=replay.tmp)
    assert [rec.path for rec in SnapshotStore(replay.store).records()] == [b, c, e]
    r = run("prune", "--store", replay.store, cwd=replay.tmp, check=False)
    assert r.returncode == 2 and "--keep N and/or --older-than D" in r.stderr


def test_snapshot_keep_n(replay):
    for n in (1, 2, 4):
        replay.snapshot(steps_text(n))
    path = replay.tmp / "last.service"
    path.write_text(steps_text(5))
    run("snapshot", "--unit-file", path, "--host-name", "ct129", "--store", replay.store, "--keep", "2",
        "--baselines-dir", replay.tmp / "none", cwd=replay.tmp)
    records = SnapshotStore(replay.store).records()
    assert len(records) == 2
    assert [r.read().engine.flags["speculative_num_steps"].value for r in records] == [4, 5]


def test_report_says_since_when_per_finding(replay):
    """report --unit-file reads this machine's snapshots (host "local") for each finding's since."""
    first = replay.tmp / "u70.service"
    first.write_text(U70.read_text())
    run("snapshot", "--unit-file", first, "--store", replay.store, cwd=replay.tmp)
    second = replay.tmp / "u40.service"
    second.write_text(U40.read_text())
    r = run("snapshot", "--unit-file", second, "--store", replay.store, cwd=replay.tmp)
    relaunched = Path(r.stdout.split("\t")[3].strip())
    r = run("report", "--baseline", BASELINE, "--unit-file", second, "--store", replay.store, "--format", "json",
            cwd=replay.tmp)
    doc = json.loads(r.stdout)
    findings = {f["key"]: f for f in doc["hosts"][0]["comparison"]["findings"]}
    assert findings["speculative_num_steps"]["since"]["snapshot"] == relaunched.name
    assert findings["speculative_num_steps"]["since"]["at"] == stamp(relaunched)
    r = run("report", "--baseline", BASELINE, "--unit-file", second, "--store", replay.store, cwd=replay.tmp)
    assert f"since {stamp(relaunched)}, first seen in snapshot {relaunched.name}" in " ".join(r.stdout.split())
    # no store: nothing said, nothing fails
    r = run("report", "--baseline", BASELINE, "--unit-file", second, "--store", replay.tmp / "empty",
            "--format", "json", cwd=replay.tmp)
    assert all("since" not in f for f in json.loads(r.stdout)["hosts"][0]["comparison"]["findings"])
