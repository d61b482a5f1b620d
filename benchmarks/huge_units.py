"""CPU of the grammar fuzzer's operations on the huge units that were slow under 100 KB (issue 21).

    python benchmarks/huge_units.py                      # this tree
    python benchmarks/huge_units.py --tree /tmp/before   # another checkout (git archive REV | tar -x -C DIR)

Each input runs through fuzz.py's `through_everything` (show text/JSON, compare both ways in four
formats) with and without the YAML round trip, each time in a fresh process after a warm-up on a small
unit: catalogs loaded and parsers built, nothing of the input itself remembered. CPU seconds
(time.process_time), so the figure is the input's cost, not the machine's load (which still slows it).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HEAD = "/usr/bin/python3 -m sglang.launch_server --model-path /m"
INPUTS = {
    "4 000 unknown flags": f"[Service]\nExecStart={HEAD} " + " ".join(f"--unknown-flag-{i} {i}" for i in range(4000)) + "\n",
    "4 000 continued flags": f"[Service]\nExecStart={HEAD} " + " \\\n  ".join(f"--x{i} {i}" for i in range(4000)) + "\n",
    "--tp 1 x 4 000": f"[Service]\nExecStart={HEAD} " + " --tp 1" * 4000 + "\n",
    "--tp 1 x 8 000": f"[Service]\nExecStart={HEAD} " + " --tp 1" * 8000 + "\n",
    "1 000-key JSON value": "[Service]\nExecStart=/usr/bin/vllm serve /m --speculative-config '"
                            + json.dumps({f"k{i}": i for i in range(1000)}) + "'\n",
}


def one(tree: str, name: str, roundtrip: bool) -> float:
    """In this process: warm up, then the CPU seconds of one input."""
    sys.path[:0] = [tree, str(Path(tree) / "benchmarks")]
    import fuzz

    from driftwatch.collect.raw import RawUnit
    from driftwatch.findings.rulebook import load_rules
    from driftwatch.snapshots.snapshot import build_snapshot
    try:  # the CLI's garbage-collector settings, in a tree that has them
        from driftwatch.gctune import fewer_collections
        fewer_collections()
    except ImportError:
        pass
    rules = load_rules(None)
    base = fuzz.Baseline(name="seed", snapshot=build_snapshot(RawUnit(
        host="b", unit="sglang-qwen.service", source="systemctl cat",
        text=(Path(tree) / "examples/sglang-qwen-70toks.service").read_text())), metrics={"throughput": 70.0})
    fuzz.ROUNDTRIP["every"] = 1 if roundtrip else 10 ** 9
    for warm in ("[Service]\nExecStart=/usr/bin/vllm serve /w --tp 2 --warm-x 1\n",
                 f"[Service]\nExecStart={HEAD}w --tp 2 --warm-x 1\n"):
        fuzz.through_everything(build_snapshot(RawUnit(host="w", unit="w.service", text=warm, source="file")),
                                base, rules)
    fuzz.ROUNDTRIP["n"] = 0
    start = time.process_time()
    fuzz.through_everything(build_snapshot(RawUnit(host="f", unit="h.service", text=INPUTS[name], source="file")),
                            base, rules)
    return time.process_time() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", default=str(Path(__file__).resolve().parents[1]), help="the driftwatch checkout")
    parser.add_argument("--one", nargs=2, metavar=("NAME", "ROUNDTRIP"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(f"{one(args.tree, args.one[0], args.one[1] == '1'):.3f}")
        return 0
    print(f"| input | with the YAML round trip | without |  ({args.tree})\n|---|---|---|")
    for name, text in INPUTS.items():
        cpu = [float(subprocess.run([sys.executable, __file__, "--tree", args.tree, "--one", name, rt],
                                    capture_output=True, text=True, check=True).stdout) for rt in ("1", "0")]
        print(f"| {name} ({len(text.encode()) / 1000:.0f} KB) | {cpu[0]:.2f} s | {cpu[1]:.2f} s |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
