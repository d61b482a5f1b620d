"""`driftwatch calibration`: the fleet's own coverage and residuals per family of change (issue 35 item 4)."""
from __future__ import annotations

import json
import sys

import click

from ..errors import EXIT_OK
from .options import judging_options
from .store import STORE_HELP

SCHEMA = "driftwatch.calibration/v1"


@click.command()
@click.option("--store", help=STORE_HELP)
@click.option("--host", help="Only this host's history.")
@click.option("--unit", help="Only this unit's history (with or without --host).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="How to write it (json: driftwatch.calibration/v1).")
@judging_options
def calibration(store, host, unit, fmt, rules_dir, ignores, ignore_file):
    """How well the models' 80 % intervals held on this fleet, per family of change.

    Every change between two snapshots of a unit with a measured throughput on both sides is kept in the
    store as a (predicted interval, measured ratio) pair; per family of change: the share measured inside,
    the points' residuals, and, once a family has 10 pairs, the margin its intervals are re-sized by
    (split-conformal on the log ratio, to the fleet's own 80 %)."""
    from ..findings.fleet import FleetCalibration, history_pairs
    from ..findings.judging import load_judging
    from ..snapshots.store import open_store
    from ..snapshots.store_calibration import load_pairs, save_pairs

    judging = load_judging(rules_dir, ignores, ignore_file)
    opened = open_store(store or None)
    try:
        groups = [(h, u) for h, u in opened.groups(host) if unit is None or u == unit]
        found = history_pairs(opened, judging, groups)
        if found:  # a store with no measured change stays as it is (a question creates no table)
            save_pairs(opened, found)
        pairs = [p for p in load_pairs(opened) if (host is None or p.host == host) and (unit is None or p.unit == unit)]
    finally:
        close = getattr(opened, "close", None)
        if callable(close):
            close()
    fleet = FleetCalibration.from_pairs(pairs)
    doc = {"schema": SCHEMA, "pairs": len(pairs), "families": [f.to_dict() for f in fleet.families.values()]}
    click.echo(json.dumps(doc, indent=2) if fmt == "json" else render_text(doc))
    sys.exit(EXIT_OK)


def render_text(doc: dict) -> str:
    if not doc["pairs"]:
        return ("No change in the store's history has a measured throughput on both sides yet (record one with "
                "`driftwatch snapshot --probe` before and after a change).")
    lines = [f"{doc['pairs']} measured changes on this fleet.", "",
             f"{'family':<22} {'pairs':>5} {'inside':>7} {'coverage':>8} {'median |ln m/p|':>15}  intervals"]
    for f in doc["families"]:
        res = f["median_abs_log_residual"]
        if f["active"]:
            margin = f["log_margin"]
            how = (f"{'widened' if margin > 0 else 'narrowed'} ×e^{abs(margin):.2f} to "
                   f"{f['coverage_after']:.0%} on this fleet")
        else:
            how = "as the models give them (fewer than 10 pairs)"
        lines.append(f"{f['family']:<22} {f['pairs']:>5} {f['covered']:>7} {f['coverage']:>8.0%} "
                     f"{'-' if res is None else f'{res:.2f}':>15}  {how}")
    return "\n".join(lines)
