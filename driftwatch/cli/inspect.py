"""`show` and `check`: one unit, as read and as the engine would start it."""
from __future__ import annotations

import json
import sys

import click

from ..errors import EXIT_DRIFT, EXIT_OK
from .manifest import manifest_options
from .options import catalog_option, engine_files, ssh_options, target_request


def _one(unit_file, host, unit, snapshot_file, engine_version, inventory, ssh, files, manifests=(), container=None):
    """The one unit named, resolved as every command resolves its targets (run/targets.py): the
    inventory (typed, or the config file's) only describes --host."""
    from ..run.reading import CollectOptions, read_target
    from ..run.targets import one_of
    request = target_request(unit_files=(unit_file,) if unit_file else (), snapshots=(snapshot_file,) if snapshot_file
                             else (), hosts=(host,) if host else (), unit=unit, inventory=inventory, one=True,
                             manifests=tuple(manifests), container=container)
    return read_target(one_of(request), CollectOptions(ssh, files, engine_version))  # type: ignore[arg-type]


@click.command()
@click.option("--unit-file", type=str, help="A unit file, or saved `systemctl cat` output.")
@click.option("--host", help="Read the unit live from this host (user@host:port or an inventory name).")
@click.option("--unit", help="Unit name on --host, e.g. sglang-qwen.service.")
@click.option("--snapshot", "snapshot_file", help="A saved snapshot YAML.")
@click.option("--engine-version", help="Read flags with this engine release's catalog (SGLang or vLLM).")
@click.option("--all", "show_all", is_flag=True, help="Also list every default value.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text for people; json for scripts.")
@click.option("--inventory", type=str, help="Inventory naming --host.")
@catalog_option
@ssh_options
@engine_files
@manifest_options
def show(unit_file, host, unit, snapshot_file, engine_version, show_all, fmt, inventory, ssh, files, manifests,
         container):
    """What driftwatch read from one unit: argv, launcher, typed flags, findings."""
    from ..report.show import render_show
    snap = _one(unit_file, host, unit, snapshot_file, engine_version, inventory, ssh, files, manifests, container)
    click.echo(render_show(snap, fmt, show_all), nl=False)
    sys.exit(EXIT_OK)


@click.command()
@click.option("--unit-file", type=str, help="A unit file, or saved `systemctl cat` output (`-`: standard input).")
@click.option("--host", help="Read the unit live from this host.")
@click.option("--unit", help="Unit name on --host, e.g. sglang-qwen.service.")
@click.option("--snapshot", "snapshot_file", help="A saved snapshot YAML.")
@click.option("--engine-version", help="Check against this engine release's catalog.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: one line per problem; json: a document for scripts.")
@click.option("--quiet", "-q", is_flag=True,
              help="Print only problems: errors and warnings (nothing for a unit that has neither).")
@click.option("--inventory", type=str, help="Inventory naming --host.")
@catalog_option
@ssh_options
@engine_files
@manifest_options
def check(unit_file, host, unit, snapshot_file, engine_version, fmt, quiet, inventory, ssh, files, manifests,
          container):
    """Would the engine start? Exit 1 when it would refuse (unknown or removed flags, known
    start-up crashes), 0 otherwise; one line per problem. For ExecStartPre= or CI."""
    from ..errors import UnitError
    from ..report.check import check_doc, problems, refused_doc, render_check
    try:
        snap = _one(unit_file, host, unit, snapshot_file, engine_version, inventory, ssh, files, manifests, container)
    except UnitError as exc:  # systemd itself would refuse the unit: it cannot start either
        given = unit_file or snapshot_file or ""
        if fmt == "json":
            click.echo(json.dumps(refused_doc(given, str(exc)), indent=2))
        else:
            name = "standard input" if given == "-" else given
            message = str(exc)[len(name) + 2:] if str(exc).startswith(f"{name}: ") else str(exc)
            click.echo(f"{name}: error: {message}")
        sys.exit(EXIT_DRIFT)
    errors, _ = problems(snap)
    given = unit_file if unit_file and unit_file != "-" else None
    if fmt == "json":
        click.echo(json.dumps(check_doc(snap, given), indent=2))
    else:
        text = render_check(snap, "text", given)
        if quiet:
            text = "".join(line + "\n" for line in text.splitlines()[:-1])
        click.echo(text, nl=False)
    sys.exit(EXIT_DRIFT if errors else EXIT_OK)
