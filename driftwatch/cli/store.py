"""``driftwatch store import|export|check``: move snapshots between the YAML-file format and the database
store; read every stored snapshot to find those that cannot be read."""
from __future__ import annotations

import sys

import click

from ..errors import EXIT_DRIFT, EXIT_OK

STORE_HELP = ("Snapshot store: a directory (SQLite, its store.db) or postgresql://USER@HOST/DB "
              "[default: ~/.local/state/driftwatch].")


@click.group("store")
def store_group():
    """The snapshot store itself: import a store of YAML files, export snapshots as YAML, check that
    every stored snapshot can be read."""


def _warn(message: str) -> None:
    click.echo(f"driftwatch: warning: {message}", err=True)


@store_group.command("import")
@click.argument("directory", type=str)
@click.option("--store", help=STORE_HELP)
def store_import(directory, store):
    """Import a store of YAML files (DIRECTORY/HOST/UNIT/*.yaml, runs.log) into the database store.

    Give the same directory as --store to convert a store in place: the database is created in it
    and the YAML files are left where they are (delete them once you are satisfied). Running it
    again imports nothing twice. Each file is checked as the store's own reads check it and
    redacted as `snapshot` redacts; a file that is not a snapshot, or a file or folder that is a
    symlink out of DIRECTORY, is not imported (one warning each, with the reason).
    Exit 0 when every file was imported, 1 when one was refused, 2 on bad input."""
    from ..diff.changes import changes_between
    from ..snapshots.store import DEFAULT_STORE
    from ..snapshots.store_sql import DatabaseStore
    from ..snapshots.store_transfer import import_files
    target = DatabaseStore(store or DEFAULT_STORE, on_problem=_warn, changes=changes_between)
    done = import_files(directory, target, on_problem=_warn)
    click.echo(f"driftwatch: imported {done.snapshots} snapshot{'s' if done.snapshots != 1 else ''} and "
               f"{done.runs} unchanged run{'s' if done.runs != 1 else ''} into {target.root}"
               + (f"; {done.present} already there" if done.present else "")
               + (f"; {done.skipped} refused, not imported" if done.skipped else ""), err=True)
    sys.exit(EXIT_DRIFT if done.skipped else EXIT_OK)


@store_group.command("export")
@click.option("--store", help=STORE_HELP)
@click.option("--output", "-o", "output", required=True, type=str,
              help="Directory to write HOST/UNIT/STAMP-SS.yaml and runs.log into (no file is overwritten).")
@click.option("--host", help="Only this host.")
@click.option("--unit", help="Only this unit.")
def store_export(store, output, host, unit):
    """Write the store's snapshots as YAML files (the layout `store import` reads)."""
    from ..snapshots.store import open_store
    from ..snapshots.store_transfer import export_files
    source = open_store(store or None, on_problem=_warn)
    done = export_files(source, output, host, unit)
    click.echo(f"driftwatch: exported {done.snapshots} snapshot{'s' if done.snapshots != 1 else ''} to {output}",
               err=True)


@store_group.command("check")
@click.option("--store", help=STORE_HELP)
@click.option("--host", help="Only this host.")
@click.option("--unit", help="Only this unit.")
def store_check(store, host, unit):
    """Read every stored snapshot and name each one that cannot be read (one line each on stdout).

    history and report's "since" read kept changes and only the snapshots they need, so a damaged
    snapshot they never reach is not named by them: run this (e.g. weekly from cron) to learn of it.
    Exit 0 when every snapshot reads, 1 when one does not, 2 on bad input."""
    from ..snapshots.store import open_store
    source = open_store(store or None, on_problem=_warn)  # a directory of YAML files is refused (exit 2)
    count, bad = source.check(host, unit)
    for record, why in bad:
        click.echo(f"{record.path}: unreadable: {why}")
    click.echo(f"driftwatch: checked {count} snapshot{'s' if count != 1 else ''} in {source.root}: "
               + (f"{len(bad)} unreadable" if bad else "all readable"), err=True)
    sys.exit(EXIT_DRIFT if bad else EXIT_OK)  # as every command: the same status in-process and from main
