"""Plain text (terminal, cron output, the mail's text part): tables via tabulate."""
from __future__ import annotations

import textwrap

from tabulate import tabulate

from . import view
from . import wording as w
from .interface import Format


def _wrap(text: str, indent: str, width: int = 78) -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent,
                         break_long_words=True, break_on_hyphens=False) or [indent.rstrip()]


class TextFormat(Format):
    name = "text"
    media_type = "text/plain"
    suffix = ".txt"

    def render_comparison(self, doc: dict) -> str:
        """Header lines, the ranked table, the summary paragraph, ignored findings and notes."""
        lines = w.comparison_header(doc) + [""]
        findings = view.comparison_findings(doc)
        if findings:
            rows = [[w.rank_text(f), w.finding_name(f), *w.finding_pair(f), w.impact_text(f),
                     w.rule_explanation(f)] for f in findings]
            lines.append(tabulate(rows, headers=w.FINDING_COLUMNS, tablefmt="simple",
                                  maxcolwidths=[None, 30, 22, 22, 24, 70]))
            lines.append("")
        if w.comparison_summary(doc):
            lines.append(w.comparison_summary(doc))
        ignored = view.comparison_ignored(doc)
        if ignored:
            lines.append("ignored: " + "; ".join(w.ignored_text(f) for f in ignored))
        lines += [f"warning: {w.clean(n)}" for n in view.comparison_warnings(doc)]
        lines += [f"note: {w.clean(n)}" for n in view.comparison_notes(doc)]
        return "\n".join(lines) + "\n"

    def render_fleet(self, doc: dict) -> str:
        """Headline, counts, the host table, each drifted host's findings, unreadable hosts."""
        lines = [f"driftwatch report: {w.headline(doc)}", f"baseline: {w.baseline_line(doc)}"]
        if doc.get("generated_at"):
            lines.append(f"generated: {w.clean(doc['generated_at'])}")
        lines += [", ".join(w.count_parts(doc)), ""]
        rows = w.fleet_rows(doc)
        if rows:
            lines.append(tabulate(rows, headers=w.FLEET_COLUMNS, tablefmt="simple", disable_numparse=True))
        else:
            lines.append("(no hosts in this report)")
        for h in view.detailed_hosts(doc):
            lines += ["", f"== {w.host_title(h)}: {view.status(h)}, predicted {w.predicted(h)}"]
            summary = w.comparison_summary(view.comparison(h))
            if summary:
                lines += _wrap(summary, "   ")
            fs = view.findings(h)
            if not fs:
                lines.append("   (no findings listed)")
            for f in fs:
                tag = w.rule_tag(f)
                lines.append(f"{w.rank_text(f):>3}. {w.finding_name(f)}: {w.finding_change(f)}")
                lines.append(f"     impact: {w.impact_text(f)}" + (f"  [{tag}]" if tag else ""))
                if f.get("explanation"):
                    lines += _wrap(w.explanation_text(f), "     ")
        errors = view.unreadable_hosts(doc)
        if errors:
            lines += ["", f"== Unreadable hosts ({len(errors)})"]
            lines += [f"   {w.host_title(h)}: {w.host_error(h)}" for h in errors]
        return "\n".join(lines).rstrip() + "\n"
