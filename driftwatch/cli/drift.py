"""`compare` and `report`: units judged against a known-good baseline, one unit or a fleet."""
from __future__ import annotations

import sys
from dataclasses import replace
from typing import TYPE_CHECKING

import click

from ..errors import EXIT_DRIFT, EXIT_OK
from ..report import format_names
from .manifest import manifest_options
from .options import (
    baselines_dir_option,
    catalog_option,
    color_option,
    emit,
    engine_files,
    facts_options,
    judging_options,
    shard_option,
    ssh_options,
    target_request,
    terminal_format,
    voice,
)
from .params import PORT, SHARE

if TYPE_CHECKING:
    from ..report.document import FleetReportDoc


def workload_options(func):
    """--workload-prefix-share / --workload-prompt-tokens: the workload the prediction is for."""
    func = click.option("--workload-prompt-tokens", type=click.IntRange(1, 10**8),
                        help="Typical prompt length in tokens: prices a prefill chunk size change.")(func)
    return click.option("--workload-prefix-share", type=SHARE,
                        help="Share of prompt tokens that repeat an earlier request's prefix (0-1): prices "
                             "prefix caching.")(func)


def workload_metrics(prefix_share, prompt_tokens) -> dict:
    """The workload options as the metrics the impact models read (impact/workload.py)."""
    return {k: v for k, v in (("prefix_share", prefix_share), ("prompt_tokens", prompt_tokens)) if v is not None}


@click.command()
@click.option("--baseline", "baseline_spec",
              help="Baseline NAME, a baseline YAML, or a unit file [default: the one the "
                   "inventory names for the unit, else `baseline:` in the config file].")
@click.option("--unit-file", help="Current unit file (or saved `systemctl cat` output).")
@click.option("--host", help="Read the current unit live from this host.")
@click.option("--unit", help="Unit on --host (default: the baseline's unit).")
@click.option("--snapshot", "snapshot_file", help="A saved snapshot YAML as the current side.")
@click.option("--baseline-metric", multiple=True, help="Override/add a baseline metric, e.g. throughput=70.")
@click.option("--current-metric", multiple=True, help="A figure measured now, e.g. accept_length=1.75.")
@click.option("--concurrency", type=click.IntRange(1, 100000), help="Client concurrency the prediction is for.")
@workload_options
@click.option("--format", "fmt", type=click.Choice(format_names("comparison")), default="text", show_default=True,
              help="How to write the comparison (json: driftwatch.compare/v1).")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report here (atomically).")
@color_option
@judging_options
@click.option("--engine-version", help="Read both sides with this engine release's catalog (SGLang or vLLM).")
@click.option("--inventory", type=str, help="Inventory naming --host.")
@baselines_dir_option
@catalog_option
@ssh_options
@facts_options
@engine_files
@manifest_options
def compare(baseline_spec, unit_file, host, unit, snapshot_file, baseline_metric, current_metric, concurrency,
            workload_prefix_share, workload_prompt_tokens, fmt, output, color, rules_dir, ignores, ignore_file,
            engine_version, inventory, baselines_dir, ssh, model_config, baseline_model_config, gpu, files,
            manifests, container):
    """Compare a unit with a known-good baseline and rank what cost throughput."""
    from ..report import get_format
    from ..report.data import comparison_to_dict
    from ..run.compare import CompareFacts, compare_unit
    from ..run.fleet import JudgingOptions
    from ..run.reading import CollectOptions
    current_metric = tuple(current_metric) + tuple(  # the workload reaches the impact models as metrics
        f"{k}={v}" for k, v in workload_metrics(workload_prefix_share, workload_prompt_tokens).items())
    request = target_request(unit_files=(unit_file,) if unit_file else (),
                             snapshots=(snapshot_file,) if snapshot_file else (), hosts=(host,) if host else (),
                             unit=unit, inventory=inventory, baseline=baseline_spec, one=True,
                             manifests=tuple(manifests), container=container)
    result = compare_unit(request, CollectOptions(ssh, files, engine_version),
                          JudgingOptions(rules_dir, tuple(ignores), ignore_file, concurrency,
                                         baselines_dir=baselines_dir),
                          CompareFacts(tuple(baseline_metric), current_metric, model_config,
                                       baseline_model_config, gpu),
                          voice())
    shown = get_format(fmt) if output else terminal_format(fmt, color)
    emit(shown.render_comparison(comparison_to_dict(result)), output)
    sys.exit(EXIT_DRIFT if result.drift else EXIT_OK)


@click.command()
@click.option("--inventory", type=str, help="Inventory of hosts and units to check.")
@click.option("--host", help="One host to check (with --unit).")
@click.option("--unit", help="Unit to read on each host (default: the inventory's units).")
@click.option("--unit-file", "unit_files", multiple=True, help="Local unit file(s) to check (repeatable).")
@click.option("--baseline", "baseline_spec", help="Baseline NAME or PATH for every unit [default: each unit's "
                                                 "from the inventory, else `baseline:` in the config file].")
@click.option("--email", "email", multiple=True, help="Recipient (repeatable). Without one, nothing is mailed.")
@click.option("--smtp-host", help="SMTP server [default: localhost].")
@click.option("--smtp-port", type=PORT, help="SMTP port [default: 587 for starttls, 465 for ssl, 25 for plain].")
@click.option("--smtp-user", help="SMTP user (password from $DRIFTWATCH_SMTP_PASSWORD or --smtp-password-file).")
@click.option("--smtp-password-file", type=str, help="File holding the SMTP password (must not be readable by others).")
@click.option("--smtp-starttls", "smtp_security", flag_value="starttls", help="STARTTLS when offered (default).")
@click.option("--smtp-ssl", "smtp_security", flag_value="ssl", help="SMTP over TLS (port 465).")
@click.option("--smtp-plain", "smtp_security", flag_value="plain", help="Never use TLS (local relay only).")
@click.option("--smtp-ca-file", type=str, help="CA bundle to verify the SMTP server's certificate.")
@click.option("--from", "sender", help="From address [default: driftwatch@FQDN].")
@click.option("--subject-prefix", help="Subject prefix [default: [driftwatch]].")
@click.option("--state", help="State file for --only-changes.")
@click.option("--only-changes", is_flag=True, default=None,
              help="Mail only when the findings differ from the last mail.")
@click.option("--always", is_flag=True, help="Mail even when every host matches.")
@click.option("--format", "fmt", type=click.Choice(format_names("fleet")), default="text", show_default=True,
              help="How to print and write the report (json: driftwatch.report/v1).")
@click.option("--output", "-o", type=click.Path(dir_okay=False),
              help="Write the report here instead of printing it (a file atomically; a device or FIFO in place).")
@click.option("--quiet", "-q", is_flag=True, help="Do not print the report (still mailed / written).")
@color_option
@click.option("--config", "config_path",
              help="Config file [default: ~/.config/driftwatch/config.yaml, /etc/driftwatch/config.yaml; "
                   "also $DRIFTWATCH_CONFIG]; its keys are the options' names (docs/config.md).")
@click.option("--concurrency", type=click.IntRange(1, 100000), help="Client concurrency the predictions are for.")
@workload_options
@click.option("--parallel", type=click.IntRange(1, 1024), default=32, show_default=True, help="Hosts read at once.")
@judging_options
@click.option("--engine-version", help="Read units with this engine release's catalog (SGLang or vLLM).")
@click.option("--store", help="Snapshot store that says since when each finding is there "
                              "[default: ~/.local/state/driftwatch].")
@click.option("--no-store", "no_store", is_flag=True,
              help="Do not save the units read to the snapshot store (by default the report feeds it).")
@click.option("--limit", help="Only the inventory's hosts this Ansible host pattern selects "
                              "(names, groups, globs, a:b union, a:&b intersection, a:!b exclusion).")
@click.option("--prometheus", "prometheus_file", type=click.Path(dir_okay=False),
              help="Also write the report as Prometheus metrics here (node_exporter textfile, atomically).")
@shard_option
@click.option("--merge", is_flag=True,
              help="Build one fleet report (printed, written, mailed) from the shards' reports given as "
                   "arguments (each `report --shard I/N --format json -o FILE`); reads no host. Overlapping "
                   "shards or a file that is not a report: exit 2, one line.")
@click.argument("shard_reports", nargs=-1, type=click.Path(dir_okay=False))
@baselines_dir_option
@catalog_option
@ssh_options
@engine_files
@manifest_options
def report(inventory, host, unit, unit_files, baseline_spec, email, smtp_host, smtp_port, smtp_user,
           smtp_password_file, smtp_security, smtp_ca_file, sender, subject_prefix, state, only_changes, always,
           fmt, output, quiet, color, config_path, concurrency, workload_prefix_share, workload_prompt_tokens,
           parallel, rules_dir, ignores, ignore_file, engine_version, baselines_dir, store, no_store, limit,
           prometheus_file, shard, merge, shard_reports, ssh, files, manifests, container):
    """Check hosts against their baselines; print, write and mail one drift report (for cron).

    With --merge A.json B.json …: the fleet's report from its shards' JSON reports."""
    from ..run.fleet import report_fleet
    settings = dict(email=email, smtp_host=smtp_host, smtp_port=smtp_port, smtp_user=smtp_user,
                    smtp_password_file=smtp_password_file, smtp_security=smtp_security, smtp_ca_file=smtp_ca_file,
                    sender=sender, subject_prefix=subject_prefix, state=state, only_changes=only_changes,
                    inventory=inventory, baseline=baseline_spec)

    def show(doc: FleetReportDoc) -> None:
        shown = terminal_format(fmt, color).render_fleet(doc)
        click.echo(shown, nl=not shown.endswith("\n"), color=True)  # coloured only as --color says

    from .config import config_file, typed
    if merge or shard_reports:
        result = _merge(merge, shard_reports, settings, {"--inventory": inventory, "--host": host,
                                                            "--unit-file": unit_files, "--shard": shard,
                                                            "--manifest": manifests,
                                                            "--limit": limit if typed("limit") else None},
                        config_path=config_file(), fmt=fmt, output=output, prometheus_file=prometheus_file,
                        always=always, voice=voice(aside=not quiet), show=None if quiet else show)
        sys.exit(result.exit_code)
    from ..run.fleet import FleetOutputs, FleetRun, JudgingOptions, fleet_request_check, report_settings
    from ..run.reading import CollectOptions
    from ..run.targets import TargetRequest, resolve_targets
    settings, from_file = report_settings(settings, config_file())
    typed_limit = typed("limit")  # the config file's limit: narrows an inventory run, never a named one
    request = TargetRequest(unit_files=tuple(unit_files), hosts=(host,) if host else (), unit=unit,
                            inventory=inventory, limit=limit if typed_limit else None,
                            config_inventory=from_file.get("inventory"), config_limit=None if typed_limit else limit,
                            baseline=baseline_spec, config_baseline=from_file.get("baseline"),
                            manifests=tuple(manifests), container=container)
    targets = resolve_targets(request)
    fleet_request_check(targets, request)
    inventory_used = request.inventory or (request.config_inventory if any(t.kind in ("ssh", "container", "kubernetes")
                                                                           for t in targets) else None)
    run = FleetRun(tuple(targets), CollectOptions(replace(ssh, parallel=parallel), files, engine_version),
                   JudgingOptions(rules_dir, tuple(ignores), ignore_file, concurrency,
                                  tuple(workload_metrics(workload_prefix_share, workload_prompt_tokens).items()),
                                  baselines_dir),
                   FleetOutputs(settings, fmt, output, prometheus_file, always, None if quiet else show, store,
                                save=not no_store),
                   voice(aside=not quiet), inventory=inventory_used, shard=shard)
    sys.exit(report_fleet(run).exit_code)


def _merge(merge: bool, shard_reports, settings: dict, collecting: dict, **kwargs):
    """`report --merge FILE…`: refused with one line when hosts would be read as well."""
    from ..errors import InputError
    from ..run.merge import merge_reports
    if not merge:
        raise InputError(f"report takes no file arguments ({shard_reports[0]}); to merge shards' reports: "
                         f"report --merge A.json B.json …")
    named = [option for option, value in collecting.items() if value]
    if named:
        raise InputError(f"--merge reads no host: drop {', '.join(named)} (the shards read them)")
    settings = {k: v for k, v in settings.items() if k not in ("inventory", "baseline")}
    return merge_reports(list(shard_reports), settings, **kwargs)
