"""Command line: each command parses its options, calls one use case (driftwatch/run/), prints
the result and exits with its code. No use case lives here.

Exit codes as diff(1): 0 no drift, 1 drift, 2 trouble. Every error is one line on stderr.

__init__.py   the group (--config, --engine-config, --version) and `main`: an error -> one line + its exit code
config.py     the config file for every command: its keys as the options' defaults (click's default_map)
options.py    the shared option decorators (SSH, --catalog-dir, --baselines-dir, model/GPU facts)
              and the printing helpers (Voice, terminal width, --output)
inspect.py    show, check              one unit, as read and as the engine would start it
drift.py      compare, report          units against a known-good baseline, one or a fleet
store.py      snapshot, prune, history the snapshot store filled, trimmed, read back
baselines.py  baseline save|accept|list|show
rules.py      rules list|show
cron.py       cron-example
"""
from __future__ import annotations

import json
import os
import sys

import click

from .. import __version__
from ..engines.files import ENV_VAR
from ..errors import EXIT_OK, EXIT_TROUBLE, DriftwatchError
from ..gctune import fewer_collections
from . import config
from .baselines import baseline_group
from .calibration import calibration
from .cron import cron_example
from .drift import compare, report
from .inspect import check, show
from .options import EngineFilesGiven
from .restore import restore
from .rules import rules_group
from .snapshots import history, prune, snapshot
from .store import store_group


class _ConfiguredGroup(click.Group):
    """The group that hands the words after the command to config.py (`--config` may be among them)."""

    def resolve_command(self, ctx, args):
        config.remember_args(ctx, args)
        return super().resolve_command(ctx, args)


@click.group(cls=_ConfiguredGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="driftwatch")
@click.option("--config", "config_path", help="Config file for every command [default: "
              "~/.config/driftwatch/config.yaml, /etc/driftwatch/config.yaml; also $DRIFTWATCH_CONFIG]; "
              "also accepted after the command (docs/config.md).")
@click.option("--engine-config", "engine_configs", multiple=True, metavar="[PATH=]FILE",
              help="The YAML a vLLM unit reads with `--config PATH`, for units read offline: FILE serves every "
                   "--config, PATH=FILE only `--config PATH` (repeatable; also $DRIFTWATCH_ENGINE_CONFIG).")
@click.pass_context
def cli(ctx, config_path=None, engine_configs=()):
    """Find configuration drift in SGLang and vLLM servers run as systemd units, and explain which
    difference cost the throughput.

    Exit codes: 0 no drift, 1 drift found, 2 trouble (bad input, unreadable host, unreadable config file)."""
    settings = config.load(ctx, cli, config_path)
    from_env = os.environ.get(ENV_VAR, "")
    if not engine_configs and not from_env.strip() and settings.get("engine_config"):
        engine_configs = settings["engine_config"]
        engine_configs = [engine_configs] if isinstance(engine_configs, str) else engine_configs
    ctx.obj = EngineFilesGiven(tuple(engine_configs), from_env)  # read by the commands that read units (options.py)


for _command in (show, check, snapshot, prune, history, store_group, baseline_group, compare, report, cron_example,
                 rules_group, restore, calibration):
    cli.add_command(_command)
config.prepare(cli)


ERROR_SCHEMA = "driftwatch.error/v1"


def _wants_json(argv: list[str]) -> bool:
    """Whether the command line asks for `--format json` (errors are then JSON on stdout too)."""
    for i, word in enumerate(argv):
        if word == "--":
            break
        if word == "--format=json" or (word == "--format" and i + 1 < len(argv) and argv[i + 1] == "json"):
            return True
    return False


def _fail(message: str, code: int, as_json: bool) -> None:
    """One line on stderr; under --format json also {"schema": "driftwatch.error/v1", …} on stdout."""
    message = " ".join(str(message).split())
    if as_json:
        click.echo(json.dumps({"schema": ERROR_SCHEMA, "error": message, "exit_code": code}))
    click.echo(f"driftwatch: {message}", err=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: DriftwatchError -> one stderr line + its exit code; never a traceback."""
    fewer_collections()
    try:
        _main(argv)
    finally:
        redact = sys.modules.get("driftwatch.redact")  # a run that fingerprinted nothing never imported it
        key_problem = redact.key_problem if redact is not None else []
        if key_problem:  # the fingerprint key could not be kept: say so once
            click.echo(f"driftwatch: warning: {key_problem[0]}", err=True)
            key_problem.clear()


def _main(argv: list[str] | None = None) -> None:
    as_json = _wants_json(list(sys.argv[1:] if argv is None else argv))
    from .params import argv_problem  # bytes that are not UTF-8: one line, before any file is named
    if argv_problem(list(sys.argv[1:] if argv is None else argv)):
        _fail(str(argv_problem(list(sys.argv[1:] if argv is None else argv))), EXIT_TROUBLE, as_json)
    try:
        rv = cli.main(args=argv, prog_name="driftwatch", standalone_mode=False)
        sys.exit(rv if isinstance(rv, int) else EXIT_OK)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        _fail(exc.format_message(), EXIT_TROUBLE, as_json)
    except click.exceptions.Abort:
        _fail("aborted", EXIT_TROUBLE, as_json)
    except DriftwatchError as exc:
        _fail(str(exc), exc.exit_code, as_json)
    except KeyboardInterrupt:
        click.echo("driftwatch: interrupted", err=True)
        # Leave at once: a host thread still connecting would otherwise hold the interpreter's exit
        # (every write is temp file + rename in the main thread, so nothing is half-written).
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(130)
    except BrokenPipeError:
        sys.exit(EXIT_TROUBLE)
    except Exception as exc:  # noqa: BLE001 - last resort: one line, never a traceback
        from .params import path_error_line  # a path the system refuses (too long, NUL): bad input, exit 2
        if path_error_line(exc):
            _fail(str(path_error_line(exc)), EXIT_TROUBLE, as_json)
        if os.environ.get("DRIFTWATCH_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set DRIFTWATCH_DEBUG=1 for a traceback)",
              EXIT_TROUBLE, as_json)
