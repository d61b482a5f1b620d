"""Plain-text compare report: a ranked table and a one-paragraph summary."""
from __future__ import annotations

from tabulate import tabulate

from ..compare import Comparison, display_pair
from .common import header_lines, impact_text, summary


def render(c: Comparison) -> str:
    lines = header_lines(c) + [""]
    if c.findings:
        rows = []
        for f in c.findings:
            base, cur = display_pair(f.difference)
            rows.append([f.rank, f.difference.label, base, cur, impact_text(f), f"{f.rule.id} {f.explanation}"])
        lines.append(tabulate(rows, headers=["#", "flag", "baseline", "current", "impact", "explanation"],
                              tablefmt="simple", maxcolwidths=[None, 30, 22, 22, 24, 70]))
        lines.append("")
    lines.append(summary(c))
    if c.ignored:
        lines.append("ignored: " + "; ".join(f"{f.difference.label} ({f.rule.id}: {f.ignored_because})"
                                             for f in c.ignored))
    for note in c.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"
