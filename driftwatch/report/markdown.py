"""Markdown (tickets, chat, pull requests): GitHub tables, every value escaped."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from . import view, wording as w
from .interface import Format

if TYPE_CHECKING:
    from .document import ComparisonDoc, FleetReportDoc, HistoryDoc

_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")


def md(text: str) -> str:
    """Text for a paragraph or a table cell: ASCII punctuation that means markup is backslash-escaped."""
    return _SPECIAL.sub(r"\\\1", w.clean(text))


def code(text: str) -> str:
    """A code span that no backtick inside can end early; pipes escaped so a table cell holds."""
    text = w.clean(text).replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table(headers: list[str], rows: Iterable[list[str]]) -> list[str]:
    """A GitHub table; `rows` hold already-escaped cells."""
    out = ["| " + " | ".join(md(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


class MarkdownFormat(Format):
    name = "markdown"
    media_type = "text/markdown"
    suffix = ".md"

    def render_comparison(self, doc: ComparisonDoc) -> str:
        out = [f"## driftwatch: {md(w.comparison_title(doc))}", ""]
        out += [f"- {md(line)}" for line in w.comparison_header(doc)]
        if w.comparison_summary(doc):
            out += ["", f"**{md(w.comparison_summary(doc))}**"]
        out.append("")
        findings = view.comparison_findings(doc)
        if findings:
            rows = [[md(w.rank_text(f)), code(w.finding_name(f)), *(md(v) for v in w.finding_pair(f)),
                     md(w.impact_text(f)), md(w.rule_explanation(f))] for f in findings]
            out += table(w.FINDING_COLUMNS, rows) + [""]
            details = w.details_lines(findings)
            if details:
                out += [f"- {md(d)}" for d in details] + [""]
        out += [f"- ignored {md(w.ignored_text(f))}" for f in view.comparison_ignored(doc)]
        out += [f"- **warning:** {md(n)}" for n in view.comparison_warnings(doc)]
        out += [f"- note: {md(n)}" for n in view.comparison_notes(doc)]
        return "\n".join(out).rstrip() + "\n"

    def render_fleet(self, doc: FleetReportDoc, brief: bool = False) -> str:  # one layout
        lines = [f"# driftwatch: {md(w.headline(doc))}", "", f"Baseline: {md(w.baseline_line(doc))}  "]
        if doc.get("generated_at"):
            lines.append(f"Generated: {md(str(doc['generated_at']))}  ")
        lines += [" · ".join(w.count_parts(doc)).capitalize(), ""]
        groups = view.shared_groups(doc)
        if groups:
            lines += [f"## {md(w.groups_heading(doc))}", ""]
            for g in groups:
                lines += [f"{g['group']}. **{md(w.group_title(g))}**  ", f"   {md(w.impact_text(g))}; hosts: "
                          f"{md(w.group_hosts_text(g))}  ", f"   {md(w.explanation_lead(g))}"]
                if w.explanation_details(g):  # the terms behind the number, once with the group
                    lines[-1] += "  "
                    lines.append(f"   details: {md(w.explanation_details(g))}")
                if w.restore_command(g, doc):
                    lines[-1] += "  "
                    lines.append(f"   to restore: `{w.restore_command(g, doc)}`")
            lines.append("")
        rows = [[md(c) for c in row] for row in w.fleet_rows(doc)]
        lines += table(w.FLEET_COLUMNS, rows) if rows else ["*(no hosts in this report)*"]
        def section(h: dict) -> tuple:  # units whose sections read the same share one
            return f"{md(view.status(h))}, predicted {md(w.predicted(h))}", tuple(self._host_body(h))

        for (head, body), hs in view.alike_sections(doc, section):
            if len(hs) == 1:
                lines += ["", f"## {md(w.host_title(hs[0]))}: {head}", ""]
            else:
                lines += ["", f"## {len(hs)} units with the same findings: {head}", "",
                          f"Units: {md(w.hosts_text(hs))}", ""]
            lines += list(body)
        errors = view.unreadable_hosts(doc)
        if errors:
            lines += ["", f"## Unreadable hosts ({len(errors)})", ""]
            lines += [f"- {md(w.host_title(h))}: {md(w.host_error(h))}" for h in errors]
        return "\n".join(lines).rstrip() + "\n"

    def _host_body(self, h: dict) -> list[str]:
        """A drifted host's section below its heading: summary, warnings, the findings told once
        above (one line each), a table of the others, their details."""
        lines: list[str] = []
        summary = w.comparison_summary(view.comparison(h))
        if summary:
            lines += [md(summary), ""]
        warnings = view.comparison_warnings(view.comparison(h))
        if warnings:
            lines += [f"- **warning:** {md(x)}" for x in warnings] + [""]
        told = [f for f in view.findings(h) if w.group_ref(f)]
        lines += [f"- {md(w.finding_name(f))}: {md(w.finding_change(f))} {md(w.group_ref(f))}"
                  + (f" ({md(w.finding_history(f))})" if w.finding_history(f) else "") for f in told]
        if told:
            lines.append("")
        rows = [[md(w.rank_text(f)), md(w.finding_name(f)), *(md(v) for v in w.finding_pair(f)),
                 md(w.impact_text(f) + (f" [{w.rule_tag(f)}]" if w.rule_tag(f) else "")),
                 md(w.explanation_lead(f) + (f" ({w.finding_history(f)})" if w.finding_history(f) else ""))]
                for f in view.findings(h) if not w.group_ref(f)]
        lines += table(w.FINDING_COLUMNS, rows) if rows else ([] if told else ["*(no findings listed)*"])
        details = w.details_lines([f for f in view.findings(h) if not w.group_ref(f)])  # a group's: above
        if details:
            lines += [""] + [f"- {md(d)}" for d in details]
        return lines

    def render_history(self, doc: HistoryDoc) -> str:
        lines = ["# driftwatch history", ""] + [f"- {md(line)}" for line in w.history_header(doc)]
        units = [u for u in doc.get("units") or [] if isinstance(u, dict)]
        if not units:
            lines += ["", "*(no snapshots in the store for this selection)*"]
        for u in units:
            lines += ["", f"## {md(w.history_unit_title(u))}", ""]
            rows = [[md(r[0]), code(r[1]), md(r[2]), md(r[3])] for r in w.history_rows(u)]
            lines += table(w.HISTORY_COLUMNS, rows) if rows else ["*(no changes)*"]
            judged = {"baseline": u["baseline"]} if isinstance(u.get("baseline"), dict) else doc  # own, or the run's
            if isinstance(judged.get("baseline"), dict):
                findings = [f for f in u.get("findings") or [] if isinstance(f, dict)]
                lines += ["", f"Findings of the newest snapshot against {md(w.baseline_name(judged))}:" if findings
                          else f"No drift from {md(w.baseline_name(judged))} in the newest snapshot.", ""]
                lines += [f"{md(w.rank_text(f))}. {md(w.history_finding(f))}" for f in findings]
        problems = [p for p in doc.get("problems") or [] if p]
        if problems:
            lines += ["", "## Skipped", ""] + [f"- {md(p)}" for p in problems]
        return "\n".join(lines).rstrip() + "\n"
