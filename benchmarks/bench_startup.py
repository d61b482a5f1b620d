#!/usr/bin/env python3
"""Benchmark: start-up cost of the CLI (issue 33, item 4: imports at the top, lazy only for what is expensive).

Each run is a fresh interpreter; the methods alternate so a loaded machine slows all of them alike. Medians
(and min/max) of --repeat runs, CPU (user + sys of the child, from wait4) and wall:

    compare   driftwatch compare --baseline 70toks --unit-file examples/sglang-qwen-40toks.service
    help      driftwatch --help
    python    python -c pass   (the interpreter alone)

CPU is the figure to quote on a shared machine: wall moves with every other process. --tree DIR runs
against another checkout (`git archive <commit> | tar -x -C /tmp/dw_before`) for before/after figures, and
--vs DIR runs both trees interleaved. --importtime prints the compare's own-module and third-party
imports slowest first (`python -X importtime`, cumulative microseconds), and whether the expensive modules
(paramiko, psycopg, sqlite3, deepdiff, smtplib, detect_secrets) were imported at all.

    python benchmarks/bench_startup.py [--repeat 21] [--tree DIR] [--vs DIR] [--importtime] [--json]
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
CLI = "import sys; sys.argv[0] = 'driftwatch'; from driftwatch.cli import main; main()"
COMMANDS = {
    "compare": ["compare", "--baseline", "70toks", "--unit-file", "examples/sglang-qwen-40toks.service"],
    "help": ["--help"],
}
EXPENSIVE = ("paramiko", "psycopg", "sqlite3", "deepdiff", "smtplib", "detect_secrets", "tabulate", "yaml")


def _env(tree: str) -> dict:
    """The tree first on the path; bytecode cached as for an installed user (no PYTHONDONTWRITEBYTECODE:
    compiling every module on every run would measure the compiler)."""
    env = dict(os.environ, PYTHONPATH=tree)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _argv(method: str) -> list[str]:
    if method == "python":
        return [sys.executable, "-c", "pass"]
    return [sys.executable, "-c", CLI, *COMMANDS[method]]


def child(argv: list[str], tree: str) -> tuple[float, float]:
    """(wall s, CPU s) of one run; a failure (exit other than 0 or 1: 1 is drift found) stops the benchmark."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=tree, env=_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise RuntimeError(f"{argv} in {tree} failed ({code}): {err.decode(errors='replace')[-1500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def latency(trees: dict[str, str], repeat: int) -> dict[str, dict[str, dict[str, float]]]:
    """{tree label: {method: {cpu, wall, cpu_min, cpu_max}}}, every (tree, method) pair interleaved."""
    methods = ["compare", "help", "python"]
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {(t, m): [] for t in trees for m in methods}
    for tree in trees.values():  # warm the page cache and the .pyc files
        for method in methods:
            child(_argv(method), tree)
    for _ in range(repeat):
        for label, tree in trees.items():
            for method in methods:
                runs[(label, method)].append(child(_argv(method), tree))
    out: dict[str, dict[str, dict[str, float]]] = {}
    for (label, method), r in runs.items():
        cpus = [c for _, c in r]
        out.setdefault(label, {})[method] = {"cpu": statistics.median(cpus), "cpu_min": min(cpus),
                                             "cpu_max": max(cpus), "wall": statistics.median(w for w, _ in r)}
    return out


def importtime(tree: str, top: int = 20) -> tuple[list[tuple[int, str]], list[str]]:
    """(slowest top-level-ish imports of one compare: (cumulative µs, module)), expensive modules loaded)."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-c", CLI, *COMMANDS["compare"]], cwd=tree,
                         env=_env(tree), capture_output=True, text=True, timeout=120)
    rows = []
    for line in run.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|")
        rows.append((int(cumulative), name.rstrip()))
    loaded = {name.strip() for _, name in rows}
    expensive = [m for m in EXPENSIVE if m in loaded]
    rows = [(us, name) for us, name in rows if len(name) - len(name.lstrip()) <= 6]  # two levels deep
    return sorted(rows, reverse=True)[:top], expensive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21, help="runs of each method (default 21)")
    parser.add_argument("--tree", default=REPO, help="checkout to measure (default: this one)")
    parser.add_argument("--vs", metavar="DIR", help="a second checkout, measured interleaved with --tree")
    parser.add_argument("--importtime", action="store_true", help="the compare's slowest imports")
    parser.add_argument("--json", action="store_true", help="figures as one JSON document")
    args = parser.parse_args(argv)
    trees = {"tree": os.path.abspath(args.tree)}
    if args.vs:
        trees["vs"] = os.path.abspath(args.vs)
    for tree in trees.values():
        if not os.path.isdir(os.path.join(tree, "driftwatch")):
            print(f"bench_startup: {tree}: not a driftwatch checkout (no driftwatch/ folder)", file=sys.stderr)
            return 2
    figures = latency(trees, args.repeat)
    if args.json:
        print(json.dumps({"trees": trees, "repeat": args.repeat, "figures": figures}, indent=2))
    else:
        print(f"start-up, median of {args.repeat} runs (CPU = user + sys; min-max in brackets)")
        for label, methods in figures.items():
            print(f"  {label}: {trees[label]}")
            for method, f in methods.items():
                print(f"    {method:8} cpu {f['cpu'] * 1000:7.1f} ms [{f['cpu_min'] * 1000:.0f}-{f['cpu_max'] * 1000:.0f}]"
                      f"   wall {f['wall'] * 1000:7.1f} ms")
        if "vs" in figures:
            for method in ("compare", "help"):
                ratio = figures["tree"][method]["cpu"] / figures["vs"][method]["cpu"]
                print(f"  {method}: tree/vs CPU ratio {ratio:.3f}")
    if args.importtime:
        for label, tree in trees.items():
            rows, expensive = importtime(tree)
            print(f"importtime of compare ({label}); expensive modules loaded: {', '.join(expensive) or 'none'}")
            for us, name in rows:
                print(f"  {us / 1000:8.1f} ms {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
