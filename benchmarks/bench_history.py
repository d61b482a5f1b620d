"""What history questions cost on a fleet-sized store: today's YAML files vs the database store.

    python benchmarks/bench_history.py [--hosts 100] [--days 100] [--postgres] [--keep DIR]
        [--before REV] [--skip-today-fleet]

The generator (`generate`, committed so the figures can be reproduced): `--hosts` hosts, every third
one with two units, a snapshot a day for `--days` days whose state changes every day (the
speculative steps cycle 1..4, and every 10th day an environment variable moves), as a live collector
records it (`bench_store.live_snapshot`): with the defaults 100 hosts × 1.33 units × 100 days ≈
13 300 snapshots, with `--hosts 113` 15 000. The store is written in today's YAML-file format
(`FileStore`), then imported with `driftwatch store import` into SQLite (and PostgreSQL with
`--postgres`: a throw-away server, tests/store/pg_server.py).

Each question is a fresh `driftwatch` process; the figure is its CPU time (user + system, from
`wait4`), the median of `--repeat` runs (one for the whole-fleet history); "today" runs the code of
`--before` (default: the commit before the database store, unpacked with `git archive`) against the
file store. `--against REV` also runs REV's code on the same database stores, its runs interleaved
with this tree's (both launched the same way), so a change is measured side by side. The floor is
`python -c "import click, yaml"`, measured in the same run; with PostgreSQL also a PostgreSQL
client's floor: that plus `import psycopg`, a connection and one trivial query (what any psycopg
client pays before it asks anything).

PostgreSQL gets the SQLite store's rows copied over (`copy_to_postgres`: the same snapshots, runs and
kept changes, ids included), not a second import: importing means reading and diffing 15 000 YAML
files, minutes the questions do not measure. `--scale K` also measures a SQLite store K times as big
(`scale_store`: the hosts copied K-1 times under new names, with their runs and kept changes), so a
one-host question can be seen not to grow with the store; `--scale-days K` a store K times as long
(`scale_store_in_time`: the same units with K times the past), so `--since` can be seen not to grow
with it.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_store import live_snapshot  # noqa: E402

from driftwatch.fileio import dump_yaml  # noqa: E402
from driftwatch.snapshots.snapshot import snapshot_to_dict  # noqa: E402
from driftwatch.timestamps import file_stamp, format_utc  # noqa: E402

START = dt.datetime(2026, 6, 1, 3, 0, tzinfo=dt.timezone.utc)
UNITS = ("sglang-qwen.service", "sglang-llama.service")


def generate(folder: Path, hosts: int, days: int) -> int:
    """Today's file store: one snapshot a day per host/unit, each a new state (HOST/UNIT/STAMP-00.yaml
    and latest.yaml, as `FileStore.save` names them; written directly, without its fsyncs, to build
    15 000 files in under a minute). Returns the count."""
    variants = {}
    for steps in (1, 2, 3, 4):
        for nccl in (0, 1):
            snap = live_snapshot(format_utc(START), 70.0 - steps, steps=steps)
            if nccl:
                snap = replace(snap, environment=dict(snap.environment, NCCL_DEBUG="INFO"))
            variants[(steps, nccl)] = snapshot_to_dict(snap)
    count = 0
    for h in range(hosts):
        host = f"gpu{h:03d}"
        for unit in UNITS[: 2 if h % 3 == 0 else 1]:
            target = folder / host / unit
            target.mkdir(parents=True, exist_ok=True)
            for d in range(days):
                at = START + dt.timedelta(days=d, seconds=h)
                data = dict(variants[(1 + (d + h) % 4, (d // 10) % 2)], host=host, unit=unit,
                            collected_at=format_utc(at))
                text = dump_yaml(data)
                (target / f"{file_stamp(at)}-00.yaml").write_text(text)
                count += 1
            (target / "latest.yaml").write_text(text)
    return count


def cpu_once(argv: list[str], env: dict) -> float:
    """CPU seconds (user + sys) of one run of the child process `argv`."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: {err[-400:]}")
    return usage.ru_utime + usage.ru_stime


def cpu(argv: list[str], env: dict, repeat: int) -> float:
    """Median CPU seconds (user + sys) of the child process `argv`."""
    return statistics.median(cpu_once(argv, env) for _ in range(repeat))


def cpu_interleaved(argvs: list[list[str]], env: dict, repeat: int) -> list[float]:
    """Median CPU seconds of each of `argvs`, run in turns (a, b, a, b, …): a change in the
    machine's load falls on both."""
    times: list[list[float]] = [[] for _ in argvs]
    for _ in range(repeat):
        for argv, got in zip(argvs, times, strict=False):
            got.append(cpu_once(argv, env))
    return [statistics.median(got) for got in times]


def pg_floor_argv(py: str, url: str) -> list[str]:
    """A PostgreSQL client's floor: python, click and yaml, `import psycopg`, a connection (as the
    store opens it) and one trivial query."""
    return [py, "-c", "import sys, click, yaml, psycopg; c = psycopg.connect(sys.argv[1], autocommit=True, "
            "connect_timeout=10); c.execute('SELECT 1').fetchall(); c.close()", url]


def tree_argv(py: str, tree: Path) -> list[str]:
    """`driftwatch` from the package in `tree` (first on the path; site kept, as the console script has it)."""
    return [py, "-c", f"import sys; sys.path.insert(0, {str(tree)!r}); sys.argv[0] = 'driftwatch'; "
            "from driftwatch.cli import main; main()"]


def copy_to_postgres(sqlite_db: Path, url: str) -> None:
    """The SQLite store's rows into the (empty) PostgreSQL store at `url`, ids kept."""
    import sqlite3

    import psycopg

    from driftwatch.snapshots.store_sql import DatabaseStore
    DatabaseStore(url).schema_version()  # creates the schema
    src = sqlite3.connect(str(sqlite_db))
    tables = {"snapshots": "id, host, unit, collected_at, seq, name, state_hash, content_hash, source_hash, document, "
                           "changes_from",
              "runs": "snapshot_id, at", "changes": "snapshot_id, ord, key, body"}
    with psycopg.connect(url) as dst:
        for table, columns in tables.items():
            with dst.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in src.execute(f"SELECT {columns} FROM {table}"):
                    copy.write_row(row)
        dst.execute("SELECT setval(pg_get_serial_sequence('snapshots', 'id'), (SELECT MAX(id) FROM snapshots))")
        dst.execute("ANALYZE")
    src.close()


def scale_store(sqlite_db: Path, target: Path, factor: int) -> int:
    """A copy of the SQLite store with every host copied `factor - 1` more times (HOST-k1, …), with
    their runs and kept changes; the number of snapshot rows."""
    return _copied(sqlite_db, target, factor, lambda k: (f"-k{k}", 0))


def scale_store_in_time(sqlite_db: Path, target: Path, factor: int, days: int) -> int:
    """A copy of the SQLite store `factor` times as long: every unit's `days` of history copied
    `factor - 1` more times, each copy `days` earlier (names and run times moved with it), so the
    same units have 10x the past and "the last 7 days" the same answer. The copies' first rows
    start fresh chains (no kept pair across copies, as after a pruned gap). The number of snapshot rows."""
    return _copied(sqlite_db, target, factor, lambda k: ("", k * days * 86400))


def _copied(sqlite_db: Path, target: Path, factor: int, copy_k) -> int:
    """The store copied to `target` with `factor - 1` more copies of its rows, copy k's hosts
    suffixed and its times moved back as `copy_k(k)` = (host suffix, seconds back) says."""
    import sqlite3
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(sqlite_db, target)
    db = sqlite3.connect(str(target))
    top = db.execute("SELECT MAX(id) FROM snapshots").fetchone()[0]
    for k in range(1, factor):
        shift, (suffix, back) = k * top, copy_k(k)
        db.execute("INSERT INTO snapshots (id, host, unit, collected_at, seq, name, state_hash, content_hash, "
                   "source_hash, document, changes_from) SELECT id + ?, host || ?, unit, collected_at - ?, seq, "
                   "CASE WHEN ? = 0 THEN name ELSE strftime('%Y%m%dT%H%M%SZ', collected_at - ?, 'unixepoch') || "
                   "printf('-%02d.yaml', seq) END, state_hash, content_hash, source_hash, document, "
                   "changes_from + ? FROM snapshots WHERE id <= ?", (shift, suffix, back, back, back, shift, top))
        db.execute("INSERT INTO runs (snapshot_id, at) SELECT snapshot_id + ?, at - ? FROM runs WHERE snapshot_id <= ?",
                   (shift, back, top))
        db.execute("INSERT INTO changes (snapshot_id, ord, key, body) SELECT snapshot_id + ?, ord, key, body "
                   "FROM changes WHERE snapshot_id <= ?", (shift, top))
    db.commit()
    db.execute("ANALYZE")
    count = db.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0]
    db.close()
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=113)
    ap.add_argument("--days", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--postgres", action="store_true", help="also a throw-away PostgreSQL server")
    ap.add_argument("--keep", help="build the stores here and keep them (reused when present)")
    ap.add_argument("--before", default="932a02b", help="revision whose code answers for 'today'")
    ap.add_argument("--skip-today-fleet", action="store_true",
                    help="do not time today's whole-fleet history (minutes of CPU)")
    ap.add_argument("--scale", type=int, default=0, help="also a SQLite store this many times as big (by hosts)")
    ap.add_argument("--scale-days", type=int, default=0,
                    help="also a SQLite store this many times as long (the same units, more past)")
    ap.add_argument("--skip-today", action="store_true", help="do not time today's code at all")
    ap.add_argument("--against", help="also run this revision's code on the database stores, side by side")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="dw-bench-history-"))
    work.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    dw = [py, "-m", "driftwatch.cli"] if not (Path(py).parent / "driftwatch").exists() else [str(Path(py).parent / "driftwatch")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}
    env["HOME"] = str(work / "home")
    # compiled once, like an installed package (this machine sets PYTHONDONTWRITEBYTECODE)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pyc")
    server = None
    try:
        files = work / "files"
        if not files.exists():
            t0 = time.perf_counter()
            n = generate(files, args.hosts, args.days)
            print(f"generated {n} snapshots in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        n = sum(1 for _ in files.glob("*/*/*-*.yaml"))
        size = sum(p.stat().st_size for p in files.glob("*/*/*-*.yaml"))
        sqlite_dir = work / "sqlite"
        if not (sqlite_dir / "store.db").exists():
            t0 = time.perf_counter()
            subprocess.run(dw + ["store", "import", str(files), "--store", str(sqlite_dir)], check=True, env=env)
            print(f"imported into SQLite in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        stores = {"SQLite": str(sqlite_dir)}
        if args.postgres:
            sys.path.insert(0, str(ROOT / "tests" / "store"))
            import pg_server
            server, reason = pg_server.start()
            if server is None:
                print(f"PostgreSQL skipped: {reason}", file=sys.stderr)
            else:
                url = server.database("bench")
                t0 = time.perf_counter()
                copy_to_postgres(sqlite_dir / "store.db", url)
                print(f"copied into PostgreSQL in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
                stores["PostgreSQL"] = url
        if args.scale > 1:
            big = work / f"sqlite-x{args.scale}"
            if not (big / "store.db").exists():
                rows = scale_store(sqlite_dir / "store.db", big / "store.db", args.scale)
                print(f"scaled SQLite store: {rows} snapshots", file=sys.stderr)
            stores[f"SQLite ×{args.scale}"] = str(big)
        if args.scale_days > 1:
            long = work / f"sqlite-x{args.scale_days}-days"
            if not (long / "store.db").exists():
                rows = scale_store_in_time(sqlite_dir / "store.db", long / "store.db", args.scale_days, args.days)
                print(f"SQLite store {args.scale_days}x as long: {rows} snapshots", file=sys.stderr)
            stores[f"SQLite ×{args.scale_days} days"] = str(long)
        before = work / "before"
        if not before.exists():
            before.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "driftwatch"],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        # no site: an editable install's import hook would win over the old code; site-packages by hand, after it
        import sysconfig
        site = sysconfig.get_paths()["purelib"]
        today_env = dict(env)
        today = [py, "-S", "-c", f"import sys; sys.path[:0] = [{str(before)!r}, {site!r}]; "
                 "sys.argv[0] = 'driftwatch'; from driftwatch.cli import main; main()"]
        cut = format_utc(START + dt.timedelta(days=args.days - 7))
        empty = work / "no-baselines"
        empty.mkdir(exist_ok=True)
        # (label, arguments, whole fleet: timed once, the today column skipped by --skip-today-fleet)
        questions = [
            ("`history` of one host", ["history", "gpu000", "--format", "json"], False),
            ("`history --since` the last 7 days, whole fleet", ["history", "--since", cut, "--format", "json"], False),
            ("`prune --keep 1000` (deletes nothing)", ["prune", "--keep", "1000", "--baselines-dir", str(empty)], False),
            ("`history`, whole fleet", ["history", "--format", "json"], True),
        ]
        runners = {"after": dw}
        if args.against:
            rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.against], capture_output=True,
                                 text=True, check=True).stdout.strip()
            tree = work / f"rev-{rev}"
            if not tree.exists():
                tree.mkdir()
                archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "driftwatch"],
                                         capture_output=True, check=True).stdout
                subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
            runners = {f"{args.against} ({rev})": tree_argv(py, tree), "after": tree_argv(py, ROOT)}
        for warm in [today + ["--help"]] + [r + ["--help"] for r in runners.values()]:
            subprocess.run(warm, env=env, stdout=subprocess.DEVNULL, check=True)
        trees = [ROOT / "driftwatch", before / "driftwatch"] + ([tree / "driftwatch"] if args.against else [])
        subprocess.run([py, "-m", "compileall", "-q"] + [str(t) for t in trees], env=env, check=True,
                       stdout=subprocess.DEVNULL)  # every module compiled before any is timed
        floor = cpu([py, "-c", "import click, yaml"], env, args.repeat)
        pg_floor = cpu(pg_floor_argv(py, stores["PostgreSQL"]), env, args.repeat) if "PostgreSQL" in stores else None
        head = ["question", "today (YAML files)"] + [f"{who}: {name}" for name in stores for who in runners]
        print(f"{n} snapshots ({args.hosts} hosts, {args.days} days), {size / n / 1024:.2f} KB each as YAML; "
              f"floor `python -c 'import click, yaml'`: {floor:.2f} s CPU"
              + (f"; PostgreSQL client floor (+ import psycopg, connect, SELECT 1): {pg_floor:.2f} s CPU"
                 if pg_floor is not None else "") + "\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for label, argv, fleet in questions:
            row = [label]
            if args.skip_today or (fleet and args.skip_today_fleet):
                row.append("(not run)")
            else:
                t = cpu(today + argv + ["--store", str(files)], today_env, 1)
                row.append(f"{t:.2f} s ({t / floor:.1f}×)")
            for name, location in stores.items():
                times = cpu_interleaved([r + argv + ["--store", location] for r in runners.values()], env,
                                        1 if fleet else args.repeat)
                for t in times:
                    ratio = f"{t / floor:.1f}×" + (f"; {t / pg_floor:.1f}× PG floor" if name == "PostgreSQL" else "")
                    row.append(f"{t:.2f} s ({ratio})")
            print("| " + " | ".join(row) + " |", flush=True)
    finally:
        if server is not None:
            server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
