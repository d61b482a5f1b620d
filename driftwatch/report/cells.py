"""Table cells wrapped before tabulate sees them: tabulate wraps a long word by measuring the rest of
it once per piece (quadratic: a 400 KB value took 30 s to show). A cell longer than LONG is cut here
into lines that fit its column, in one pass; tabulate then finds nothing left to wrap. Shorter cells
are left to tabulate, so ordinary tables read exactly as before."""
from __future__ import annotations

from typing import Any, Sequence

LONG = 1000
SHOWN = 4000  # a cell longer than this shows its head and its length (--format json has it all)


def _wrap_line(line: str, width: int) -> list[str]:
    """Greedy word wrap of one line, words longer than `width` cut into pieces: linear in the line."""
    out: list[str] = []
    current = ""
    for word in line.split(" "):
        while len(word) > width:
            if current:
                out.append(current)
                current = ""
            out.append(word[:width])
            word = word[width:]
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current += " " + word
        else:
            out.append(current)
            current = word
    if current:
        out.append(current)
    return out


def prewrap(rows: Sequence[Sequence[Any]], widths: Sequence[int | None] | None) -> list[list[Any]]:
    """`rows` with every cell longer than LONG characters wrapped to its column's width."""
    if not widths:
        return [list(row) for row in rows]
    out = []
    for row in rows:
        cells = list(row)
        for i, cell in enumerate(cells):
            width = widths[i] if i < len(widths) else None
            if width and isinstance(cell, str) and len(cell) > LONG:
                if len(cell) > SHOWN:
                    cell = f"{cell[:SHOWN]} … ({len(cell)} characters in all; --format json shows every one)"
                cells[i] = "\n".join(piece for line in cell.split("\n") for piece in _wrap_line(line, width))
        out.append(cells)
    return out
