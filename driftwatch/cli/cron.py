"""`cron-example`: a crontab entry and a systemd service + timer for daily reports, filled in."""
from __future__ import annotations

import os
import sys

import click

from ..errors import EXIT_OK


@click.command("cron-example")
@click.option("--inventory", default="/etc/driftwatch/inventory.yaml", show_default=True,
              help="Inventory the job reads (written as an absolute path).")
@click.option("--baseline", "baseline_spec",
              help="Baseline NAME (in --baselines-dir) or an absolute PATH for every unit "
                   "[default: each unit's own, from the inventory].")
@click.option("--baselines-dir", "cron_baselines_dir", default="/etc/driftwatch/baselines", show_default=True,
              help="Where the job looks up the baseline NAME (written as an absolute path).")
@click.option("--email", default="gpu-oncall@example.com", show_default=True,
              help="Who gets the report: one address or several, comma-separated.")
@click.option("--user", default="driftwatch", show_default=True, help="System user the job runs as.")
@click.option("--driftwatch", "exe", help="The driftwatch executable the job runs [default: this one].")
@click.option("--state-dir", default="/var/lib/driftwatch", show_default=True,
              help="Where the job runs and keeps its snapshot store (STATE/store) and last report.")
@click.option("--prometheus", "prometheus_file",
              help="Textfile the job writes for node_exporter "
                   "(e.g. /var/lib/prometheus/node-exporter/driftwatch.prom).")
def cron_example(inventory, baseline_spec, cron_baselines_dir, email, user, exe, state_dir, prometheus_file):
    """Print a crontab entry and a systemd service + timer for daily reports, filled in.

    Relative paths are made absolute (the job runs in /var/lib/driftwatch, not here). Warns on
    stderr when the executable or a file is under /tmp or in a home directory --user cannot read."""
    from ..notify.cron import FILES, cron_example as fill, path_warnings
    exe = os.path.abspath(os.path.expanduser(exe)) if exe else _this_executable()
    absolute = lambda p: os.path.abspath(os.path.expanduser(p))  # noqa: E731
    baseline_value = absolute(baseline_spec) if baseline_spec and (
        "/" in baseline_spec or baseline_spec.endswith((".yaml", ".yml"))) else baseline_spec
    inventory, cron_baselines_dir, state_dir = absolute(inventory), absolute(cron_baselines_dir), absolute(state_dir)
    prometheus_file = absolute(prometheus_file) if prometheus_file else None
    texts = fill(driftwatch=exe, inventory=inventory, baseline=baseline_value, email=email, user=user,
                 baselines_dir=cron_baselines_dir, state_dir=state_dir, prometheus=prometheus_file)
    paths = {"inventory": inventory, "baselines dir": cron_baselines_dir}
    if baseline_value and baseline_value.startswith("/"):
        paths["baseline"] = baseline_value
    for message in path_warnings(exe, user, paths):
        click.echo(f"driftwatch: warning: {message}", err=True)
    for kind, text in texts.items():
        click.echo(f"# ---- {FILES.get(kind, kind)}")
        click.echo(text.rstrip("\n") + "\n")
    sys.exit(EXIT_OK)


def _this_executable() -> str:
    """The absolute path of the driftwatch script running now (not whatever `driftwatch` PATH finds)."""
    import shutil
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and os.path.basename(argv0).startswith("driftwatch") and os.path.isfile(argv0) \
            and os.access(argv0, os.X_OK):
        return os.path.abspath(argv0)
    beside = os.path.join(os.path.dirname(sys.executable), "driftwatch")  # python -m driftwatch in a venv
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return os.path.abspath(beside)
    found = shutil.which("driftwatch")
    return os.path.abspath(found) if found else "/usr/local/bin/driftwatch"
