#!/usr/bin/env python3
"""Benchmark: offline `compare` latency against the import floor of its dependencies, and parse + type
throughput (issue 12).

1. Latency. Each run is a fresh interpreter, alternating between methods so a loaded machine slows all
   of them alike; medians of --repeat runs, wall and CPU (user + sys, from wait4):

     compare   driftwatch compare --baseline 70toks --unit-file examples/sglang-qwen-40toks.service
     floor     python -c "import click, yaml, deepdiff, tabulate"   (what compare cannot avoid)
     python    python -c pass                                       (the interpreter alone)

   and whether paramiko was imported by the compare (it must not be).
2. Throughput: every shipped example unit and every test-fixture unit that builds a snapshot, parsed and
   typed (`snapshot_from_unit_file`) in one process, the pass repeated until --seconds of CPU; units per
   CPU-second, the first (cold: catalogs loaded, parsers built) pass reported apart.

--tree DIR runs both against another checkout (e.g. `git archive 5bf7efc | tar -x -C /tmp/dw_before`)
for before/after figures; `--importtime` prints the compare's slowest imports (`python -X importtime`).

    python benchmarks/bench_compare.py [--repeat 7] [--tree DIR] [--importtime]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
COMPARE = ["compare", "--baseline", "70toks", "--unit-file", "examples/sglang-qwen-40toks.service"]
FLOOR = "import click, yaml, deepdiff, tabulate"
CLI = ("import sys; sys.argv[0] = 'driftwatch'; from driftwatch.cli import main; "
       "import atexit; atexit.register(lambda: print('paramiko' in sys.modules, file=sys.stderr)); main()")


def _env(tree: str) -> dict:
    """The tree first on the path; bytecode cached as for any installed user (PYTHONDONTWRITEBYTECODE
    would compile every module on every run and measure the compiler)."""
    env = dict(os.environ, PYTHONPATH=tree)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def child(argv: list[str], tree: str) -> tuple[float, float, str]:
    """(wall s, CPU s of the child and its children, stderr)."""
    env = _env(tree)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):  # compare exits 1: drift found
        raise RuntimeError(f"{argv} failed ({proc.returncode}): {err.decode()[-1500:]}")
    return wall, usage.ru_utime + usage.ru_stime, err.decode()


def latency(tree: str, repeat: int) -> dict:
    py = sys.executable
    methods = {"compare": [py, "-c", CLI, *COMPARE], "floor": [py, "-c", FLOOR], "python": [py, "-c", "pass"]}
    runs: dict[str, list[tuple[float, float]]] = {m: [] for m in methods}
    paramiko = set()
    child(methods["compare"], tree)  # warm the page cache and .pyc files
    for _ in range(repeat):
        for name, argv in methods.items():
            wall, cpu, err = child(argv, tree)
            runs[name].append((wall, cpu))
            if name == "compare":
                paramiko.add(err.strip().splitlines()[-1] if err.strip() else "?")
    out = {name: {"wall": statistics.median(w for w, _ in r), "cpu": statistics.median(c for _, c in r)}
           for name, r in runs.items()}
    out["paramiko_imported"] = ",".join(sorted(paramiko))
    return out


def importtime(tree: str, top: int = 25) -> list[tuple[int, str]]:
    """The slowest imports of a compare by cumulative time (µs), from -X importtime."""
    _, _, err = child([sys.executable, "-X", "importtime", "-c", CLI, *COMPARE], tree)
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line:
            parts = [p.strip() for p in line[len("import time:"):].split("|")]
            if parts[1].isdigit():
                rows.append((int(parts[1]), parts[2]))
    return sorted(rows, reverse=True)[:top]


THROUGHPUT = r"""
import glob, json, os, sys, time
from driftwatch.errors import DriftwatchError
from driftwatch.run.reading import snapshot_from_unit_file
units = sorted(set(glob.glob('examples/**/*.service', recursive=True) + glob.glob('tests/**/*.service', recursive=True)))
usable, t0 = [], time.process_time()
for u in units:  # the cold pass: catalogs loaded, parsers built
    try:
        snapshot_from_unit_file(u, host='bench')
        usable.append(u)
    except DriftwatchError:
        pass
cold = time.process_time() - t0
n, t0 = 0, time.process_time()
while time.process_time() - t0 < float(sys.argv[1]):
    for u in usable:
        snapshot_from_unit_file(u, host='bench')
    n += len(usable)
print(json.dumps({"units": len(usable), "refused": len(units) - len(usable), "cold_s": cold,
                  "per_cpu_s": n / (time.process_time() - t0)}))
"""


def throughput(tree: str, seconds: float) -> dict:
    env = _env(tree)
    out = subprocess.run([sys.executable, "-c", THROUGHPUT, str(seconds)], cwd=tree, env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=3.0, help="CPU seconds of the throughput loop")
    ap.add_argument("--tree", default=REPO, help="the checkout to measure (default: this one)")
    ap.add_argument("--importtime", action="store_true")
    args = ap.parse_args()
    tree = os.path.abspath(args.tree)
    lat = latency(tree, args.repeat)
    thr = throughput(tree, args.seconds)
    c, f, _p = lat["compare"], lat["floor"], lat["python"]
    print(f"tree {tree}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; medians of {args.repeat}")
    print("| what | wall | CPU |\n|---|---|---|")
    for name in ("compare", "floor", "python"):
        print(f"| {name} | {lat[name]['wall'] * 1000:.0f} ms | {lat[name]['cpu'] * 1000:.0f} ms |")
    print(f"- compare / import floor: {c['wall'] / f['wall']:.2f}x wall, {c['cpu'] / f['cpu']:.2f}x CPU "
          f"(target <= 1.5x); paramiko imported: {lat['paramiko_imported']}")
    print(f"- parse + type: {thr['per_cpu_s']:.0f} units per CPU-second over {thr['units']} units "
          f"({thr['refused']} refused by systemd's rules, not counted); cold first pass {thr['cold_s'] * 1000:.0f} ms "
          f"(target >= 1000/s)")
    if args.importtime:
        print("\nslowest imports of a compare (cumulative):")
        for us, name in importtime(tree):
            print(f"  {us / 1000:7.1f} ms  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
