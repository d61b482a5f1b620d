"""The CLI collects garbage under driftwatch's thresholds (driftwatch/gctune.py), not CPython's defaults:
a full collection once per huge unit cost 0.1-0.2 s of each in a long run."""
from __future__ import annotations

import subprocess
import sys

from driftwatch.gctune import THRESHOLDS

PROBE = """
import gc, sys
from driftwatch.cli import main
try:
    main(["--version"])
except SystemExit:
    pass
print(*gc.get_threshold(), gc.get_freeze_count(), file=sys.stderr)
"""


def test_the_cli_sets_the_thresholds_and_freezes_its_start_up_heap():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    *threshold, frozen = map(int, done.stderr.split()[-4:])
    assert tuple(threshold) == THRESHOLDS
    assert THRESHOLDS[0] > 700  # CPython's default: what the CLI no longer runs under
    assert frozen > 1000  # modules, click's commands: out of every later scan
