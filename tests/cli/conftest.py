"""CLI test helpers: the real entry point (`driftwatch.cli.main`) via subprocess, and CliRunner on `cli`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from driftwatch.cli import cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
BASELINES = REPO / "baselines"
DRIFTWATCH = Path(sys.executable).with_name("driftwatch")


class Run:
    def __init__(self, code: int, stdout: str, stderr: str):
        self.code, self.stdout, self.stderr = code, stdout, stderr

    def json(self):
        return json.loads(self.stdout)

    def __repr__(self):
        return f"<exit {self.code}\nstdout: {self.stdout[:2000]}\nstderr: {self.stderr[:2000]}>"


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


def assert_one_line_error(run: Run, *needles: str) -> None:
    """Exit 2, nothing on stdout, exactly one stderr line starting `driftwatch:`, no traceback."""
    assert run.code == 2, run
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout, run
    lines = run.stderr.strip("\n").splitlines()
    assert len(lines) == 1, run
    assert lines[0].startswith("driftwatch: "), run
    assert "internal error" not in lines[0], run
    for needle in needles:
        assert needle in lines[0], (needle, run)
