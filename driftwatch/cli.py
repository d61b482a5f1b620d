"""Command line: wires options to the pipeline stages; no logic of its own.

Exit codes as diff(1): 0 no drift, 1 drift, 2 trouble. Every error is one line on stderr.
"""
from __future__ import annotations

import json
import os
import sys

import click

from . import __version__
from .errors import EXIT_DRIFT, EXIT_OK, EXIT_TROUBLE, DriftwatchError, InputError
from .report import format_names


def _ssh_options(func):
    """Options shared by every command that may read live hosts."""
    options = [
        click.option("--known-hosts", type=click.Path(dir_okay=False), help="known_hosts file (default ~/.ssh/known_hosts)."),
        click.option("--accept-new", is_flag=True, help="Trust and record unknown host keys (changed keys are still refused)."),
        click.option("-i", "--identity", type=click.Path(dir_okay=False), help="SSH private key file."),
        click.option("--ssh-config", type=click.Path(dir_okay=False), help="ssh_config file (default ~/.ssh/config)."),
        click.option("--connect-timeout", type=float, default=10.0, show_default=True, help="Seconds to connect."),
        click.option("--command-timeout", type=float, default=30.0, show_default=True, help="Seconds for the remote read."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _ssh_settings(kw: dict, parallel: int = 32):
    from .sources import SSHSettings
    return SSHSettings(known_hosts=kw.get("known_hosts"), accept_new=kw.get("accept_new", False),
                       identity=kw.get("identity"), ssh_config=kw.get("ssh_config"),
                       connect_timeout=kw.get("connect_timeout", 10.0),
                       command_timeout=kw.get("command_timeout", 30.0), parallel=parallel)


def _emit(text: str, output: str | None = None) -> None:
    if output:
        from .fileio import write_atomic
        write_atomic(output, text)
    else:
        click.echo(text, nl=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="driftwatch")
def cli():
    """Find configuration drift in SGLang servers run as systemd units, and explain which
    difference cost the throughput.

    Exit codes: 0 no drift, 1 drift found, 2 trouble (bad input, unreadable host)."""


# --------------------------------------------------------------------------- show
@cli.command()
@click.option("--unit-file", type=str, help="A unit file, or saved `systemctl cat` output.")
@click.option("--host", help="Read the unit live from this host (user@host:port or an inventory name).")
@click.option("--unit", help="Unit name on --host, e.g. sglang-qwen.service.")
@click.option("--snapshot", "snapshot_file", help="A saved snapshot YAML.")
@click.option("--engine-version", help="Read flags with this SGLang release's catalog.")
@click.option("--all", "show_all", is_flag=True, help="Also list every default value.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--inventory", type=str, help="Inventory naming --host.")
@_ssh_options
def show(unit_file, host, unit, snapshot_file, engine_version, show_all, fmt, inventory, **ssh):
    """What driftwatch read from one unit: argv, launcher, typed flags, findings."""
    from .show import render_show
    snap = _one_target(unit_file, host, unit, snapshot_file, engine_version, inventory, ssh, required=True)
    click.echo(render_show(snap, fmt, show_all), nl=False)
    sys.exit(EXIT_OK)


def _one_target(unit_file, host, unit, snapshot_file, engine_version, inventory, ssh, required):
    chosen = [x for x in (unit_file, snapshot_file, host) if x]
    if len(chosen) > 1:
        raise InputError("give one of --unit-file, --snapshot or --host/--unit")
    if unit_file:
        from .sources import snapshot_from_unit_file
        snap = snapshot_from_unit_file(unit_file, host=None, engine_version=engine_version)
        if unit:  # the unit's name on its host, when the file is a copy named otherwise
            from .collect.unitname import validate_unit_name
            snap.unit = validate_unit_name(unit)
        return snap
    if snapshot_file:
        from .store import read_snapshot_file
        return read_snapshot_file(snapshot_file, engine_version)
    if host:
        if not unit:
            raise InputError("--host needs --unit (the systemd unit to read)")
        from .sources import collect_one
        return collect_one(host, unit, _ssh_settings(ssh), inventory, engine_version)
    if unit:
        raise InputError("--unit needs --host (or use --unit-file for a file on this machine)")
    if required:
        raise InputError("nothing to read: give --unit-file FILE, --snapshot FILE or --host HOST --unit UNIT")
    return None


# --------------------------------------------------------------------------- snapshot
@cli.command()
@click.argument("hosts", nargs=-1)
@click.option("--inventory", type=str, help="Inventory file (driftwatch YAML, Ansible INI or YAML).")
@click.option("--unit", help="Unit to read on each host (default: the inventory's units).")
@click.option("--unit-file", "unit_files", multiple=True, help="Snapshot a local unit file instead of a host.")
@click.option("--host", "--host-name", "host_name",
              help="With --unit-file: the host name to record (e.g. ct129). Without: a live host to read.")
@click.option("--store", help="State directory [default: ~/.local/state/driftwatch].")
@click.option("--engine-version", help="Read flags with this SGLang release's catalog.")
@click.option("--concurrency", "--parallel", "parallel", type=click.IntRange(1, 1024), default=32, show_default=True,
              help="Hosts read at once.")
@click.option("--quiet", "-q", is_flag=True, help="No progress line.")
@_ssh_options
def snapshot(hosts, inventory, unit, unit_files, host_name, store, engine_version, parallel, quiet, **ssh):
    """Read units (local files or live hosts) and save one snapshot each in the store."""
    from .sources import snapshot_from_unit_file
    from .store import save_snapshot
    if host_name and not unit_files:
        hosts, host_name = tuple(hosts) + (host_name,), None
    if not hosts and not inventory and not unit_files:
        raise InputError("nothing to snapshot: give HOST..., --inventory FILE or --unit-file FILE")
    trouble = False
    for path in unit_files:
        snap = snapshot_from_unit_file(path, host=host_name, engine_version=engine_version)
        if engine_version:
            snap.engine_version = engine_version  # the operator says which release runs it
        saved = save_snapshot(snap, store)
        click.echo(f"{snap.host or 'local'}\t{snap.unit}\tok\t{saved}")
    if hosts or inventory:
        trouble = _snapshot_live(hosts, inventory, unit, store, engine_version, parallel, quiet, ssh)
    sys.exit(EXIT_TROUBLE if trouble else EXIT_OK)


def _snapshot_live(hosts, inventory, unit, store, engine_version, parallel, quiet, ssh) -> bool:
    from .collect.unitname import validate_unit_name
    from .sources import collect_live, inventory_targets, raw_to_snapshot
    from .store import save_snapshot
    if hosts:
        if not unit:
            raise InputError("reading hosts needs --unit UNIT (or an --inventory that lists units)")
        targets = [(h, unit) for h in hosts]
    else:
        targets = inventory_targets(inventory, unit)
    for _, u in targets:
        validate_unit_name(u)
    progress = None
    if not quiet and sys.stderr.isatty():
        def progress(done, total, raw):
            click.echo(f"\r{done}/{total} {raw.host} {raw.status}\033[K", nl=(done == total), err=True)
    raws = collect_live(targets, _ssh_settings(ssh, parallel), inventory, progress)
    trouble = False
    for raw in raws:
        try:
            snap = raw_to_snapshot(raw, engine_version)
            saved = save_snapshot(snap, store)
            click.echo(f"{raw.host}\t{raw.unit}\t{raw.status}\t{saved}")
        except DriftwatchError as exc:
            trouble = True
            click.echo(f"{raw.host}\t{raw.unit}\t{raw.status if raw.status not in ('ok', 'fallback') else 'error'}"
                       f"\t{exc}", err=False)
            click.echo(f"driftwatch: {exc}", err=True)
    return trouble


# --------------------------------------------------------------------------- baseline
@cli.group()
def baseline():
    """Save, list and show named known-good baselines (baselines/NAME.yaml)."""


_baselines_dir_option = click.option("--baselines-dir", envvar="DRIFTWATCH_BASELINES",
                                     help="Where named baselines live [default: ./baselines].")


@baseline.command("save")
@click.argument("name")
@click.option("--from", "from_snapshot", help="A saved snapshot YAML.")
@click.option("--unit-file", help="A unit file (or saved `systemctl cat` output).")
@click.option("--host", help="Read the unit live from this host.")
@click.option("--unit", help="Unit name on --host (with --unit-file: the unit's name to record).")
@click.option("--host-name", help="Host name to record (for --unit-file), e.g. ct129.")
@click.option("--metric", "metrics", multiple=True, help="Measured figure, e.g. throughput=70 (repeatable).")
@click.option("--note", help="Why this is known-good.")
@click.option("--force", is_flag=True, help="Replace an existing baseline.")
@click.option("--engine-version", help="SGLang release to record with the unit.")
@click.option("--inventory", type=str)
@_baselines_dir_option
@_ssh_options
def baseline_save(name, from_snapshot, unit_file, host, unit, host_name, metrics, note, force, engine_version,
                  inventory, baselines_dir, **ssh):
    """Save NAME from a snapshot, a unit file or a live host."""
    from .baseline import baselines_dir as resolve_dir, parse_metrics, save_baseline
    values = parse_metrics(metrics)
    snap = _one_target(unit_file, host, unit, from_snapshot, None, inventory, ssh, required=True)
    if host_name:
        snap.host = host_name
    if engine_version:
        snap.engine_version = engine_version
    path = save_baseline(resolve_dir(baselines_dir), name, snap, values, note, force)
    click.echo(f"saved baseline {name} to {path}")
    sys.exit(EXIT_OK)


@baseline.command("accept")
@click.argument("name")
@click.option("--unit-file", help="The unit now known to be good (or saved `systemctl cat` output).")
@click.option("--snapshot", "snapshot_file", help="A saved snapshot YAML.")
@click.option("--host", help="Read the unit live from this host (default: the host recorded in the baseline).")
@click.option("--unit", help="Unit on --host (default: the baseline's unit).")
@click.option("--reason", required=True, help="Why today's drift is accepted (kept in the baseline's note).")
@click.option("--metric", "metrics", multiple=True, help="Figures measured on the new unit, e.g. throughput=72.")
@click.option("--keep-metrics", is_flag=True, help="Keep the old metrics (only if the change cannot affect them).")
@click.option("--inventory", type=str)
@_baselines_dir_option
@_ssh_options
def baseline_accept(name, unit_file, snapshot_file, host, unit, reason, metrics, keep_metrics, inventory,
                    baselines_dir, **ssh):
    """Turn today's accepted drift into the new NAME baseline (the old one is replaced atomically)."""
    from .baseline import baselines_dir as resolve_dir, load_baseline, parse_metrics, save_baseline
    directory = resolve_dir(baselines_dir)
    old = load_baseline(name, directory)
    snap = _one_target(unit_file, host, unit or (old.unit if host else None), snapshot_file, None, inventory, ssh,
                       required=False)
    if snap is None:
        if not old.host or not old.unit:
            raise InputError(f"baseline {name} records no host/unit; give --unit-file, --snapshot or --host/--unit")
        from .sources import collect_one
        snap = collect_one(old.host, old.unit, _ssh_settings(ssh), inventory)
    if not snap.host:
        snap.host = old.host
    if snap.source == "file" and not unit and old.unit:
        snap.unit = old.unit  # a local copy of the unit stands for the unit the baseline names
    values = dict(old.metrics) if keep_metrics else {}
    values.update(parse_metrics(metrics))
    note = f"accepted drift on {snap.collected_at}: {reason}" + (f" (was: {old.note})" if old.note else "")
    path = save_baseline(directory, name, snap, values, note, force=True)
    dropped = "" if keep_metrics or not old.metrics else " (old metrics dropped: re-measure and pass --metric)"
    click.echo(f"accepted: baseline {name} in {path} now holds the current unit{dropped}")
    sys.exit(EXIT_OK)


@baseline.command("list")
@_baselines_dir_option
def baseline_list(baselines_dir):
    """Named baselines with their host, unit and metrics."""
    from tabulate import tabulate
    from .baseline import BASELINE_SCHEMA, baselines_dir as resolve_dir, list_baselines
    from .fileio import read_yaml
    directory = resolve_dir(baselines_dir)
    rows = []
    for name in list_baselines(directory):
        try:  # one broken file must not hide the others
            data = read_yaml(directory / f"{name}.yaml", "baseline")
        except DriftwatchError as exc:
            rows.append([name, "-", "-", "-", f"unreadable: {exc}"])
            continue
        if not isinstance(data, dict) or data.get("schema") != BASELINE_SCHEMA:
            rows.append([name, "-", "-", "-", "unreadable: not a driftwatch baseline"])
            continue
        raw_metrics = data.get("metrics") if isinstance(data.get("metrics"), dict) else {}
        metrics = ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}"
                            for k, v in raw_metrics.items())
        rows.append([name, data.get("host") or "-", data.get("unit") or "-", metrics or "-",
                     data.get("saved_at") or "-"])
    if not rows:
        click.echo(f"no baselines in {directory}/", err=True)
    else:
        click.echo(tabulate(rows, headers=["name", "host", "unit", "metrics", "saved"]))
    sys.exit(EXIT_OK)


@baseline.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_baselines_dir_option
def baseline_show(name, fmt, baselines_dir):
    """A baseline's metrics and typed flags."""
    from .baseline import baselines_dir as resolve_dir, load_baseline
    from .show import render_show
    from .sources import snapshot_from_unit_file
    b = load_baseline(name, resolve_dir(baselines_dir), unit_reader=lambda p: snapshot_from_unit_file(p, None, None))
    if fmt == "json":
        from .baseline import baseline_to_dict
        click.echo(json.dumps(baseline_to_dict(b), indent=2, default=str))
    else:
        metrics = ", ".join(f"{k}={v:g}" for k, v in b.metrics.items()) or "none recorded"
        click.echo(f"baseline {b.name}: metrics {metrics}; saved {b.saved_at or '-'} by {b.saved_by or '-'}")
        if b.note:
            click.echo(f"note: {b.note}")
        click.echo(render_show(b.snapshot, "text", False), nl=False)
    sys.exit(EXIT_OK)


# --------------------------------------------------------------------------- compare
@cli.command()
@click.option("--baseline", "baseline_spec", required=True, help="Baseline NAME, a baseline YAML, or a unit file.")
@click.option("--unit-file", help="Current unit file (or saved `systemctl cat` output).")
@click.option("--host", help="Read the current unit live from this host.")
@click.option("--unit", help="Unit on --host (default: the baseline's unit).")
@click.option("--snapshot", "snapshot_file", help="A saved snapshot YAML as the current side.")
@click.option("--baseline-metric", multiple=True, help="Override/add a baseline metric, e.g. throughput=70.")
@click.option("--current-metric", multiple=True, help="A figure measured now, e.g. accept_length=1.75.")
@click.option("--concurrency", type=click.IntRange(1, 100000), help="Client concurrency the prediction is for.")
@click.option("--format", "fmt", type=click.Choice(format_names("comparison")), default="text", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report here (atomically).")
@click.option("--rules", "rules_dir", type=str, help="Directory of extra/overriding rules/*.yaml.")
@click.option("--ignore", "ignores", multiple=True, help="Rule id or key to ignore (repeatable; globs allowed).")
@click.option("--ignore-file", type=str, help="Ignore list [default: ./.driftwatch.yaml when present].")
@click.option("--engine-version", help="Read both sides with this SGLang release's catalog.")
@click.option("--inventory", type=str)
@_baselines_dir_option
@_ssh_options
def compare(baseline_spec, unit_file, host, unit, snapshot_file, baseline_metric, current_metric, concurrency, fmt,
            output, rules_dir, ignores, ignore_file, engine_version, inventory, baselines_dir, **ssh):
    """Compare a unit with a known-good baseline and rank what cost throughput."""
    from .baseline import baselines_dir as resolve_dir, load_baseline, parse_metrics
    from .compare import compare as run_compare
    from .ignore import from_cli, load_ignore_file
    from .report import get_format
    from .report.data import comparison_to_dict
    from .rulebook import load_rules
    from .sources import snapshot_from_unit_file
    b_metrics = parse_metrics(baseline_metric, "--baseline-metric")
    c_metrics = parse_metrics(current_metric, "--current-metric")
    rules = load_rules(rules_dir)
    ignore = from_cli(ignores) + load_ignore_file(ignore_file)
    base = load_baseline(baseline_spec, resolve_dir(baselines_dir),
                         unit_reader=lambda p: snapshot_from_unit_file(p, None, None))
    current = _one_target(unit_file, host, unit or (base.unit if host else None), snapshot_file, None, inventory,
                          ssh, required=False)
    if current is None:
        if not base.host or not base.unit:
            raise InputError(f"baseline {base.name} records no host/unit to read; give --unit-file, --snapshot "
                             "or --host/--unit")
        from .sources import collect_one
        current = collect_one(base.host, base.unit, _ssh_settings(ssh), inventory)
    result = run_compare(base, current, rules, ignore, concurrency, b_metrics, c_metrics, engine_version)
    _emit(get_format(fmt).render_comparison(comparison_to_dict(result)), output)
    sys.exit(EXIT_DRIFT if result.drift else EXIT_OK)


# --------------------------------------------------------------------------- report
@cli.command()
@click.option("--inventory", type=str, help="Inventory of hosts and units to check.")
@click.option("--host", help="One host to check (with --unit).")
@click.option("--unit", help="Unit to read on each host (default: the inventory's units).")
@click.option("--unit-file", "unit_files", multiple=True, help="Local unit file(s) to check (repeatable).")
@click.option("--baseline", "baseline_spec", help="Baseline NAME or PATH (or `baseline:` in the config file).")
@click.option("--email", "email", multiple=True, help="Recipient (repeatable). Without one, nothing is mailed.")
@click.option("--smtp-host", help="SMTP server [default: localhost].")
@click.option("--smtp-port", type=int, help="SMTP port [default: 587 for starttls, 465 for ssl, 25 for plain].")
@click.option("--smtp-user", help="SMTP user (password from $DRIFTWATCH_SMTP_PASSWORD or --smtp-password-file).")
@click.option("--smtp-password-file", type=str, help="File holding the SMTP password (must not be readable by others).")
@click.option("--smtp-starttls", "smtp_security", flag_value="starttls", help="STARTTLS when offered (default).")
@click.option("--smtp-ssl", "smtp_security", flag_value="ssl", help="SMTP over TLS (port 465).")
@click.option("--smtp-plain", "smtp_security", flag_value="plain", help="Never use TLS (local relay only).")
@click.option("--smtp-ca-file", type=str, help="CA bundle to verify the SMTP server's certificate.")
@click.option("--from", "sender", help="From address [default: driftwatch@FQDN].")
@click.option("--subject-prefix", help="Subject prefix [default: [driftwatch]].")
@click.option("--state", help="State file for --only-changes.")
@click.option("--only-changes", is_flag=True, default=None, help="Mail only when the findings differ from the last mail.")
@click.option("--always", is_flag=True, help="Mail even when every host matches.")
@click.option("--format", "fmt", type=click.Choice(format_names("fleet")), default="text", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Also write the report here (atomically).")
@click.option("--quiet", "-q", is_flag=True, help="Do not print the report (still mailed / written).")
@click.option("--config", "config_path", help="Config file [default: ~/.config/driftwatch/config.yaml, /etc/driftwatch/config.yaml].")
@click.option("--concurrency", type=click.IntRange(1, 100000), help="Client concurrency the predictions are for.")
@click.option("--parallel", type=click.IntRange(1, 1024), default=32, show_default=True, help="Hosts read at once.")
@click.option("--rules", "rules_dir", type=str, help="Extra rules directory.")
@click.option("--ignore", "ignores", multiple=True, help="Rule id or key to ignore.")
@click.option("--ignore-file", type=str, help="Ignore list [default: ./.driftwatch.yaml].")
@click.option("--engine-version", help="Read units with this SGLang release's catalog.")
@_baselines_dir_option
@_ssh_options
def report(inventory, host, unit, unit_files, baseline_spec, email, smtp_host, smtp_port, smtp_user,
           smtp_password_file, smtp_security, smtp_ca_file, sender, subject_prefix, state, only_changes, always,
           fmt, output, quiet, config_path, concurrency, parallel, rules_dir, ignores, ignore_file, engine_version,
           baselines_dir, **ssh):
    """Check hosts against a baseline; print, write and mail one drift report (for cron)."""
    from .baseline import baselines_dir as resolve_dir, load_baseline
    from .ignore import from_cli, load_ignore_file
    from .report import get_format
    from .report.data import build_report, compare_entry, entries_from_raws, host_entry
    from .rulebook import load_rules
    from .settings import load_report_settings, merge
    from .sources import collect_live, inventory_targets, raw_to_snapshot, snapshot_from_unit_file
    cli_values = dict(email=email, smtp_host=smtp_host, smtp_port=smtp_port, smtp_user=smtp_user,
                      smtp_password_file=smtp_password_file, smtp_security=smtp_security, smtp_ca_file=smtp_ca_file,
                      sender=sender, subject_prefix=subject_prefix, state=state, only_changes=only_changes,
                      inventory=inventory, baseline=baseline_spec)
    settings = merge(cli_values, load_report_settings(config_path, os.environ))
    if not settings.get("baseline"):
        raise InputError("report needs --baseline NAME (or `baseline:` in the config file)")
    if settings.get("only_changes") and not settings.get("state"):
        raise InputError("--only-changes needs --state FILE (where the last report's fingerprint is kept)")
    rules_loaded = load_rules(rules_dir)
    ignore = from_cli(ignores) + load_ignore_file(ignore_file)
    base = load_baseline(settings["baseline"], resolve_dir(baselines_dir),
                         unit_reader=lambda p: snapshot_from_unit_file(p, None, None))
    entries = []
    for path in unit_files:
        try:
            snap = snapshot_from_unit_file(path, None, engine_version)
            entries.append(compare_entry(base, snap, rules_loaded, ignore, concurrency, engine_version))
        except DriftwatchError as exc:
            entries.append(host_entry("local", path, "error", error=str(exc)))
    targets = []
    if host:
        targets.append((host, unit or base.unit))
    elif settings.get("inventory"):
        targets.extend(inventory_targets(settings["inventory"], unit))
    if not targets and not unit_files:
        raise InputError("nothing to check: give --inventory FILE, --host H --unit U or --unit-file FILE")
    if targets:
        from .collect.unitname import validate_unit_name
        for _, u in targets:
            if not u:
                raise InputError("--host needs --unit (the baseline records none)")
            validate_unit_name(u)
        raws = collect_live(targets, _ssh_settings(ssh, parallel), settings.get("inventory"))
        entries += entries_from_raws(raws, base, rules_loaded, ignore, concurrency, engine_version, raw_to_snapshot)
    doc = build_report(base, entries)
    text = get_format(fmt).render_fleet(doc)
    trouble = doc["summary"]["unreadable"] > 0
    if output:
        from .fileio import write_atomic
        try:
            write_atomic(output, text)
        except DriftwatchError as exc:  # still print and mail the report
            click.echo(f"driftwatch: {exc}", err=True)
            trouble = True
    if not quiet:
        click.echo(text, nl=not text.endswith("\n"))
    for entry in doc["hosts"]:  # even with --quiet: exit 2 must come with a reason cron can mail
        if entry["status"] == "error":
            click.echo(f"driftwatch: {entry['error']}", err=True)
    if settings.get("email"):
        trouble = _mail_report(doc, settings, always, quiet) or trouble
    if trouble:
        sys.exit(EXIT_TROUBLE)
    sys.exit(EXIT_DRIFT if doc["summary"]["drifted"] else EXIT_OK)


def _mail_report(doc: dict, settings: dict, always: bool, quiet: bool) -> bool:
    """Mail the report when warranted; True when delivery failed (said on stderr). Info lines only
    without --quiet: cron mails any output, so a quiet run stays silent unless something is wrong."""
    from .errors import NotifyError
    from .notify.deliver import deliver
    try:
        outcome = deliver(doc, settings, always)
    except NotifyError as exc:
        click.echo(f"driftwatch: {exc}", err=True)
        return True
    if not quiet:
        click.echo(f"driftwatch: {outcome}", err=True)
    return False


@cli.command("cron-example")
@click.option("--inventory", default="/etc/driftwatch/inventory.yaml", show_default=True)
@click.option("--baseline", "baseline_spec", default="70toks", show_default=True)
@click.option("--email", default="gpu-oncall@example.com", show_default=True)
@click.option("--user", default="driftwatch", show_default=True)
def cron_example(inventory, baseline_spec, email, user):
    """Print a crontab entry and a systemd service + timer for daily reports, filled in."""
    from .cron_example import FILES, cron_example as fill
    import shutil
    exe = sys.argv[0] if os.path.isabs(sys.argv[0]) else (shutil.which("driftwatch") or "/usr/local/bin/driftwatch")
    texts = fill(driftwatch=os.path.abspath(exe), inventory=inventory, baseline=baseline_spec, email=email, user=user)
    for kind, text in texts.items():
        click.echo(f"# ---- {FILES.get(kind, kind)}")
        click.echo(text.rstrip("\n") + "\n")
    sys.exit(EXIT_OK)


# --------------------------------------------------------------------------- rules
@cli.group()
def rules():
    """List and document the rules that classify differences."""


@rules.command("list")
@click.option("--rules", "rules_dir", type=str, help="Extra rules directory to merge.")
def rules_list(rules_dir):
    from tabulate import tabulate
    from .rulebook import UNKNOWN_RULE, load_rules
    def cut(items: list[str], width: int = 40) -> str:
        text = ", ".join(items)
        return text if len(text) <= width else text[:width - 1] + "…"

    rows = [[r.id, r.name, r.severity, r.dimension, r.model, cut(r.concepts), cut(r.keys)]
            for r in load_rules(rules_dir) + [UNKNOWN_RULE]]
    click.echo(tabulate(rows, headers=["id", "name", "severity", "dimension", "model", "concepts", "keys"]))
    sys.exit(EXIT_OK)


@rules.command("show")
@click.argument("rule_id")
@click.option("--rules", "rules_dir", type=str, help="Extra rules directory to merge.")
def rules_show(rule_id, rules_dir):
    import fnmatch
    from .concepts import CONCEPTS
    from .engines.registry import ENGINES
    from .rulebook import get_rule, load_rules
    r = get_rule(load_rules(rules_dir), rule_id)
    click.echo(f"{r.id} {r.name}\n  severity:  {r.severity}\n  dimension: {r.dimension}\n  model:     {r.model}")
    # concept -> "SGLang: tp_size" for every registered engine that binds a native field to it
    native: dict[str, list[str]] = {}
    for engine in ENGINES.values():
        for field_name, binding in engine.concept_bindings().items():
            native.setdefault(binding.concept, []).append(
                f"{engine.label or engine.name}: {'not ' if binding.invert else ''}{field_name}")
    first = True
    for pattern in r.concepts:
        for name in [n for n in CONCEPTS if fnmatch.fnmatchcase(n, pattern)]:
            fields = "; ".join(native.get(name, []))
            shown = name if name == pattern else f"{name} (via {pattern})"
            click.echo(f"  {'concepts:' if first else '':<10} {shown}: {CONCEPTS[name]}"
                       + (f" [{fields}]" if fields else ""))
            first = False
    click.echo(f"  keys:      {', '.join(r.keys) or '-'}\n  when:      {r.when}\n  from:      {r.origin}")
    if r.reference:
        click.echo(f"  reference: {r.reference}")
    click.echo(f"\n{r.explanation}")
    sys.exit(EXIT_OK)


def main(argv: list[str] | None = None) -> None:
    """Entry point: DriftwatchError -> one stderr line + its exit code; never a traceback."""
    try:
        rv = cli.main(args=argv, prog_name="driftwatch", standalone_mode=False)
        sys.exit(rv if isinstance(rv, int) else EXIT_OK)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"driftwatch: {exc.format_message()}", err=True)
        sys.exit(EXIT_TROUBLE)
    except click.exceptions.Abort:
        click.echo("driftwatch: aborted", err=True)
        sys.exit(EXIT_TROUBLE)
    except DriftwatchError as exc:
        click.echo(f"driftwatch: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("driftwatch: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(EXIT_TROUBLE)
    except Exception as exc:  # noqa: BLE001 - last resort: one line, never a traceback
        if os.environ.get("DRIFTWATCH_DEBUG"):
            raise
        click.echo(f"driftwatch: internal error: {type(exc).__name__}: {exc} "
                   "(set DRIFTWATCH_DEBUG=1 for a traceback)", err=True)
        sys.exit(EXIT_TROUBLE)
