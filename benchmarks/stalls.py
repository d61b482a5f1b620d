"""Inputs that used to stall driftwatch, each timed in a child process (CPU, wall, peak memory).

    python benchmarks/stalls.py                          # this tree
    python benchmarks/stalls.py --before /tmp/dw_before  # and an older tree, side by side
                                                         # (git archive 020ffd0 | tar -x -C /tmp/dw_before)

Every case runs in its own interpreter with a wall-clock timeout (--timeout, default 60 s) and an
address-space limit (--memory, default 2 GiB), so a quadratic parser or an exploding host range in
the old tree ends as "timeout" / "MemoryError" instead of taking the machine down. The figures go
in benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /m"

CASES = {
    "continuation 0.5 MB": ("unit", "'[Service]\\nExecStart=" + PY + "' + ' \\\\\\n --x 1' * 55000"),
    "continuation 1 MB": ("unit", "'[Service]\\nExecStart=" + PY + "' + ' \\\\\\n --x 1' * 110000"),
    "continuation 2 MB": ("unit", "'[Service]\\nExecStart=" + PY + "' + ' \\\\\\n --x 1' * 220000"),
    "repeated flag --tp 1 x10 000 (70 KB)": ("snapshot", "'[Service]\\nExecStart=" + PY + "' + ' --tp 1' * 10000"),
    "300 000 words (1 MB)": ("snapshot", "'[Service]\\nExecStart=" + PY + "' + ' --x 1' * 150000"),
    "YAML alias bomb (snapshot, show --format json)": (
        "bomb", "'x0: &a0 [' + ','.join(['x'] * 9) + ']\\n' + ''.join("
                "f'x{i + 1}: &a{i + 1} [' + ','.join(['*a' + str(i)] * 9) + ']\\n' for i in range(8)) + "
                "'schema: driftwatch.snapshot/v1\\nexec_start: {argv: [/bin/x], expanded_argv: [/bin/x]}\\n"
                "launcher: {engine: none, entry: x, interpreter: null, wrappers: [], engine_argv: []}\\n"
                "runtime: {gpus: *a8}\\n'"),
    "YAML nested 10 000 deep": ("yaml", "'[' * 10000 + ']' * 10000"),
    "Ansible range [1:100000000]": ("inventory", "'[gpus]\\ngpu[1:100000000]\\n'"),
    "Ansible range step 0": ("inventory", "'[gpus]\\ngpu[1:5:0]\\n'"),
    "FIFO in the baselines dir": ("fifo", "''"),
    "400-digit --max-running-requests": ("compare", "'[Service]\\nExecStart=" + PY + " --max-running-requests "
                                         "' + '9' * 400"),
}

CHILD = textwrap.dedent('''
    import os, resource, sys, time, traceback
    sys.path.insert(0, TREE)
    kind, text = KIND, eval(EXPR)
    t0, c0 = time.monotonic(), time.process_time()
    outcome = "ok"
    try:
        if kind == "unit":
            from driftwatch.parse.unitfile import parse_unit_text
            parse_unit_text(text, name="s.service")
        elif kind in ("snapshot", "compare"):
            from driftwatch.collect.raw import RawUnit
            from driftwatch.snapshots.snapshot import build_snapshot
            snap = build_snapshot(RawUnit(host="h", unit="s.service", text=text, source="file"))
            if kind == "compare":
                from driftwatch.snapshots.baseline import Baseline
                from driftwatch.findings.compare import compare
                from driftwatch.report import get_format
                from driftwatch.report.data import comparison_to_dict
                from driftwatch.findings.rulebook import load_rules
                base = build_snapshot(RawUnit(host="h", unit="s.service", text="[Service]\\nExecStart=" + PY, source="file"))
                doc = comparison_to_dict(compare(Baseline(name="b", snapshot=base), snap, load_rules(None)))
                for fmt in ("text", "json"):
                    get_format(fmt).render_comparison(doc)
        elif kind == "bomb":
            path = os.path.join(WORK, "s.yaml")
            open(path, "w").write(text)
            from click.testing import CliRunner
            from driftwatch.cli import cli
            r = CliRunner().invoke(cli, ["show", "--snapshot", path, "--format", "json"])
            if r.exception is not None and not isinstance(r.exception, SystemExit):
                raise r.exception
            if r.exit_code:
                raise RuntimeError("exit %d: %s" % (r.exit_code, (r.stdout + r.stderr)[:60]))
        elif kind == "yaml":
            path = os.path.join(WORK, "b.yaml")
            open(path, "w").write(text)
            from driftwatch.snapshots.baseline import load_baseline
            from pathlib import Path
            load_baseline(path, Path(WORK))
        elif kind == "inventory":
            path = os.path.join(WORK, "hosts.ini")
            open(path, "w").write(text)
            from driftwatch.collect.inventory import load_inventory
            load_inventory(path)
        elif kind == "fifo":
            d = os.path.join(WORK, "baselines")
            os.makedirs(d, exist_ok=True)
            os.mkfifo(os.path.join(d, "stuck.yaml"))
            from click.testing import CliRunner
            from driftwatch.cli import cli
            r = CliRunner().invoke(cli, ["baseline", "list", "--baselines-dir", d])
            if r.exception is not None and not isinstance(r.exception, SystemExit):
                raise r.exception
    except MemoryError:
        outcome = "MemoryError"
    except Exception as exc:
        from driftwatch.errors import DriftwatchError
        outcome = ("error: " + str(exc)[:70]) if isinstance(exc, (DriftwatchError, RuntimeError)) \
            else f"crash: {type(exc).__name__}"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(repr((outcome, time.process_time() - c0, time.monotonic() - t0, peak)))
''')


def run(tree: Path, name: str, timeout: float, memory: int) -> str:
    kind, expr = CASES[name]
    with tempfile.TemporaryDirectory(prefix="dw-stall-") as work:
        code = (f"TREE={str(tree)!r}\nKIND={kind!r}\nEXPR={expr!r}\nWORK={work!r}\nPY={PY!r}\n" + CHILD)

        def limit():
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

        try:
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                                 preexec_fn=limit, cwd=work)
        except subprocess.TimeoutExpired:
            return f"timeout (> {timeout:g} s)"
    lines = [line for line in out.stdout.splitlines() if line.startswith("(")]
    if not lines:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return f"died: {tail[:60]}"
    outcome, cpu, wall, peak = eval(lines[-1])  # noqa: S307 - our own child's repr
    return f"{cpu:.2f} s CPU, {peak} MiB" + ("" if outcome == "ok" else f" ({outcome})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="an older driftwatch tree to time beside this one")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--memory", type=int, default=2 << 30, help="address-space limit per case (bytes)")
    parser.add_argument("-k", help="only cases whose name contains this")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    for name in CASES:
        if args.k and args.k not in name:
            continue
        row = {"case": name, "now": run(ROOT, name, args.timeout, args.memory)}
        if args.before:
            row["before"] = run(args.before, name, args.timeout, args.memory)
        rows.append(row)
        if not args.json:
            print(f"{name:40s} " + (f"before: {row['before']:45s} " if args.before else "") + f"now: {row['now']}",
                  flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
