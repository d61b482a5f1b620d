"""`snapshot`, `prune` and `history`: snapshots saved in the store, trimmed and read back (the `store`
group, which handles the store itself: import, export, check, is in store.py)."""
from __future__ import annotations

import json
import sys
from dataclasses import replace

import click

from ..errors import EXIT_OK, EXIT_TROUBLE, InputError
from ..report import format_names
from .options import (
    baselines_dir_option,
    catalog_option,
    color_option,
    emit,
    engine_files,
    judging_options,
    shard_option,
    ssh_options,
    target_request,
    terminal_format,
    voice,
)
from .params import COUNT
from .store import STORE_HELP


@click.command()
@click.argument("hosts", nargs=-1)
@click.option("--inventory", type=str, help="Inventory file (driftwatch YAML, Ansible INI or YAML).")
@click.option("--unit", help="Unit to read on each host (default: the inventory's units).")
@click.option("--unit-file", "unit_files", multiple=True, help="Snapshot a local unit file instead of a host.")
@click.option("--host", "--host-name", "host_name",
              help="With --unit-file: the host name to record (e.g. ct129). Without: a live host to read.")
@click.option("--store", help=STORE_HELP)
@click.option("--engine-version", help="Read flags with this engine release's catalog (SGLang or vLLM).")
@click.option("--parallel", "parallel", type=click.IntRange(1, 1024), default=None,
              help="Hosts read at once.  [default: 32]")
@click.option("--concurrency", "old_parallel", type=click.IntRange(1, 1024), hidden=True,
              help="Deprecated spelling of --parallel (everywhere else --concurrency is the client concurrency).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: one line per unit (host, unit, status, snapshot; why a unit failed on stderr); "
                   "json: driftwatch.snapshot-run/v1.")
@click.option("--quiet", "-q", is_flag=True, help="No progress line.")
@click.option("--verbose", "-v", is_flag=True,
              help="Say on stderr where each host's time went: connect, round trip, each remote step, probe.")
@click.option("--keep", type=COUNT, default=None,
              help="Then keep only the newest N snapshots of each host/unit in the store (as `prune --keep N`).")
@click.option("--baselines-dir", "keep_baselines_dir", envvar="DRIFTWATCH_BASELINES",
              help="With --keep: baselines whose snapshots are never deleted [default: ./baselines].")
@shard_option
@click.option("--limit", help="Only the inventory's hosts this Ansible host pattern selects "
                              "(names, groups, globs, a:b union, a:&b intersection, a:!b exclusion).")
@catalog_option
@ssh_options
@engine_files
def snapshot(hosts, inventory, unit, unit_files, host_name, store, engine_version, parallel, old_parallel, fmt,
             quiet, verbose, keep, keep_baselines_dir, shard, limit, ssh, files):
    """Read units (local files or live hosts) and save one snapshot each in the store."""
    from ..run.snapshots import snapshot_fleet
    if old_parallel is not None:
        if parallel is not None and parallel != old_parallel:
            raise InputError("give --parallel N only (--concurrency is its deprecated spelling in snapshot)")
        click.echo("driftwatch: warning: snapshot --concurrency is deprecated: use --parallel N (hosts read at "
                   "once); --concurrency means the client concurrency in compare and report", err=True)
        parallel = old_parallel
    if host_name and not unit_files:
        hosts, host_name = tuple(hosts) + (host_name,), None
    from ..run.reading import CollectOptions
    from ..run.snapshots import SnapshotRun
    from ..run.targets import resolve_targets
    targets = resolve_targets(target_request(unit_files=tuple(unit_files), hosts=tuple(hosts), unit=unit,
                                             inventory=inventory, limit=limit))
    progress = _progress_line() if not quiet and sys.stderr.isatty() else None
    results: list[dict] | None = [] if fmt == "json" else None
    run = SnapshotRun(tuple(targets), CollectOptions(replace(ssh, parallel=parallel or 32), files, engine_version),
                      store, host_name, keep, keep_baselines_dir, shard, progress, results)
    trouble = snapshot_fleet(run, voice(out=fmt == "text", aside=verbose))
    if results is not None:
        click.echo(json.dumps(snapshot_run_doc(results), indent=2))
    sys.exit(EXIT_TROUBLE if trouble else EXIT_OK)


SNAPSHOT_RUN_SCHEMA = "driftwatch.snapshot-run/v1"


def snapshot_run_doc(results: list[dict]) -> dict:
    """`snapshot --format json`: each unit read (host, unit, status, snapshot saved or error) and counts."""
    failed = sum(r["error"] is not None for r in results)
    return {"schema": SNAPSHOT_RUN_SCHEMA, "units": results,
            "summary": {"units": len(results), "saved": len(results) - failed, "failed": failed}}


def _progress_line():
    """A terminal's one-line progress for a fleet: hosts done, failed and left (stderr)."""
    failed = 0

    def progress(done, total, raw):
        nonlocal failed
        failed += raw.status not in ("ok", "fallback")
        click.echo(f"\r{done}/{total} done, {failed} failed, {total - done} left: {raw.host} {raw.status}\033[K",
                   nl=(done == total), err=True)
    return progress


@click.command()
@click.option("--keep", type=COUNT, help="Keep the newest N snapshots of each host/unit.")
@click.option("--older-than", help="Delete snapshots older than D (30m, 12h, 7d, 2w, 1d12h).")
@click.option("--store", help=STORE_HELP)
@click.option("--host", help="Only this host's snapshots.")
@click.option("--unit", help="Only this unit's snapshots.")
@click.option("--dry-run", "-n", is_flag=True, help="Say what would be deleted; delete nothing.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing unless something is wrong.")
@baselines_dir_option
def prune(keep, older_than, store, host, unit, dry_run, quiet, baselines_dir):
    """Delete old snapshots; never the newest of a host/unit, nor one a baseline was made from.
    With both --keep and --older-than, a snapshot goes only when both say so."""
    from ..run.prune import prune_store
    prune_store(store, keep, older_than, baselines_dir, voice(out=not quiet, aside=not quiet), dry_run=dry_run,
                host=host, unit=unit)
    sys.exit(EXIT_OK)


@click.command()
@click.argument("hosts", nargs=-1)
@click.option("--inventory", type=str, help="Inventory naming the hosts and units to show.")
@click.option("--unit", help="Only this unit.")
@click.option("--store", help=STORE_HELP)
@click.option("--since", "since_text",
              help="Changes since WHEN: RFC 3339 (2026-11-28T03:00:00Z) or back from now (7d, 12h).")
@click.option("--baseline", "baseline_spec",
              help="Also say, for each finding against this baseline, since when it is there.")
@click.option("--format", "fmt", type=click.Choice(format_names("history")), default="text", show_default=True,
              help="How to write the history (json: driftwatch.history/v1).")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the history here (atomically).")
@color_option
@judging_options
@click.option("--concurrency", type=click.IntRange(1, 100000), help="Client concurrency (with --baseline).")
@click.option("--engine-version", help="Read every snapshot with this engine release's catalog.")
@click.option("--limit", help="Only the inventory's hosts this Ansible host pattern selects "
                              "(names, groups, globs, a:b union, a:&b intersection, a:!b exclusion).")
@baselines_dir_option
@catalog_option
@engine_files
def history(hosts, inventory, unit, store, since_text, baseline_spec, fmt, output, color, rules_dir, ignores,
            ignore_file, concurrency, engine_version, limit, baselines_dir, files):
    """What changed when, per host and unit, from the snapshot store (newest first); with
    --baseline, since when each current finding is there and whether it ever went away."""
    from ..report import get_format
    from ..run.fleet import JudgingOptions
    from ..run.history import HistoryQuery, store_history
    # The hosts named are the whole set: the inventory (typed, or the config file's) only says
    # which baseline each of their units is judged against; bare, the config file's inventory lists them.
    request = target_request(hosts=tuple(hosts), unit=unit, inventory=inventory, limit=limit, baseline=baseline_spec)
    query = HistoryQuery(store, since_text, JudgingOptions(rules_dir, tuple(ignores), ignore_file, concurrency,
                                                           baselines_dir=baselines_dir), engine_version)
    doc = store_history(request, query, files, voice())
    emit((get_format(fmt) if output or fmt != "text" else terminal_format(fmt, color)).render_history(doc), output)
    sys.exit(EXIT_OK)
