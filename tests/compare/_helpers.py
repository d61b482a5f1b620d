"""Shared helpers for the compare tests: build units from flag lists and run compare via the API."""
from __future__ import annotations

from pathlib import Path

from driftwatch.baseline import Baseline, snapshot_from_unit_file
from driftwatch.compare import compare
from driftwatch.rulebook import load_rules

REPO = Path(__file__).resolve().parents[2]

BASE_FLAGS = """\
  --model-path /root/models/Qwen3.6-27B \\
  --port 30000 \\
  --host 0.0.0.0 \\
  --tp-size 2 \\
  --mem-fraction-static 0.88 \\
  --context-length 131072 \\
  --max-running-requests 16 \\
  --reasoning-parser qwen3 \\
  --speculative-algorithm NEXTN \\
  --speculative-num-steps 3 \\
  --speculative-eagle-topk 1"""


def run_units(tmp_path: Path, baseline_unit: str, current_unit: str, *, baseline_metrics=None,
              current_metrics=None, concurrency=None, current_runtime=None, rules_dir=None, ignore=None):
    b = tmp_path / "baseline.service"
    c = tmp_path / "current.service"
    b.write_text(baseline_unit, encoding="utf-8")
    c.write_text(current_unit, encoding="utf-8")
    bsnap = snapshot_from_unit_file(str(b))
    csnap = snapshot_from_unit_file(str(c))
    if current_runtime:
        csnap.runtime.update(current_runtime)
    base = Baseline(name="fixture", snapshot=bsnap, metrics=dict(baseline_metrics or {}))
    return compare(base, csnap, load_rules(rules_dir), ignore or [], concurrency, None,
                   dict(current_metrics or {}))
