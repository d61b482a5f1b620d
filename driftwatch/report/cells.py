"""Table cells wrapped before tabulate sees them: tabulate wraps a long word by measuring the rest of
it once per piece (quadratic: a 400 KB value took 30 s to show). A cell longer than LONG is cut here
into lines that fit its column, in one pass; tabulate then finds nothing left to wrap. Shorter cells
are left to tabulate, so ordinary tables read exactly as before."""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

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


# What tabulate spends a long table's time on, for nothing: typing every cell of a column that one cell
# already makes text, and wrapping cells that fit (a 20 000-key JSON value showed 20 000 rows in 3.4 s,
# two thirds of it there). `fast_table` asks it for neither where the answer cannot change.
_NUMBER_CHARS = frozenset("0123456789+-.,_ eEiInNfFaAtTyYxXoObBcCdD")  # a superset of what int()/float() read
_NEVER_IN_A_NUMBER = re.compile("[" + re.escape("".join(c for c in map(chr, range(33, 127))
                                                        if c not in _NUMBER_CHARS)) + "]")


def _surely_text(cell: Any) -> bool:
    """A cell tabulate types as text whatever the others are: not a number, a boolean or empty."""
    return (type(cell) is str and "\x1b" not in cell and cell not in ("True", "False")
            and _NEVER_IN_A_NUMBER.search(cell) is not None)


def _fits(cell: Any, width: int) -> bool:
    """A cell tabulate's wrapping to `width` leaves as it is (one printable ASCII line that fits, not
    "False", which its wrapping turns into "True")."""
    return cell is None or (type(cell) is str and len(cell) <= width and cell.isascii() and cell.isprintable()
                            and cell == cell.strip() and cell != "False")


def fast_table(rows: Sequence[Sequence[Any]], headers: Sequence[str],
               maxcolwidths: Sequence[int | None] | None = None, **kwargs: Any) -> str:
    """``tabulate(rows, headers, maxcolwidths=maxcolwidths, **kwargs)``, the same text (a property test
    holds it to that), without typing the cells of a column one cell already makes text nor wrapping a
    column whose every cell fits."""
    from tabulate import tabulate  # lazy: expensive (~15 ms); JSON and other formats never draw a table
    rows = [list(row) for row in rows]
    columns = list(zip(*rows, strict=False)) if rows else []  # truncating, as before
    caps = list(maxcolwidths or [None] * len(columns)) + [None] * len(columns)
    text_columns = []
    widths: list[int | None] = []
    for i, column in enumerate(columns):
        cap = caps[i]
        long_cells = [] if cap is None else [c for c in column if not _fits(c, cap)]
        # numbers are never wrapped while parsed: only a column whose long cells are text stops parsing
        if any(map(_surely_text, column)) and all(map(_surely_text, long_cells)):
            text_columns.append(i)
        widths.append(cap if long_cells else None)
    if "disable_numparse" not in kwargs and text_columns:
        kwargs["disable_numparse"] = text_columns
    if maxcolwidths is not None:
        kwargs["maxcolwidths"] = widths if any(w is not None for w in widths) else None
    return tabulate(rows, headers=list(headers), **kwargs)
