"""The garbage collector's thresholds for a driftwatch process: the CLI, and the benchmarks that stand in
for it (benchmarks/fuzz.py's workers, benchmarks/huge_units.py).

driftwatch makes few reference cycles: what it builds for a unit (argv words, parsed values, findings,
YAML nodes) is freed by reference counting when the unit is done. With CPython's default thresholds
(700, 10, 10) a long run still made a full collection about once per huge unit, each scanning every live
object: 0.1-0.2 s of the ~0.9 s a 4 000-flag unit cost in a fuzz worker that had read 1 500 inputs
(benchmarks/README.md, "Fifth round"). Collections now start after 100 000 new objects, not 700, and the
start-up heap (modules, click's commands, rules) is frozen out of every later scan. A cycle is still
collected: later, at a cost of a few MB at most."""
from __future__ import annotations

import gc

THRESHOLDS = (100_000, 20, 10)


def fewer_collections() -> None:
    """Freeze what exists now (never garbage) and collect less often from here on."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
