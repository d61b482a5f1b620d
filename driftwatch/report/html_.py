"""HTML that mail clients show as sent: one complete document, tables, inline styles only.

No links, no images, no scripts, no external or embedded style sheets; every value escaped. Written
well-formed (XHTML-compatible) so it parses as XML too.
"""
from __future__ import annotations

import html
from typing import Iterable

from . import view
from . import wording as w
from .interface import Format

_FONT = "font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif"
_MONO = "font-family:ui-monospace,Menlo,Consolas,'Liberation Mono',monospace"
_TABLE = "border-collapse:collapse;margin:8px 0 16px 0;font-size:13px"
_TH = "text-align:left;padding:6px 10px;border:1px solid #d0d7de;background:#f6f8fa;font-weight:600"
_TD = "text-align:left;vertical-align:top;padding:6px 10px;border:1px solid #d0d7de"
_H1 = "font-size:18px;margin:0 0 8px 0"
_H2 = "font-size:16px;margin:16px 0 4px 0"
_P = "margin:0 0 4px 0"
_MUTED = "color:#57606a"
_STATUS_STYLE = {
    "drift": "color:#b42318;background:#fee4e2",
    "error": "color:#93370d;background:#fef0c7",
    "clean": "color:#067647;background:#dcfae6",
}


def esc(value) -> str:
    """Escaped text of one display line (control characters shown as escapes)."""
    return html.escape(w.clean(value), quote=True)


def _badge(status: str) -> str:
    style = _STATUS_STYLE.get(status, "color:#344054;background:#f2f4f7")
    return f'<span style="{style};padding:1px 6px;border-radius:3px;font-weight:600">{esc(status)}</span>'


def _table(headers: list[str], rows: list[list[str]], mono_cols: Iterable[int] = ()) -> list[str]:
    """`rows` hold already-escaped HTML cell contents."""
    mono = set(mono_cols)
    out = [f'<table style="{_TABLE}">', "<tr>" + "".join(f'<th style="{_TH}">{esc(h)}</th>' for h in headers) + "</tr>"]
    for row in rows:
        cells = [f'<td style="{_TD + (";" + _MONO if i in mono else "")}">{cell}</td>' for i, cell in enumerate(row)]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return out


def _document(title: str, body: list[str]) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8" />',
        '<meta name="viewport" content="width=device-width, initial-scale=1" />',
        f"<title>driftwatch: {esc(title)}</title>",
        "</head>",
        f'<body style="margin:0;padding:16px;{_FONT};font-size:14px;line-height:1.4;color:#1f2328;background:#ffffff">',
        f'<h1 style="{_H1}">driftwatch: {esc(title)}</h1>',
        *body,
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _finding_rows(findings: list[dict]) -> list[list[str]]:
    rows = []
    for f in findings:
        tag = w.rule_tag(f)
        impact = esc(w.impact_text(f)) + (f'<br /><span style="{_MUTED}">{esc(tag)}</span>' if tag else "")
        if w.finding_history(f):
            impact += f'<br /><span style="{_MUTED}">{esc(w.finding_history(f))}</span>'
        base, cur = w.finding_pair(f)
        explanation = esc(w.explanation_lead(f))
        if w.explanation_details(f):  # the terms behind the number, quieter than the sentence
            explanation += f'<br /><span style="{_MUTED};font-size:12px">Details: {esc(w.explanation_details(f))}</span>'
        rows.append([esc(w.rank_text(f)), esc(w.finding_name(f)), esc(base), esc(cur), impact, explanation])
    return rows


def _list(items: list[str]) -> list[str]:
    return ['<ul style="margin:0;padding-left:20px">', *(f"<li>{i}</li>" for i in items), "</ul>"]


class HtmlFormat(Format):
    name = "html"
    media_type = "text/html"
    suffix = ".html"

    def render_comparison(self, doc: dict) -> str:
        body = [f'<p style="{_P}">{esc(line)}</p>' for line in w.comparison_header(doc)]
        body.append(f'<p style="margin:8px 0 4px 0">{_badge("drift" if view.drift(doc) else "clean")}</p>')
        if w.comparison_summary(doc):
            body.append(f'<p style="margin:0 0 12px 0"><strong>{esc(w.comparison_summary(doc))}</strong></p>')
        findings = view.comparison_findings(doc)
        if findings:
            body += _table(w.FINDING_COLUMNS, _finding_rows(findings), mono_cols=(1, 2, 3))
        ignored = view.comparison_ignored(doc)
        if ignored:
            body.append(f'<h2 style="{_H2}">Ignored ({len(ignored)})</h2>')
            body += _list([esc(w.ignored_text(f)) for f in ignored])
        warnings = view.comparison_warnings(doc)
        if warnings:
            body.append(f'<h2 style="{_H2}">Warnings</h2>')
            body += _list([esc(n) for n in warnings])
        notes = view.comparison_notes(doc)
        if notes:
            body.append(f'<h2 style="{_H2}">Notes</h2>')
            body += _list([esc(n) for n in notes])
        return _document(w.comparison_title(doc), body)

    def render_fleet(self, doc: dict, brief: bool = False) -> str:
        """The report; `brief`: without the per-host sections (the mail's summary when the full
        report is attached)."""
        body = [f'<p style="{_P}">Baseline: <strong>{esc(w.baseline_line(doc))}</strong></p>']
        if doc.get("generated_at"):
            body.append(f'<p style="{_P};{_MUTED}">Generated: {esc(doc["generated_at"])}</p>')
        body.append(f'<p style="margin:0 0 12px 0">{esc(" · ".join(w.count_parts(doc)).capitalize())}</p>')
        if brief:
            body.append(f'<p style="{_P}"><strong>{esc(w.ATTACHED_TEXT)}</strong></p>')
        groups = view.shared_groups(doc)
        if groups:
            body.append(f'<h2 style="{_H2}">{esc(w.groups_heading(doc))}</h2>')
            rows = []
            for g in groups:
                base, cur = w.finding_pair(g)
                rows.append([esc(str(g.get("group"))), esc(w.finding_name(g)) + (
                    f'<br /><span style="{_MUTED}">from {esc(g["origin"])}</span>' if g.get("origin") else ""),
                             esc(base), esc(cur), esc(w.impact_text(g)),
                             esc(w.explanation_lead(g)) + f'<br /><span style="{_MUTED}">'
                             f'{esc(w.group_count_text(g))}: {esc(w.group_hosts_text(g))}</span>'
                             + (f'<br /><span style="{_MUTED}">{esc(w.restore_line(g, doc))}</span>'
                                if w.restore_line(g, doc) else "")])
            body += _table(w.GROUP_COLUMNS, rows, mono_cols=(1, 2, 3))
        hosts = view.ordered_hosts(doc)
        if hosts:
            rows = [[esc(h.get("host") or "?"), esc(h.get("unit") or "?"), _badge(view.status(h)),
                     esc(w.top_finding(h)), esc(w.predicted(h))] for h in hosts]
            body += _table(w.FLEET_COLUMNS, rows, mono_cols=(3,))
        else:
            body.append("<p><em>(no hosts in this report)</em></p>")
        for h in [] if brief else view.detailed_hosts(doc):
            body.append(f'<h2 style="{_H2}">{esc(w.host_title(h))} {_badge(view.status(h))} '
                        f'<span style="font-weight:normal">predicted {esc(w.predicted(h))}</span></h2>')
            summary = w.comparison_summary(view.comparison(h))
            if summary:
                body.append(f'<p style="{_P}">{esc(summary)}</p>')
            for warning in view.comparison_warnings(view.comparison(h)):
                body.append(f'<p style="{_P}"><strong>warning:</strong> {esc(warning)}</p>')
            own = [f for f in view.findings(h) if not w.group_ref(f)]
            told = [f for f in view.findings(h) if w.group_ref(f)]
            if told:  # told once above: one line each here
                body += _list([esc(f"{w.finding_name(f)}: {w.finding_change(f)} {w.group_ref(f)}") + (
                    f'<br /><span style="{_MUTED}">{esc(w.finding_history(f))}</span>' if w.finding_history(f) else "")
                    for f in told])
            rows = _finding_rows(own)
            body += _table(w.FINDING_COLUMNS, rows, mono_cols=(1, 2, 3)) if rows \
                else ([] if told else ["<p><em>(no findings listed)</em></p>"])
        errors = view.unreadable_hosts(doc)
        if errors:
            body.append(f'<h2 style="{_H2}">Unreadable hosts ({len(errors)})</h2>')
            body += _list([f"<strong>{esc(w.host_title(h))}</strong>: {esc(w.host_error(h))}" for h in errors])
        return _document(w.headline(doc), body)
