"""`restore`: the drop-in that brings a unit back to its baseline, checked, written, planned or installed."""
from __future__ import annotations

import sys

import click

from .manifest import manifest_options
from .options import baselines_dir_option, catalog_option, emit, engine_files, judging_options, ssh_options, voice


@click.command()
@click.option("--baseline", "baseline_spec",
              help="Baseline NAME, a baseline YAML, or a unit file (default: each unit's own, from the inventory).")
@click.option("--unit-file", help="The current unit (or saved `systemctl cat` output) on this machine.")
@click.option("--host", help="Read (and with --apply, restore) the unit on this host (looked up in the inventory).")
@click.option("--unit", help="Unit on --host (default: the inventory's units of that host); the unit's name for "
                             "--unit-file.")
@click.option("--inventory", type=str, help="Restore every host and unit of this inventory.")
@click.option("--limit", help="Only the inventory's hosts this Ansible host pattern selects "
                              "(names, groups, globs, a:b union, a:&b intersection, a:!b exclusion).")
@click.option("--keep", "keep", multiple=True, metavar="KEY",
              help="A difference to keep as it is (flag, NAME, unit key, concept or key; globs; repeatable).")
@click.option("--allow-engine-change", is_flag=True,
              help="Also rewrite a unit whose baseline runs another engine, model or launcher family "
                   "(a migration, not a revert).")
@click.option("--write", "write_dir", type=click.Path(file_okay=False),
              help="Save each drop-in under DIR/HOST/UNIT.d/zzzz-driftwatch-restore.conf (atomically).")
@click.option("--plan-out", metavar="PLAN",
              help="Save the checked drop-ins as a plan file to review, then install with `--apply PLAN` "
                   "(JSON driftwatch.restore-plan/v1, mode 0600).")
@click.option("--apply", "apply", is_flag=False, flag_value="-", default=None, metavar="[PLAN]",
              help="Install over SSH: the reviewed PLAN's drop-ins exactly, or (without PLAN) each checked "
                   "drop-in of this run; then daemon-reload.")
@click.option("--yes", "-y", is_flag=True, help="Apply without asking (otherwise each drop-in's diff is shown "
                                                 "and confirmed).")
@click.option("--restart", is_flag=True, help="With --apply: also restart the unit.")
@click.option("--reload-command", metavar="CMD",
              help="Run CMD instead of `systemctl daemon-reload` after installing (run even without systemd).")
@click.option("--restart-command", metavar="CMD",
              help="Run CMD instead of `systemctl restart {unit}` with --restart ({unit}: the unit, shell-quoted).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="How to write the plans (json: driftwatch.restore/v1).")
@judging_options
@baselines_dir_option
@catalog_option
@ssh_options
@engine_files
@manifest_options
def restore(baseline_spec, unit_file, host, unit, inventory, limit, keep, allow_engine_change, write_dir, plan_out,
            apply, yes, restart, reload_command, restart_command, fmt, rules_dir, ignores, ignore_file, baselines_dir,
            ssh, files, manifests, container):
    """Write the drop-in that brings each unit back to its own baseline, checked before it is offered.
    With --manifest: the patch (Kubernetes) or compose.override.yaml (Compose) instead.

    Exit codes: 0 nothing to restore (or applied with no drift left), 1 restorable, 2 trouble."""
    if manifests or container:
        from .manifest import restore_manifests
        if plan_out:
            raise click.UsageError("a plan file is for units' drop-ins; --manifest prints its patch (--write DIR)")
        restore_manifests(manifests, container, baseline_spec, unit_file or host or unit, apply, keep, write_dir,
                          fmt, (rules_dir, ignores, ignore_file, baselines_dir), allow_engine_change)
    from ..findings.judging import load_judging
    from ..report.restore import render_plans
    from ..run.restore import ApplyRequest, RestoreContext, RestoreRequest, restore_units
    from .config import typed
    confirm = None
    if apply and not yes:
        if not sys.stdin or not sys.stdin.isatty():
            raise click.UsageError("--apply needs --yes when standard input is not a terminal")

        def confirm(diff: str) -> bool:
            click.echo(diff, err=True, nl=not diff.endswith("\n"))
            return click.confirm("driftwatch: install this drop-in?", default=False, err=True)
    request = RestoreRequest(
        baseline=baseline_spec if typed("baseline_spec") else None,
        config_baseline=None if typed("baseline_spec") else baseline_spec, unit_file=unit_file, host=host, unit=unit,
        inventory=inventory if typed("inventory") else None, limit=limit if typed("limit") else None,
        config_inventory=None if typed("inventory") else inventory, config_limit=None if typed("limit") else limit,
        keep=tuple(keep), allow_engine_change=allow_engine_change)
    outputs = ApplyRequest(write_dir=write_dir, plan_out=plan_out, apply=bool(apply),
                           plan_file=apply if apply and apply != "-" else None, confirm=confirm, restart=restart,
                           reload_command=reload_command, restart_command=restart_command)
    ctx = RestoreContext(load_judging(rules_dir, ignores, ignore_file, None, None), baselines_dir, ssh, files, voice())
    result = restore_units(request, outputs, ctx)
    emit(render_plans([u.doc() for u in result.units], fmt))
    sys.exit(result.exit_code)
