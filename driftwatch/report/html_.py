"""HTML an operator keeps open, and that mail clients show as sent: one complete document.

The fleet report reads top-down: a summary per baseline, the drift several units share (each group
once, its hosts linked), the host table (status, since, predicted), then a section per host with a
stable `id` (`host-<host>--<unit>`) and its own findings. Severity and status are coloured badges
that also say their word. Findings are stacked blocks, not wide tables, and long values break, so a
phone (390 px) never scrolls sideways; the one table (the hosts) scrolls inside its own box, with
a shadow on the edge where more of it is hidden; its timestamps, host and unit names never break.

Inline styles only (mail clients drop style sheets); no scripts, images or external references;
the only links are `#fragment` links inside the document; every value escaped. Written well-formed
(XHTML-compatible) so it parses as XML too.
"""
from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Any

from . import view, wording as w
from .interface import Format

if TYPE_CHECKING:
    from .document import ComparisonDoc, DocumentLike, FleetReportDoc

_FONT = "font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif"
_MONO = "font-family:ui-monospace,Menlo,Consolas,monospace"
# long flags, values and unit lines break anywhere rather than widen the page (set on the body; inherited)
_BREAK = "overflow-wrap:anywhere;word-break:break-word"
# words whole in the table (no mid-word squeeze): a table wider than the page scrolls in its box
_TABLE = "border-collapse:collapse;font-size:13px;min-width:100%;overflow-wrap:normal;word-break:normal"
# The box the host table scrolls in, with a shadow on the side where more of it is hidden (two
# "local" white covers that move with the table over two "scroll" shadows fixed to the box's edges):
# at a phone's width the table's right edge shows a shadow until it is scrolled to its end.
_SCROLL_BOX = ("overflow-x:auto;margin:8px 0 16px 0;background:"
               "linear-gradient(to right,#ffffff 30%,rgba(255,255,255,0)) left center/32px 100% no-repeat local,"
               "linear-gradient(to left,#ffffff 30%,rgba(255,255,255,0)) right center/32px 100% no-repeat local,"
               "radial-gradient(farthest-side at 0 50%,rgba(0,0,0,0.28),rgba(0,0,0,0)) left center/14px 100% "
               "no-repeat scroll,"
               "radial-gradient(farthest-side at 100% 50%,rgba(0,0,0,0.28),rgba(0,0,0,0)) right center/14px 100% "
               "no-repeat scroll")
# what must not break inside a table cell: a timestamp, a unit or host name (the cell widens instead;
# at a phone's width the table scrolls in its box)
_NOWRAP = "white-space:nowrap"
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_TH = "text-align:left;padding:6px 8px;background:#f6f8fa"
_TD = "padding:4px 8px;vertical-align:top"
_TR = "border-top:1px solid #d0d7de"
_H1 = "font-size:20px;margin:0 0 8px 0"
_H2 = "font-size:17px;margin:22px 0 6px 0;padding-bottom:4px;border-bottom:1px solid #d0d7de"
_H3 = "font-size:15px;margin:0 0 2px 0"
_P = "margin:0 0 4px 0"
_MUTED = "color:#57606a"
_SMALL = "color:#57606a;font-size:12px"
_CARD = "border:1px solid #d0d7de;border-radius:6px;padding:8px 10px;margin:8px 0;background:#ffffff"
_SECTION = "border-top:1px solid #d0d7de;padding:8px 0 4px 0"
# severity and status: text colour on a light tint (contrast >= 4.5:1); the word is always shown too
_SEVERITY_STYLE = {
    "critical": ("#ffffff", "#912018"),
    "high": ("#b42318", "#fee4e2"),
    "medium": ("#93370d", "#fef0c7"),
    "low": ("#175cd3", "#d1e9ff"),
    "info": ("#344054", "#f2f4f7"),
}
_STATUS_STYLE = {
    "drift": ("#b42318", "#fee4e2"),
    "error": ("#93370d", "#fef0c7"),
    "clean": ("#067647", "#dcfae6"),
    "no_baseline": ("#344054", "#f2f4f7"),
}
_OTHER = ("#344054", "#f2f4f7")


def esc(value: Any) -> str:
    """Escaped text of one display line (control characters shown as escapes)."""
    return html.escape(w.clean(value), quote=True)


def _pill(text: str, colours: tuple[str, str]) -> str:
    fg, bg = colours
    return f'<b style="color:{fg};background:{bg};padding:0 5px;font-size:12px;white-space:nowrap">{esc(text)}</b>'


def _badge(status: str) -> str:
    """A status badge: 'drift', 'clean', 'error', 'no baseline' on its colour."""
    return _pill(w.STATUS_WORDS.get(status, status), _STATUS_STYLE.get(status, _OTHER))


def _severity(f: dict) -> str:
    severity = f.get("severity")
    if not isinstance(severity, str) or not severity:
        return ""
    return _pill(severity, _SEVERITY_STYLE.get(severity, _OTHER))


def _edge(f: dict) -> str:
    """The card's left edge in the severity's colour (a second cue beside the badge's word)."""
    severity = f.get("severity") if isinstance(f.get("severity"), str) else None
    fg = _SEVERITY_STYLE.get(severity, _OTHER)[0] if severity else "#d0d7de"
    return f"border-left:4px solid {fg}"


def _mono(text: str) -> str:
    return f"<code>{esc(text)}</code>"


def _link(target: str, text_html: str) -> str:
    return f'<a href="#{target}">{text_html}</a>'


def _anchor_ids(hosts: list[dict]) -> dict[int, str]:
    """A stable, unique `id` per (host, unit): 'host-gpu07--sglang-qwen.service'; characters an id
    should not hold become '_', and a clash after that gets '-2', '-3'."""
    ids: dict[int, str] = {}
    taken: set[str] = set()
    for h in hosts:
        raw = f"host-{w.clean(h.get('host') or '?')}--{w.clean(h.get('unit') or '?')}"
        base = re.sub(r"[^A-Za-z0-9._-]", "_", raw)
        anchor, n = base, 1
        while anchor in taken:
            n += 1
            anchor = f"{base}-{n}"
        taken.add(anchor)
        ids[id(h)] = anchor
    return ids


def _table(headers: list[str], rows: list[tuple[str, list[str]]]) -> list[str]:
    """A table that scrolls inside its own box when wider than the page. `rows`: (the row's extra
    attributes, its already-escaped cells)."""
    out = [f'<div style="{_SCROLL_BOX}">', f'<table style="{_TABLE}">',
           "<tr>" + "".join(f'<th style="{_TH}">{esc(h)}</th>' for h in headers) + "</tr>"]
    for attrs, cells in rows:
        out.append(f'<tr{attrs} style="{_TR}">' + "".join(f'<td style="{_TD}">{c}</td>' for c in cells) + "</tr>")
    out += ["</table>", "</div>"]
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
        f'<body style="margin:0;padding:16px;{_FONT};font-size:14px;line-height:1.45;color:#1f2328;'
        f'background:#ffffff;max-width:1100px;{_BREAK}">',
        f'<h1 style="{_H1}">driftwatch: {esc(title)}</h1>',
        *body,
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _finding_card(f: dict) -> str:
    """One finding as a block: rank, severity, flag; baseline → current; impact; history; why."""
    head = " ".join(x for x in (f'<strong>#{esc(w.rank_text(f))}</strong>' if w.rank_text(f) else "",
                                _severity(f), f"<strong>{_mono(w.finding_name(f))}</strong>") if x)
    base, cur = w.finding_pair(f)
    lines = [f'<div style="{_P}">{head}</div>',
             f'<div style="{_P};{_MONO}">{esc(base)} {esc(w.ARROW)} {esc(cur)}</div>']
    tag = w.rule_tag(f)
    lines.append(f'<div style="{_P}">impact: {esc(w.impact_text(f))}'
                 + (f' <span style="{_MUTED}">{esc(tag)}</span>' if tag else "") + "</div>")
    if w.finding_history(f):
        lines.append(f'<div style="{_P};{_MUTED}">{esc(w.finding_history(f))}</div>')
    if w.explanation_lead(f):
        lines.append(f'<div style="{_P}">{esc(w.explanation_lead(f))}</div>')
    if w.explanation_details(f):  # the terms behind the number, quieter than the sentence
        lines.append(f'<div style="{_SMALL}">Details: {esc(w.explanation_details(f))}</div>')
    return f'<div style="{_CARD};{_edge(f)}">' + "".join(lines) + "</div>"


def _list(items: list[str]) -> list[str]:
    return ['<ul style="margin:0 0 8px 0;padding-left:20px">', *(f"<li>{i}</li>" for i in items), "</ul>"]


# --------------------------------------------------------------------------- "since"


def _since_at(f: dict) -> tuple[str, str]:
    """(start of the finding's run, or '', 'new since the last snapshot …', or '')."""
    s = w.as_dict(f.get("since"))
    return (w.clean(s["at"]) if s.get("at") else "", w.since_text(f) if s.get("after") and not s.get("at") else "")


def _since(findings: list[dict], judged: bool) -> str:
    """The earliest start among `findings` ('since 2026-11-28T03:00:00Z'), 'new' when each is new
    since the last snapshot, 'unknown' for drift with no history (no store), '—' for no drift."""
    starts = sorted(a for a, _ in map(_since_at, findings) if a)
    if starts:
        return starts[0]
    if any(n for _, n in map(_since_at, findings)):
        return "new since the last snapshot"
    return "unknown" if judged and findings else w.DASH


def _group_since_text(findings: list[dict], units: int) -> str:
    """When a group's drift began: the earliest start known among its units, saying for how many
    it is known; 'unknown' when none is."""
    starts = sorted(a for a, _ in map(_since_at, findings) if a)
    new = sum(1 for _, n in map(_since_at, findings) if n)
    if starts:
        part = f"; known for {len(starts)} of {units} units" if len(starts) < units else ""
        return f"{starts[0]} (the earliest{part})"
    if new:
        return "new since the last snapshot" + (f" on {new} of {units} units" if new < units else "")
    return "unknown"


def _group_since(doc: DocumentLike) -> dict[int, list[dict]]:
    """Each shared group's member findings (they carry the since of their host)."""
    out: dict[int, list[dict]] = {}
    for h in view.hosts(doc):
        for f in view.findings(h):
            if isinstance(f.get("group"), int):
                out.setdefault(f["group"], []).append(f)
    return out


# --------------------------------------------------------------------------- the fleet report's parts


def _baseline_summary(doc: DocumentLike, anchors: dict[int, str]) -> list[str]:
    """A card per baseline: what it is, its units' counts by status, its worst unit."""
    described = {w.clean(b.get("name")): b for b in view.baselines(doc) if b.get("name")}
    by_name: dict[str, list[dict]] = {}
    for h in view.ordered_hosts(doc):
        if view.status(h) == "no_baseline":
            name = "(no baseline)"
        elif view.status(h) == "error" and w.host_baseline(h) == "none":
            name = "(not read)"
        else:
            name = w.host_baseline(h)
        by_name.setdefault(name, []).append(h)
    order = [n for n in described if n in by_name] + [n for n in by_name if n not in described]
    out = [f'<h2 style="{_H2}">Summary per baseline</h2>']
    for name in order:
        hs = by_name[name]
        label = w.baseline_line({"baseline": described[name]}) if name in described else name
        counts: dict[str, int] = {}
        for h in hs:
            counts[view.status(h)] = counts.get(view.status(h), 0) + 1
        parts = " ".join(f"{_badge(s)}&#160;{n}" for s, n in counts.items())
        lines = [f'<div style="{_P}"><strong>{esc(label)}</strong></div>',
                 f'<div style="{_P}">{len(hs)} unit{"s" if len(hs) != 1 else ""}: {parts}</div>']
        worst = next((h for h in hs if view.status(h) == "drift"), None)
        if worst is not None:
            lines.append(f'<div style="{_P}">worst: {_link(anchors[id(worst)], esc(w.host_title(worst)))}, '
                         f'predicted {esc(w.predicted(worst))}</div>')
        unread = [h for h in hs if view.status(h) == "error"] if name == "(not read)" else []
        if unread:  # the card of units read against no baseline names them, never only counts them
            links = ", ".join(_link(anchor, esc(w.host_title(h))) if (anchor := anchors.get(id(h)))
                              else esc(w.host_title(h)) for h in unread)
            lines.append(f'<div style="{_P}">not read: {links}</div>')
        out.append(f'<div style="{_CARD}">' + "".join(lines) + "</div>")
    return out


def _group_hosts(g: dict, anchors_by_pair: dict[tuple, str]) -> str:
    """'sglang-qwen.service on gpu00, gpu01' with each host linked to its anchor."""
    by_unit: dict[str, list[str]] = {}
    for m in view.group_hosts(g):
        host, unit = w.clean(m.get("host") or "?"), w.clean(m.get("unit") or "?")
        target = anchors_by_pair.get((host, unit))
        by_unit.setdefault(unit, []).append(_link(target, esc(host)) if target else esc(host))
    return "; ".join(f"{esc(unit)} on {', '.join(links)}" for unit, links in by_unit.items())


def _group_cards(doc: DocumentLike, anchors_by_pair: dict[tuple, str]) -> list[str]:
    groups = view.shared_groups(doc)
    if not groups:
        return []
    since = _group_since(doc)
    out = [f'<h2 style="{_H2}">{esc(w.groups_heading(doc))}</h2>']
    for g in groups:
        number = g.get("group")
        members = since.get(number, []) if isinstance(number, int) else []
        lines = [f'<div style="{_P}"><strong>{esc(number)}.</strong> {_severity(g)} '
                 f'<strong style="{_MONO}">{esc(w.group_title(g))}</strong></div>',
                 f'<div style="{_P}">impact: {esc(w.impact_text(g))}</div>',
                 f'<div style="{_P}">since: '
                 f'{esc(_group_since_text(members, len(view.group_hosts(g))))}</div>',
                 f'<div style="{_P}">{esc(w.group_count_text(g))}: {_group_hosts(g, anchors_by_pair)}</div>']
        if w.explanation_lead(g):
            lines.append(f'<div style="{_P}">{esc(w.explanation_lead(g))}</div>')
        if w.explanation_details(g):
            lines.append(f'<div style="{_SMALL}">Details: {esc(w.explanation_details(g))}</div>')
        if w.restore_line(g, doc):
            lines.append(f'<div style="{_SMALL};{_MONO}">{esc(w.restore_line(g, doc))}</div>')
        anchor = f' id="group-{number}"' if isinstance(number, int) else ""
        out.append(f'<div{anchor} style="{_CARD};{_edge(g)}">' + "".join(lines) + "</div>")
    return out


HOST_COLUMNS = ["host", "status", "since", "predicted", "top finding", "baseline"]


def _host_table(hosts: list[dict], anchors: dict[int, str], sectioned: set[int], baselines: bool) -> list[str]:
    """The host table; a host without a section of its own has its anchor on its row. `baselines`:
    with the baseline column (a report of several baselines; one is named at the top)."""
    rows = []
    for h in hosts:
        name = esc(h.get("host") or "?")
        strong = f'<strong style="{_NOWRAP}">{name}</strong>'
        host = _link(anchors[id(h)], strong) if id(h) in sectioned else strong
        host += f' <span style="{_SMALL};{_NOWRAP}">{esc(h.get("unit") or "?")}</span>'
        attrs = "" if id(h) in sectioned else f' id="{anchors[id(h)]}"'
        rows.append((attrs, [host, _badge(view.status(h)),
                             _whole_stamps(esc(_since(view.findings(h), view.status(h) == "drift"))),
                             esc(w.predicted(h)), _mono(w.top_finding(h)),
                             esc(w.host_baseline(h))][:6 if baselines else 5]))
    return _table(HOST_COLUMNS[:6 if baselines else 5], rows)


def _whole_stamps(text_html: str) -> str:
    """Escaped text with each UTC timestamp kept on one line (it broke at 'T' in a narrow column)."""
    return _STAMP.sub(lambda m: f'<span style="{_NOWRAP}">{m.group(0)}</span>', text_html)


def _host_section(h: dict, anchor: str) -> list[str]:
    """A host's section: its title and figures on one line, the findings told above as one
    paragraph of links to their groups, then its own findings as blocks."""
    since = _since(view.findings(h), view.status(h) == "drift")
    out = [f'<div id="{anchor}" style="{_SECTION}">',
           f'<h3 style="{_H3}">{esc(w.host_title(h))} {_badge(view.status(h))} '
           f'<span style="{_SMALL};font-weight:normal">'
           f'baseline {esc(w.host_baseline(h))} · predicted {esc(w.predicted(h))} · since: '
           f'<span style="white-space:nowrap">{esc(since)}</span></span></h3>']
    summary = w.comparison_summary(view.comparison(h))
    if summary:
        out.append(f'<div style="{_SMALL}">{esc(summary)}</div>')
    for warning in view.comparison_warnings(view.comparison(h)):
        out.append(f'<div style="{_P}"><strong>warning:</strong> {esc(warning)}</div>')
    own = [f for f in view.findings(h) if not w.group_ref(f)]
    told = [f for f in view.findings(h) if w.group_ref(f)]
    if told:  # told once above: a link to its group each, with this host's history of it
        out.append(f'<div style="{_P}">told above: ' + " · ".join(
            _link(f"group-{f['group']}", f"group {esc(f['group'])}") + f" ({_mono(w.finding_name(f))})"
            + (f' <span style="{_MUTED}">({esc(w.finding_history(f))})</span>' if w.finding_history(f) else "")
            for f in told) + "</div>")
    out += [_finding_card(f) for f in own]
    if not own and not told:
        out.append("<p><em>(no findings listed)</em></p>")
    out.append("</div>")
    return out


class HtmlFormat(Format):
    name = "html"
    media_type = "text/html"
    suffix = ".html"

    def render_comparison(self, doc: ComparisonDoc) -> str:
        body = [f'<p style="{_P}">{esc(line)}</p>' for line in w.comparison_header(doc)]
        body.append(f'<p style="margin:8px 0 4px 0">{_badge("drift" if view.drift(doc) else "clean")}</p>')
        if w.comparison_summary(doc):
            body.append(f'<p style="margin:0 0 12px 0"><strong>{esc(w.comparison_summary(doc))}</strong></p>')
        body += [_finding_card(f) for f in view.comparison_findings(doc)]
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

    def render_fleet(self, doc: FleetReportDoc, brief: bool = False) -> str:
        """The report; `brief`: without the per-host sections (the mail's summary when the full
        report is attached)."""
        hosts = view.ordered_hosts(doc)
        anchors = _anchor_ids(hosts)
        detailed = [] if brief else view.detailed_hosts(doc)
        sectioned = {id(h) for h in detailed}
        by_pair: dict[tuple[str, str], str] = {}
        for h in hosts:
            by_pair.setdefault((w.clean(h.get("host") or "?"), w.clean(h.get("unit") or "?")), anchors[id(h)])
        body = [f'<p style="{_P}">Baseline: <strong>{esc(w.baseline_line(doc))}</strong></p>']
        if doc.get("generated_at"):
            body.append(f'<p style="{_P};{_MUTED}">Generated: {esc(doc["generated_at"])}</p>')
        body.append(f'<p style="margin:0 0 12px 0">{esc(" · ".join(w.count_parts(doc)).capitalize())}</p>')
        if brief:
            body.append(f'<p style="{_P}"><strong>{esc(w.ATTACHED_TEXT)}</strong></p>')
        if hosts:
            body += _baseline_summary(doc, anchors)
        body += _group_cards(doc, by_pair)
        if hosts:
            body.append(f'<h2 style="{_H2}">Hosts ({len(hosts)})</h2>')
            body += _host_table(hosts, anchors, sectioned, baselines=not view.baseline(doc))
        else:
            body.append("<p><em>(no hosts in this report)</em></p>")
        for h in detailed:
            body += _host_section(h, anchors[id(h)])
        errors = view.unreadable_hosts(doc)
        if errors:
            body.append(f'<h2 style="{_H2}">Unreadable hosts ({len(errors)})</h2>')
            body += _list([f"<strong>{esc(w.host_title(h))}</strong>: {esc(w.host_error(h))}" for h in errors])
        return _document(w.headline(doc), body)
