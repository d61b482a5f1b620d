"""CLI test helpers: the real entry point (`driftwatch.cli.main`) via subprocess, and CliRunner on `cli`."""
from __future__ import annotations

import os
import subprocess

import pytest
from cli_helpers import DRIFTWATCH, Run
from click.testing import CliRunner

from driftwatch.cli import cli


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """Text output fits `COLUMNS` when it is set: the tests expect the fixed layout unless they set it."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def dw(tmp_path):
    """dw(*args, cwd=None) -> Run: the installed console script (driftwatch.cli.main), as users run it."""

    def run(*args, cwd=None, env=None) -> Run:
        full_env = {k: v for k, v in os.environ.items() if k not in ("DRIFTWATCH_BASELINES", "DRIFTWATCH_DEBUG")}
        full_env.update(env or {})
        proc = subprocess.run([str(DRIFTWATCH), *map(str, args)], cwd=str(cwd or tmp_path), env=full_env,
                              capture_output=True, text=True, timeout=60)
        return Run(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture
def invoke(monkeypatch, tmp_path):
    """invoke(*args) -> Run through click.testing.CliRunner on driftwatch.cli.cli (in-process, fast)."""
    monkeypatch.delenv("DRIFTWATCH_BASELINES", raising=False)
    monkeypatch.chdir(tmp_path)  # no stray ./.driftwatch.yaml or ./baselines from the caller

    def run(*args) -> Run:
        result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
        return Run(result.exit_code, result.stdout, result.stderr)

    return run
