"""Shared constants and assertions for the CLI tests (imported by name; conftest holds the fixtures)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
BASELINES = REPO / "baselines"
DRIFTWATCH = Path(sys.executable).with_name("driftwatch")
UNIT_70 = EXAMPLES / "sglang-qwen-70toks.service"


def unit_70(*replacements: tuple[str, str]) -> str:
    """The shipped 70 tok/s unit (seed 000) with some of its text replaced (each must be there)."""
    text = UNIT_70.read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    return text


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


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
