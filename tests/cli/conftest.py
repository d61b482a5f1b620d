"""CLI test fixtures: the entry point `driftwatch.cli.main` in-process by default (`dw`), the installed
console script in a new process for the tests whose subject is the process (`dw_script`), and CliRunner
on the click group `cli` (`invoke`)."""
from __future__ import annotations

import pytest
from cli_helpers import Run, run_in_process, run_script
from click.testing import CliRunner

from driftwatch.cli import cli


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """Text output fits `COLUMNS` when it is set: the tests expect the fixed layout unless they set it."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def dw(tmp_path):
    """dw(*args, cwd=None, env=None, input=None) -> Run: `driftwatch.cli.main` in this process (cwd tmp_path)."""

    def run(*args, cwd=None, env=None, input=None) -> Run:
        return run_in_process(*args, cwd=cwd or tmp_path, env=env, input=input)

    return run


@pytest.fixture
def dw_script(tmp_path):
    """dw_script(*args, cwd=None, env=None, input=None) -> Run: the installed console script, as users run it."""

    def run(*args, cwd=None, env=None, input=None) -> Run:
        return run_script(*args, cwd=cwd or tmp_path, env=env, input=input)

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
