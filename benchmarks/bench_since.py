"""What `report`'s "since" costs on a unit with many snapshots: the CPU of one `driftwatch report
--unit-file` against a store holding `--snapshots` snapshots of that unit, before (`--before`: the
walk that judges every snapshot back to the start of the finding's run) and after (this tree: the
kept changes say which snapshots to judge).

    python benchmarks/bench_since.py --snapshots 300 [--postgres] [--repeat 3]

The store is built in a temporary directory through the store's own `save` (changes kept as
`snapshot` keeps them): a snapshot a day of the seed SGLang unit, its speculative steps going
1 -> 2 -> 4 -> 1 … (never the baseline's 3, so that finding's run spans every snapshot: the walk's
worst case) and --max-running-requests changing every 7th day. The unit checked is the newest
state. Each figure is the CPU (user + sys, `wait4`) of a fresh process, median of `--repeat`, on a
fresh copy of the store (a report saves its own read); the floor is `python -c "import click, yaml"`.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "store"))
UNIT = "sglang-qwen.service"
SEED = ROOT / "examples" / "sglang-qwen-70toks.service"
START = dt.datetime(2026, 1, 1, 3, 0, tzinfo=dt.timezone.utc)


def state_text(day: int) -> str:
    steps = (1, 2, 4)[day % 3]
    requests = 16 if (day // 7) % 2 == 0 else 32
    return SEED.read_text().replace("--speculative-num-steps 3", f"--speculative-num-steps {steps}").replace(
        "--max-running-requests 16", f"--max-running-requests {requests}")


def fill(locations: list[str], work: Path, count: int) -> Path:
    """`count` snapshots of the unit into each store; the path of the newest state's unit file."""
    from driftwatch.diff.changes import changes_between
    from driftwatch.run.reading import snapshot_from_unit_file
    from driftwatch.snapshots.store import SnapshotStore
    stores = [SnapshotStore(loc, changes=changes_between) for loc in locations]
    states: dict[str, object] = {}
    unit = work / "unit" / UNIT
    unit.parent.mkdir(parents=True, exist_ok=True)
    for day in range(count):
        text = state_text(day)
        if text not in states:
            unit.write_text(text)
            states[text] = snapshot_from_unit_file(str(unit))
        stamp = (START + dt.timedelta(days=day)).strftime("%Y-%m-%dT%H:%M:%SZ")
        for store in stores:
            store.save(replace(states[text], collected_at=stamp))
    unit.write_text(state_text(count - 1))
    for store in stores:
        store.close()
    return unit


def cpu(argv: list[str], env: dict) -> tuple[float, list]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode(errors="replace")
    proc.stdout.close()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) not in (0, 1) or '"since"' not in out:
        raise SystemExit(f"{' '.join(argv[-12:])}: exit {status}: {err[-400:]}")
    import json
    since = [(h.get("host"), f.get("key"), f.get("since")) for h in json.loads(out)["hosts"]
             for f in (h.get("comparison") or {}).get("findings") or []]
    return usage.ru_utime + usage.ru_stime, since


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snapshots", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", default="a62545d", help="the commit measured as 'before' (the walk)")
    ap.add_argument("--postgres", action="store_true", help="also a throw-away PostgreSQL server")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dw-since-"))
    server = None
    try:
        master = work / "sqlite-master"
        locations = [str(master)]
        if args.postgres:
            import pg_server
            server, reason = pg_server.start()
            if server is None:
                print(f"PostgreSQL skipped: {reason}", file=sys.stderr)
            else:
                locations.append(server.database("since"))
        unit = fill(locations, work, args.snapshots)
        before = work / "before"
        before.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "driftwatch", "rules"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        py = sys.executable
        site = sysconfig.get_paths()["purelib"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}
        env["HOME"] = str(work)
        trees = {"before": [py, "-S", "-c", f"import sys; sys.path[:0] = [{str(before)!r}, {site!r}]; "
                            "sys.argv[0] = 'driftwatch'; from driftwatch.cli import main; main()"],
                 "after": [str(Path(py).with_name("driftwatch"))]}
        question = ["report", "--unit-file", str(unit), "--baseline", "70toks", "--baselines-dir",
                    str(ROOT / "baselines"), "--format", "json", "--color", "never"]
        floor = statistics.median(cpu_plain([py, "-c", "import click, yaml"], env) for _ in range(args.repeat))
        print(f"{args.snapshots} snapshots of one unit; floor `python -c 'import click, yaml'`: {floor:.2f} s CPU\n")
        print("| store | before (walk) | after (kept changes) | same \"since\" |\n|---|---|---|---|")
        for name, location in zip(("SQLite", "PostgreSQL"), locations, strict=False):
            row, answers = [name], []
            for _tree, argv in trees.items():
                times = []
                for _ in range(args.repeat):
                    if name == "SQLite":
                        copy = work / "sqlite-run"
                        shutil.rmtree(copy, ignore_errors=True)
                        shutil.copytree(master, copy)
                        where = str(copy)
                    else:
                        where = location
                    took, since = cpu(argv + question + ["--store", where], env)
                    times.append(took)
                answers.append(since)
                t = statistics.median(times)
                row.append(f"{t:.2f} s ({t / floor:.1f}×)")
            row.append("yes" if answers[0] == answers[1] else f"NO: {answers}")
            print("| " + " | ".join(row) + " |", flush=True)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


def cpu_plain(argv: list[str], env: dict) -> float:
    proc = subprocess.Popen(argv, env=env)
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
