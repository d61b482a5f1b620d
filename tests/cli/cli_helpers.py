"""Shared constants and assertions for the CLI tests (imported by name; conftest holds the fixtures)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

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
