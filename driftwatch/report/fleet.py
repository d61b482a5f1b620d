"""Render a fleet report (schema ``driftwatch.report/v1``) as text, Markdown, HTML and a subject line.

The renderers only format what is in the report dict: they never compute drift, never look
anything up, and render only the fields named below (an unknown field, even one holding a
secret, is never shown). Counting and sorting for display is all they do.

Display order of hosts: drifted hosts first, worst first (lowest predicted throughput ratio,
then most high-severity findings), then unreadable hosts, then clean hosts; ties by host name.
"""

from __future__ import annotations

import html
import json
import re
import textwrap
from typing import Any, Iterable

from tabulate import tabulate

SCHEMA = "driftwatch.report/v1"

ARROW = "\u2192"  # →
DASH = "\u2014"  # —

_SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3, "info": 4, "none": 5}
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


# --------------------------------------------------------------------------- small formatters


def _clean(text: str) -> str:
    """Make one display line: control characters (newlines included) become visible escapes."""
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def fmt_value(value: Any) -> str:
    """A finding's baseline/current value as one line of text."""
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(value)
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return _clean(value) if value != "" else '""'
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "), default=str)
    except (TypeError, ValueError):
        text = str(value)
    return _clean(text)


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def fmt_tps(value: Any) -> str:
    """Tokens per second for display: 42.0 -> '42', 7.25 -> '7.2'."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return fmt_value(value)
    if abs(value) >= 10:
        return f"{value:.0f}"
    return f"{value:.1f}"


def _ratio(value: Any) -> str:
    return f"\u00d7{value:.2f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""


def _finding_name(f: dict) -> str:
    return _clean(str(f.get("flag") or f.get("key") or "?"))


def fmt_side(f: dict, side: str) -> str:
    """One side of a finding; a null left to SGLang reads "computed at start-up", as in compare."""
    value = f.get(side)
    if value is None and f.get(f"{side}_source") == "runtime":
        return "computed at start-up"
    return fmt_value(value)


def _finding_change(f: dict, width: int | None = None) -> str:
    base, cur = fmt_side(f, "baseline"), fmt_side(f, "current")
    if width:
        base, cur = _shorten(base, width), _shorten(cur, width)
    return f"{base} {ARROW} {cur}"


def fmt_impact(f: dict) -> str:
    imp = f.get("impact") or {}
    parts = []
    dim = imp.get("dimension")
    if dim and dim != "none":
        parts.append(_clean(str(dim)))
    r = _ratio(imp.get("throughput_ratio"))
    if r:
        parts.append(r)
    text = " ".join(parts) if parts else "no throughput impact"
    if imp.get("confidence"):
        text += f" ({_clean(str(imp['confidence']))} confidence)"
    return text


def _rule_tag(f: dict) -> str:
    bits = [_clean(str(x)) for x in (f.get("rule"), f.get("severity")) if x]
    return " ".join(bits)


# --------------------------------------------------------------------------- report accessors


def _hosts(report: dict) -> list[dict]:
    return [h for h in (report.get("hosts") or []) if isinstance(h, dict)]


def _comparison(h: dict) -> dict:
    c = h.get("comparison")
    return c if isinstance(c, dict) else {}


def _findings(h: dict) -> list[dict]:
    fs = [f for f in (_comparison(h).get("findings") or []) if isinstance(f, dict)]

    def key(f: dict):
        rank = f.get("rank")
        return (0, rank) if isinstance(rank, (int, float)) else (1, 0)

    return sorted(fs, key=key)


def _status(h: dict) -> str:
    return str(h.get("status") or "?")


def _severity_count(h: dict, levels=("critical", "high")) -> int:
    return sum(1 for f in _findings(h) if f.get("severity") in levels)


def _worst_key(h: dict):
    ratio = _comparison(h).get("predicted_throughput_ratio")
    has_ratio = isinstance(ratio, (int, float)) and not isinstance(ratio, bool)
    return (0 if has_ratio else 1, ratio if has_ratio else 0, -_severity_count(h),
            -len(_findings(h)), str(h.get("host")), str(h.get("unit")))


def ordered_hosts(report: dict) -> list[dict]:
    """Hosts in display order: drifted (worst first), unreadable, clean, others."""
    hosts = _hosts(report)
    drifted = sorted((h for h in hosts if _status(h) == "drift"), key=_worst_key)
    errors = sorted((h for h in hosts if _status(h) == "error"), key=lambda h: (str(h.get("host")), str(h.get("unit"))))
    clean = sorted((h for h in hosts if _status(h) == "clean"), key=lambda h: (str(h.get("host")), str(h.get("unit"))))
    other = [h for h in hosts if _status(h) not in ("drift", "error", "clean")]
    return drifted + errors + clean + other


def counts(report: dict) -> dict:
    """hosts/drifted/clean/unreadable: the report's summary where given, else counted from hosts."""
    hosts = _hosts(report)
    counted = {
        "hosts": len(hosts),
        "drifted": sum(1 for h in hosts if _status(h) == "drift"),
        "clean": sum(1 for h in hosts if _status(h) == "clean"),
        "unreadable": sum(1 for h in hosts if _status(h) == "error"),
    }
    summary = report.get("summary") if isinstance(report.get("summary"), dict) else {}
    out = {}
    for k, v in counted.items():
        s = summary.get(k)
        out[k] = s if isinstance(s, int) and not isinstance(s, bool) else v
    return out


def _baseline(report: dict) -> dict:
    b = report.get("baseline")
    return b if isinstance(b, dict) else {}


def _baseline_name(report: dict) -> str:
    b = _baseline(report)
    return _clean(str(b.get("name") or b.get("host") or "the baseline"))


def _baseline_line(report: dict) -> str:
    b = _baseline(report)
    where = ", ".join(_clean(str(b[k])) for k in ("host", "unit") if b.get(k))
    metrics = b.get("metrics") if isinstance(b.get("metrics"), dict) else {}
    tp = metrics.get("throughput")
    bits = [where] if where else []
    if tp is not None:
        bits.append(f"{fmt_tps(tp)} tok/s")
    return f"{_baseline_name(report)}" + (f" ({'; '.join(bits)})" if bits else "")


def predicted(h: dict) -> str:
    """'42 tok/s (×0.60)', '×0.60' or '—' (always '—' for a clean host)."""
    if _status(h) == "clean":
        return DASH
    c = _comparison(h)
    tp, ratio = c.get("predicted_throughput"), c.get("predicted_throughput_ratio")
    r = _ratio(ratio)
    if isinstance(tp, (int, float)) and not isinstance(tp, bool):
        return f"{fmt_tps(tp)} tok/s" + (f" ({r})" if r else "")
    return r or DASH


def top_finding(h: dict, width: int = 32) -> str:
    if _status(h) == "error":
        return _shorten(_clean(str(h.get("error") or "unreadable")), 2 * width)
    fs = _findings(h)
    if not fs:
        return DASH
    return f"{_finding_name(fs[0])} {_finding_change(fs[0], width)}"


def _summary_rows(report: dict) -> list[list[str]]:
    return [[_clean(str(h.get("host") or "?")), _clean(str(h.get("unit") or "?")), _status(h),
             top_finding(h), predicted(h)] for h in ordered_hosts(report)]


SUMMARY_HEADERS = ["host", "unit", "status", "top finding", "predicted"]


def _headline_parts(report: dict) -> tuple[str, str]:
    c = counts(report)
    name = _baseline_name(report)
    n, d, u = c["hosts"], c["drifted"], c["unreadable"]
    s = "s" if n != 1 else ""
    if d:
        main = f"{d} of {n} host{s} drifted from {name}"
    elif u:
        main = f"{c['clean']} of {n} host{s} match {name}"
    else:
        main = f"{n} host{s} match{'es' if n == 1 else ''} {name}"
    return main, (f", {u} unreadable" if u else "")


def headline(report: dict) -> str:
    """'2 of 14 hosts drifted from 70toks, 1 unreadable' / '14 hosts match 70toks'."""
    main, tail = _headline_parts(report)
    return main + tail


# --------------------------------------------------------------------------- subject


def _worst_host_phrase(report: dict) -> str:
    drifted = [h for h in ordered_hosts(report) if _status(h) == "drift"]
    if not drifted:
        return ""
    w = drifted[0]
    host = _clean(str(w.get("host") or "?"))
    comp = _comparison(w)
    tp, ratio = comp.get("predicted_throughput"), comp.get("predicted_throughput_ratio")
    if isinstance(tp, (int, float)) and not isinstance(tp, bool):
        return f": {host} predicted {fmt_tps(tp)} tok/s"
    if isinstance(ratio, (int, float)) and not isinstance(ratio, bool):
        return f": {host} predicted {ratio * 100:.0f}% of baseline throughput"
    if _findings(w):
        return f": {host} {top_finding(w, width=20)}"
    return f": {host}"


def subject(report: dict, prefix: str = "[driftwatch]") -> str:
    """One header line, worst host first:
    '[driftwatch] 2 of 14 hosts drifted from 70toks: ct129 predicted 42 tok/s, 1 unreadable',
    '[driftwatch] 14 hosts match 70toks', '[driftwatch] 13 of 14 hosts match 70toks, 1 unreadable'."""
    main, tail = _headline_parts(report)
    text = main + _worst_host_phrase(report) + tail
    prefix = _clean(prefix or "").strip()
    return _clean(f"{prefix} {text}" if prefix else text)


# --------------------------------------------------------------------------- text


def _wrap(text: str, indent: str, width: int = 78) -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent,
                         break_long_words=True, break_on_hyphens=False) or [indent.rstrip()]


def _host_title(h: dict) -> str:
    return f"{_clean(str(h.get('host') or '?'))} {_clean(str(h.get('unit') or '?'))}"


def render_text(report: dict) -> str:
    c = counts(report)
    lines = [f"driftwatch report: {headline(report)}",
             f"baseline: {_baseline_line(report)}"]
    if report.get("generated_at"):
        lines.append(f"generated: {_clean(str(report['generated_at']))}")
    lines.append(f"hosts: {c['hosts']}, drifted: {c['drifted']}, clean: {c['clean']}, unreadable: {c['unreadable']}")
    lines.append("")
    rows = _summary_rows(report)
    if rows:
        lines.append(tabulate(rows, headers=SUMMARY_HEADERS, tablefmt="simple", disable_numparse=True))
    else:
        lines.append("(no hosts in this report)")

    for h in ordered_hosts(report):
        if _status(h) != "drift" and not _findings(h):
            continue
        lines += ["", f"== {_host_title(h)}: {_status(h)}, predicted {predicted(h)}"]
        fs = _findings(h)
        if not fs:
            lines.append("   (no findings listed)")
        for f in fs:
            rank = f.get("rank")
            tag = _rule_tag(f)
            lines.append(f"{str(rank) if rank is not None else '-':>3}. {_finding_name(f)}: {_finding_change(f)}")
            lines.append(f"     impact: {fmt_impact(f)}" + (f"  [{tag}]" if tag else ""))
            if f.get("explanation"):
                lines += _wrap(_clean(str(f["explanation"])), "     ")

    errors = [h for h in ordered_hosts(report) if _status(h) == "error"]
    if errors:
        lines += ["", f"== Unreadable hosts ({len(errors)})"]
        for h in errors:
            lines.append(f"   {_host_title(h)}: {_clean(str(h.get('error') or 'unknown error'))}")
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- markdown

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")


def _md(text: str) -> str:
    """Escape text for a Markdown paragraph or table cell (backslash-escapes ASCII punctuation)."""
    return _MD_SPECIAL.sub(r"\\\1", _clean(text))


def _md_table(headers: list[str], rows: Iterable[list[str]]) -> list[str]:
    out = ["| " + " | ".join(_md(h) for h in headers) + " |",
           "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return out


def render_markdown(report: dict) -> str:
    c = counts(report)
    lines = [f"# driftwatch: {_md(headline(report))}", "",
             f"Baseline: {_md(_baseline_line(report))}  "]
    if report.get("generated_at"):
        lines.append(f"Generated: {_md(str(report['generated_at']))}  ")
    lines += [f"Hosts: {c['hosts']} · drifted: {c['drifted']} · clean: {c['clean']} · unreadable: {c['unreadable']}", ""]
    rows = _summary_rows(report)
    lines += _md_table(SUMMARY_HEADERS, rows) if rows else ["*(no hosts in this report)*"]
    for h in ordered_hosts(report):
        if _status(h) != "drift" and not _findings(h):
            continue
        lines += ["", f"## {_md(_host_title(h))}: {_md(_status(h))}, predicted {_md(predicted(h))}", ""]
        rows = [[str(f.get("rank") if f.get("rank") is not None else "-"), _finding_name(f),
                 fmt_side(f, "baseline"), fmt_side(f, "current"),
                 fmt_impact(f) + (f" [{_rule_tag(f)}]" if _rule_tag(f) else ""),
                 _clean(str(f.get("explanation") or ""))] for f in _findings(h)]
        lines += _md_table(["#", "flag", "baseline", "current", "impact", "explanation"], rows) if rows \
            else ["*(no findings listed)*"]
    errors = [h for h in ordered_hosts(report) if _status(h) == "error"]
    if errors:
        lines += ["", f"## Unreadable hosts ({len(errors)})", ""]
        lines += [f"- {_md(_host_title(h))}: {_md(str(h.get('error') or 'unknown error'))}" for h in errors]
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- HTML
# Email-client friendly: a complete document, tables, inline styles only, no links, no images,
# no scripts, no external CSS. Written well-formed (XHTML-compatible) so it parses as XML too.

_E = lambda s: html.escape(str(s), quote=True)  # noqa: E731

_FONT = "font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif"
_MONO = "font-family:ui-monospace,Menlo,Consolas,'Liberation Mono',monospace"
_TABLE = "border-collapse:collapse;margin:8px 0 16px 0;font-size:13px"
_TH = "text-align:left;padding:6px 10px;border:1px solid #d0d7de;background:#f6f8fa;font-weight:600"
_TD = "text-align:left;vertical-align:top;padding:6px 10px;border:1px solid #d0d7de"
_STATUS_STYLE = {
    "drift": "color:#b42318;background:#fee4e2",
    "error": "color:#93370d;background:#fef0c7",
    "clean": "color:#067647;background:#dcfae6",
}


def _status_badge(status: str) -> str:
    style = _STATUS_STYLE.get(status, "color:#344054;background:#f2f4f7")
    return f'<span style="{style};padding:1px 6px;border-radius:3px;font-weight:600">{_E(status)}</span>'


def _html_table(headers: list[str], rows: list[list[str]], mono_cols: Iterable[int] = ()) -> list[str]:
    """rows hold already-escaped HTML cell contents."""
    mono = set(mono_cols)
    out = [f'<table style="{_TABLE}">', "<tr>" + "".join(f'<th style="{_TH}">{_E(h)}</th>' for h in headers) + "</tr>"]
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            style = _TD + (";" + _MONO if i in mono else "")
            cells.append(f'<td style="{style}">{cell}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return out


def render_html(report: dict) -> str:
    c = counts(report)
    title = headline(report)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8" />',
        '<meta name="viewport" content="width=device-width, initial-scale=1" />',
        f"<title>driftwatch: {_E(title)}</title>",
        "</head>",
        f'<body style="margin:0;padding:16px;{_FONT};font-size:14px;line-height:1.4;color:#1f2328;background:#ffffff">',
        f'<h1 style="font-size:18px;margin:0 0 8px 0">driftwatch: {_E(title)}</h1>',
        f'<p style="margin:0 0 4px 0">Baseline: <strong>{_E(_baseline_line(report))}</strong></p>',
    ]
    if report.get("generated_at"):
        parts.append(f'<p style="margin:0 0 4px 0;color:#57606a">Generated: {_E(_clean(str(report["generated_at"])))}</p>')
    parts.append(f'<p style="margin:0 0 12px 0">Hosts: {c["hosts"]} · drifted: {c["drifted"]} · '
                 f'clean: {c["clean"]} · unreadable: {c["unreadable"]}</p>')
    hosts = ordered_hosts(report)
    if hosts:
        rows = [[_E(_clean(str(h.get("host") or "?"))), _E(_clean(str(h.get("unit") or "?"))),
                 _status_badge(_status(h)), _E(top_finding(h)), _E(predicted(h))] for h in hosts]
        parts += _html_table(SUMMARY_HEADERS, rows, mono_cols=(3,))
    else:
        parts.append("<p><em>(no hosts in this report)</em></p>")

    for h in hosts:
        if _status(h) != "drift" and not _findings(h):
            continue
        parts.append(f'<h2 style="font-size:16px;margin:16px 0 4px 0">{_E(_host_title(h))} '
                     f'{_status_badge(_status(h))} <span style="font-weight:normal">predicted {_E(predicted(h))}</span></h2>')
        rows = []
        for f in _findings(h):
            tag = _rule_tag(f)
            impact = _E(fmt_impact(f)) + (f'<br /><span style="color:#57606a">{_E(tag)}</span>' if tag else "")
            rows.append([_E(f.get("rank") if f.get("rank") is not None else "-"), _E(_finding_name(f)),
                         _E(fmt_side(f, "baseline")), _E(fmt_side(f, "current")), impact,
                         _E(_clean(str(f.get("explanation") or "")))])
        if rows:
            parts += _html_table(["#", "flag", "baseline", "current", "impact", "explanation"], rows, mono_cols=(1, 2, 3))
        else:
            parts.append("<p><em>(no findings listed)</em></p>")

    errors = [h for h in hosts if _status(h) == "error"]
    if errors:
        parts.append(f'<h2 style="font-size:16px;margin:16px 0 4px 0">Unreadable hosts ({len(errors)})</h2>')
        parts.append('<ul style="margin:0;padding-left:20px">')
        parts += [f"<li><strong>{_E(_host_title(h))}</strong>: {_E(_clean(str(h.get('error') or 'unknown error')))}</li>"
                  for h in errors]
        parts.append("</ul>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


__all__ = ["SCHEMA", "render_text", "render_markdown", "render_html", "subject", "headline", "counts",
           "ordered_hosts", "fmt_value", "fmt_impact", "predicted", "top_finding"]
