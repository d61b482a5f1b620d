"""`restore`: the drop-in that brings a unit back to its baseline, checked, written or installed."""
from __future__ import annotations

import sys

import click

from .manifest import manifest_options
from .options import baselines_dir_option, catalog_option, emit, engine_files, judging_options, ssh_options, voice


@click.command()
@click.option("--baseline", "baseline_spec", required=True, help="Baseline NAME, a baseline YAML, or a unit file.")
@click.option("--unit-file", help="The current unit (or saved `systemctl cat` output) on this machine.")
@click.option("--host", help="Read (and with --apply, restore) the unit on this host.")
@click.option("--unit", help="Unit on --host (default: the baseline's unit); the unit's name for --unit-file.")
@click.option("--inventory", type=str, help="Restore every host and unit of this inventory.")
@click.option("--limit", help="Only the inventory's hosts this Ansible host pattern selects "
                              "(names, groups, globs, a:b union, a:&b intersection, a:!b exclusion).")
@click.option("--keep", "keep", multiple=True, metavar="KEY",
              help="A difference to keep as it is (flag, NAME, unit key, concept or key; globs; repeatable).")
@click.option("--write", "write_dir", type=click.Path(file_okay=False),
              help="Save each drop-in under DIR/HOST/UNIT.d/50-driftwatch-restore.conf (atomically).")
@click.option("--apply", "apply", is_flag=True,
              help="Install each checked drop-in over SSH (temp file + rename), then daemon-reload.")
@click.option("--yes", "-y", is_flag=True, help="Apply without asking (otherwise each drop-in's diff is shown "
                                                 "and confirmed).")
@click.option("--restart", is_flag=True, help="With --apply: also restart the unit.")
@click.option("--expect-state", metavar="HASH",
              help="With --apply: refuse unless the unit is still in this state (the state_hash of an earlier "
                   "`restore --format json`).")
@click.option("--reload-command", metavar="CMD",
              help="Run CMD instead of `systemctl daemon-reload` after installing (run even without systemd).")
@click.option("--restart-command", metavar="CMD",
              help="Run CMD instead of `systemctl restart {unit}` with --restart ({unit}: the unit).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="How to write the plans (json: driftwatch.restore/v1).")
@judging_options
@baselines_dir_option
@catalog_option
@ssh_options
@engine_files
@manifest_options
def restore(baseline_spec, unit_file, host, unit, inventory, limit, keep, write_dir, apply, yes, restart, expect_state,
            reload_command, restart_command, fmt, rules_dir, ignores, ignore_file, baselines_dir, ssh, files,
            manifests, container):
    """Write the drop-in that brings a unit back to its baseline, checked before it is offered.
    With --manifest: the patch (Kubernetes) or compose.override.yaml (Compose) instead.

    Exit codes: 0 nothing to restore, 1 restorable (or restored), 2 trouble."""
    if manifests or container:
        from .manifest import restore_manifests
        restore_manifests(manifests, container, baseline_spec, unit_file or host or unit, apply, keep, write_dir,
                          fmt, (rules_dir, ignores, ignore_file, baselines_dir))
    from ..report.restore import render_plans
    from ..run.restore import restore_units
    from .config import typed
    if (unit_file or host) and not typed("inventory"):
        inventory = None  # the config file's inventory restores every host only when typed
    confirm = None
    if apply and not yes:
        if not sys.stdin or not sys.stdin.isatty():
            raise click.UsageError("--apply needs --yes when standard input is not a terminal")

        def confirm(diff: str) -> bool:
            click.echo(diff, err=True, nl=not diff.endswith("\n"))
            return click.confirm("driftwatch: install this drop-in?", default=False, err=True)
    result = restore_units(baseline_spec, unit_file=unit_file, host=host, unit=unit, inventory=inventory,
                           limit=limit, baselines_dir=baselines_dir, keep=keep, rules_dir=rules_dir, ignores=ignores,
                           ignore_file=ignore_file, write_dir=write_dir, apply=apply, confirm=confirm,
                           restart=restart, expect_state=expect_state, reload_command=reload_command,
                           restart_command=restart_command, ssh=ssh, files=files, voice=voice())
    emit(render_plans([u.doc() for u in result.units], fmt))
    sys.exit(result.exit_code)
