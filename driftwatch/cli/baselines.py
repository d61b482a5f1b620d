"""`baseline save | accept | list | show`: the named known-good baselines."""
from __future__ import annotations

import json
import sys

import click

from ..errors import EXIT_OK
from .manifest import manifest_options
from .options import baselines_dir_option, catalog_option, engine_files, ssh_options, target_request


@click.group("baseline")
def baseline_group():
    """Save, list and show named known-good baselines (baselines/NAME.yaml)."""


@baseline_group.command("save")
@click.argument("name")
@click.option("--snapshot", "--from", "from_snapshot", help="A saved snapshot YAML (--from: the older spelling).")
@click.option("--unit-file", help="A unit file (or saved `systemctl cat` output).")
@click.option("--host", help="Read the unit live from this host.")
@click.option("--unit", help="Unit name on --host (with --unit-file: the unit's name to record).")
@click.option("--host-name", help="Host name to record (for --unit-file), e.g. ct129.")
@click.option("--metric", "metrics", multiple=True, help="Measured figure, e.g. throughput=70 (repeatable).")
@click.option("--note", help="Why this is known-good.")
@click.option("--force", is_flag=True, help="Replace an existing baseline.")
@click.option("--engine-version", help="Engine release (SGLang or vLLM) to record with the unit.")
@click.option("--inventory", type=str, help="Inventory naming --host.")
@baselines_dir_option
@catalog_option
@ssh_options
@engine_files
@manifest_options
def baseline_save(name, from_snapshot, unit_file, host, unit, host_name, metrics, note, force, engine_version,
                  inventory, baselines_dir, ssh, files, manifests, container):
    """Save NAME from a snapshot, a unit file, a manifest's container or a live host."""
    from ..run.baselines import SaveDetails, save_named
    from ..run.reading import CollectOptions
    request = target_request(unit_files=(unit_file,) if unit_file else (),
                             snapshots=(from_snapshot,) if from_snapshot else (), hosts=(host,) if host else (),
                             unit=unit, inventory=inventory, one=True, manifests=tuple(manifests), container=container)
    path = save_named(name, request, CollectOptions(ssh, files, engine_version),
                      SaveDetails(host_name, tuple(metrics), note, force, baselines_dir))
    click.echo(f"saved baseline {name} to {path}")
    sys.exit(EXIT_OK)


@baseline_group.command("accept")
@click.argument("name")
@click.option("--unit-file", help="The unit now known to be good (or saved `systemctl cat` output).")
@click.option("--snapshot", "snapshot_file", help="A saved snapshot YAML.")
@click.option("--host", help="Read the unit live from this host (default: the host recorded in the baseline).")
@click.option("--unit", help="Unit on --host (default: the baseline's unit).")
@click.option("--reason", required=True, help="Why today's drift is accepted (kept in the baseline's note).")
@click.option("--metric", "metrics", multiple=True, help="Figures measured on the new unit, e.g. throughput=72.")
@click.option("--keep-metrics", is_flag=True, help="Keep the old metrics (only if the change cannot affect them).")
@click.option("--inventory", type=str, help="Inventory naming --host (or the host the baseline records).")
@baselines_dir_option
@catalog_option
@ssh_options
@engine_files
def baseline_accept(name, unit_file, snapshot_file, host, unit, reason, metrics, keep_metrics, inventory,
                    baselines_dir, ssh, files):
    """Turn today's accepted drift into the new NAME baseline (the old one is replaced atomically)."""
    from ..run.baselines import AcceptDetails, accept_drift
    from ..run.reading import CollectOptions
    request = target_request(unit_files=(unit_file,) if unit_file else (),
                             snapshots=(snapshot_file,) if snapshot_file else (), hosts=(host,) if host else (),
                             unit=unit, inventory=inventory, one=True)
    path, dropped = accept_drift(name, request, CollectOptions(ssh, files),
                                 AcceptDetails(reason, tuple(metrics), keep_metrics, baselines_dir))
    note = " (old metrics dropped: re-measure and pass --metric)" if dropped else ""
    click.echo(f"accepted: baseline {name} in {path} now holds the current unit{note}")
    sys.exit(EXIT_OK)


@baseline_group.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: a table; json: every field, for scripts.")
@baselines_dir_option
def baseline_list(fmt, baselines_dir):
    """Named baselines with their host, unit and metrics."""
    from tabulate import tabulate

    from ..run.baselines import list_named
    directory, items = list_named(baselines_dir)
    if fmt == "json":
        click.echo(json.dumps({"schema": "driftwatch.baselines/v1", "directory": str(directory),
                               "baselines": items}, indent=2, default=str))
        sys.exit(EXIT_OK)
    rows = []
    for item in items:
        if item["error"]:
            rows.append([item["name"], "-", "-", "-", f"unreadable: {item['error']}"])
            continue
        metrics = ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}"
                            for k, v in item["metrics"].items())
        rows.append([item["name"], item["host"] or "-", item["unit"] or "-", metrics or "-",
                     item["saved_at"] or "-"])
    if not rows:
        click.echo(f"no baselines in {directory}/", err=True)
    else:
        click.echo(tabulate(rows, headers=["name", "host", "unit", "metrics", "saved"]))
    sys.exit(EXIT_OK)


@baseline_group.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: metrics and typed flags; json: the whole baseline.")
@baselines_dir_option
@engine_files
def baseline_show(name, fmt, baselines_dir, files):
    """A baseline's metrics and typed flags."""
    from ..report.show import render_show
    from ..run.baselines import show_named
    b = show_named(name, baselines_dir, files)
    if fmt == "json":
        from ..redact import mask_for_show
        from ..snapshots.baseline import baseline_to_dict
        click.echo(json.dumps(mask_for_show(baseline_to_dict(b)), indent=2, default=str))
    else:
        metrics = ", ".join(f"{k}={v:g}" for k, v in b.metrics.items()) or "none recorded"
        click.echo(f"baseline {b.name}: metrics {metrics}; saved {b.saved_at or '-'} by {b.saved_by or '-'}")
        if b.note:
            click.echo(f"note: {b.note}")
        click.echo(render_show(b.snapshot, "text", False), nl=False)
    sys.exit(EXIT_OK)
