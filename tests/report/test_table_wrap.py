"""Issue 34 item 8: at a narrow terminal (COLUMNS=70) the fleet report's host table wrapped its cells
where the column ended, mid-word ("examples/sgl" / "ang-qwen-40t", "--speculative" / "-num-steps",
"(×0.51–0.78" / ", most"). Cells now wrap at spaces; only a token wider than its column is split,
at a `/`, `,`, `–`, `-`, `_` or `.` when it has one. Checked on the console script's real output at
many widths against the same report's unwrapped cells."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from driftwatch.report.text import wrap_cell

REPO = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).parent / "driftwatch"
UNITS = ["sglang-qwen-40toks.service", "vllm-qwen-mtp1-eager.service", "vllm-docker-llama.service",
         "sglang-qwen35-122b-mtp1.service"]


def _report(columns: int) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}
    env.update(COLUMNS=str(columns), NO_COLOR="1")
    args = [str(DW), "report", "--baseline", "70toks", "--baselines-dir", str(REPO / "baselines"), "--no-store"]
    for unit in UNITS:
        args += ["--unit-file", f"examples/{unit}"]  # relative to cwd: the host column is the same in any checkout
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert r.returncode == 1, r.stderr
    return r.stdout


def _table(text: str) -> tuple[list[list[list[str]]], list[int]]:
    """The host table as rows of cells, each cell its lines (columns from the dashed rule)."""
    lines = text.splitlines()
    rule = next(i for i, ln in enumerate(lines) if re.fullmatch(r"-+(  -+)+", ln))
    spans = [m.span() for m in re.finditer(r"-+", lines[rule])]
    body = []
    for ln in lines[rule + 1:]:
        if not ln.strip():
            break
        body.append([ln[a:b if k + 1 < len(spans) else None].strip() for k, (a, b) in enumerate(spans)])
    rows: list[list[list[str]]] = []
    for cells in body:
        if cells[2]:  # the status column never wraps: a row starts where it has a word
            rows.append([[c] if c else [] for c in cells])
        else:
            for col, c in enumerate(cells):
                if c:
                    rows[-1][col].append(c)
    return rows, [b - a for a, b in spans]


def _cuts(lines: list[str], whole: str, width: int) -> list[str]:
    """The words of `whole` that `lines` (one cell, wrapped) cut although they fit `width`."""
    words, bad, carry = whole.split(), [], ""
    pending = iter(words)
    for line in lines:
        frags = line.split(" ")
        for i, frag in enumerate(frags):
            word = carry or next(pending)
            if frag == word:
                carry = ""
            elif word.startswith(frag) and i == len(frags) - 1:
                if len(word) <= width:
                    bad.append(word)
                carry = word[len(frag):]
            else:
                raise AssertionError(f"{lines!r} does not read {whole!r}")
    assert not carry and next(pending, None) is None, (lines, whole)
    return bad


@pytest.fixture(scope="module")
def wide():
    rows, _ = _table(_report(400))
    return [[" ".join(c) for c in row] for row in rows]


@pytest.mark.parametrize("columns", [60, 70, 79, 90, 110])
def test_host_table_cuts_no_word_that_fits(wide, columns):
    text = _report(columns)
    assert all(len(ln) <= columns for ln in text.splitlines()), columns
    rows, widths = _table(text)
    assert len(rows) == len(wide) == len(UNITS)
    cut = [w for row, whole in zip(rows, wide, strict=True) for col, cell in enumerate(row)
           for w in _cuts(cell, whole[col], widths[col])]
    assert not cut, (columns, cut)


def test_the_cuts_seen_at_70_columns_are_gone():
    text = _report(70)
    assert not re.search(r"examples/sgl\s", text) and "(×0.51–0.78\n" not in text
    # a path wider than its column breaks after a / or - , never inside a word
    assert re.search(r"^examples/\s", text, re.M), text


@pytest.mark.parametrize("cell, width, lines", [
    ("--speculative-num-steps 3 → 1", 13, ["--speculative", "-num-steps 3", "→ 1"]),
    ("42.5 tok/s (×0.51–0.78, most likely ×0.61)", 11, ["42.5 tok/s", "(×0.51–", "0.78, most", "likely", "×0.61)"]),
    ("examples/sglang-qwen-40toks.service", 12, ["examples/", "sglang-qwen-", "40toks.", "service"]),
    ("speculative_num_steps", 12, ["speculative_", "num_steps"]),
    ("abcdefghijklmnopqrstuvwxyz", 10, ["abcdefghij", "klmnopqrst", "uvwxyz"]),  # nowhere to break: cut
    ("short words only here", 10, ["short", "words only", "here"]),
    ("fits", 10, ["fits"]),
    ("two\nlines", 10, ["two", "lines"]),
])
def test_wrap_cell(cell, width, lines):
    assert wrap_cell(cell, width).split("\n") == lines
    assert all(len(x) <= width for x in wrap_cell(cell, width).split("\n"))


def test_wrap_cell_leaves_other_cells_alone():
    assert wrap_cell(3, 1) == 3 and wrap_cell("anything at all", None) == "anything at all"
