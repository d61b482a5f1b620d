"""Markdown compare report (for tickets and chat)."""
from __future__ import annotations

from tabulate import tabulate

from ..compare import Comparison, display_pair
from .common import header_lines, impact_text, summary


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(c: Comparison) -> str:
    out = [f"## driftwatch: {c.current.host or c.current.unit} vs baseline `{c.baseline.name}`", ""]
    out += [f"- {_cell(line)}" for line in header_lines(c)]
    out += ["", f"**{_cell(summary(c))}**", ""]
    if c.findings:
        rows = []
        for f in c.findings:
            base, cur = display_pair(f.difference)
            rows.append([f.rank, f"`{_cell(f.difference.label)}`", _cell(base), _cell(cur), _cell(impact_text(f)),
                         f"{f.rule.id}: {_cell(f.explanation)}"])
        out.append(tabulate(rows, headers=["#", "flag", "baseline", "current", "impact", "explanation"],
                            tablefmt="github"))
        out.append("")
    for f in c.ignored:
        out.append(f"- ignored `{_cell(f.difference.label)}` ({f.rule.id}): {_cell(f.ignored_because)}")
    for note in c.notes:
        out.append(f"- note: {_cell(note)}")
    return "\n".join(out).rstrip() + "\n"
