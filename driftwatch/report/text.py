"""Plain text (terminal, cron output, the mail's text part): tables via tabulate.

`TextFormat(width=N)` fits every line in N columns (the CLI passes the terminal's width: `COLUMNS`,
else the tty's; `terminal_width`): table columns are narrowed, the explanation column first, and
their cells wrapped. Without a width (files, mail, pipes) the layout is the fixed default.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from typing import TYPE_CHECKING, Any, TextIO

from tabulate import tabulate

from . import view, wording as w
from .cells import prewrap
from .interface import Format

if TYPE_CHECKING:
    from .document import ComparisonDoc, DocumentLike, FleetReportDoc, HistoryDoc

# Default caps per column of the findings table (#, flag, baseline, current, impact, explanation),
# and how columns give up width to fit a terminal: (column, narrowest), in order. The explanation
# keeps a readable width as long as the other columns can give some up.
_FINDING_CAPS = [None, 30, 22, 22, 24, 70]
_FINDING_SHRINK = [(5, 40), (4, 14), (3, 12), (2, 10), (1, 16), (5, 20), (1, 10), (4, 8), (3, 8), (2, 8)]
# The host table (host, unit, status, top finding, predicted).
_FLEET_CAPS = [40, 30, None, 64, 22]
_FLEET_SHRINK = [(3, 24), (0, 24), (1, 20), (4, 10), (3, 12), (0, 12), (1, 12), (3, 8), (0, 8), (1, 8), (4, 8)]
_GAP = 2  # tabulate's "simple" format puts two spaces between columns
# A terminal narrower than this gets the findings as blocks, never a squeezed table (README).
TABLE_MIN_WIDTH = 80


def terminal_width(stream: TextIO | None = None) -> int | None:
    """`COLUMNS` when set, else the width of the terminal `stream` (stdout) is, else None."""
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    stream = stream if stream is not None else sys.stdout
    try:
        if stream is not None and stream.isatty():
            return shutil.get_terminal_size().columns
    except (AttributeError, OSError, ValueError):
        pass
    return None


def _wrap(text: str, indent: str, width: int = 78) -> list[str]:
    return textwrap.wrap(text, width=max(width, len(indent) + 10), initial_indent=indent,
                         subsequent_indent=indent, break_long_words=True,
                         break_on_hyphens=False) or [indent.rstrip()]


# Where a token wider than its column is split, best first: after a `/`, `,` or `–`; at a `-` or `_`
# (before a `-` that is not doubled, so "--flag-name" reads "--flag" / "-name"); after a `.`.
_BREAKS = ("/,–", "-_", ".")


def _cut(word: str, width: int) -> int:
    """Where to cut `word` (longer than `width`): the best place of `_BREAKS` in its second half."""
    for chars in _BREAKS:
        for p in range(width, width // 2, -1):
            if word[p - 1] in chars or (word[p] in chars and word[p] == "-" and word[p - 1] != "-"):
                return p
    return width


def _split_token(word: str, width: int) -> list[str]:
    """`word` in pieces of at most `width`, each cut where `_cut` says."""
    pieces = []
    while len(word) > width:
        cut = _cut(word, width)
        pieces.append(word[:cut])
        word = word[cut:]
    return pieces + [word] if word else pieces


def _longest_word(rows: list[list], col: int) -> int:
    return max((len(word) for r in rows for word in str(r[col]).split()), default=0)


def _spare_for_words(rows: list[list], headers: list[str], caps: list) -> list:
    """`caps` with width moved from columns that can spare it (wider than their longest word) to
    columns whose longest word is cut, the table's total width unchanged."""
    if not rows:
        return list(caps)
    caps = [cap if cap is None else min(cap, _natural(rows, i)) for i, cap in enumerate(caps)]  # as shown
    need = [max(_longest_word(rows, i), len(str(h)) + 2) for i, h in enumerate(headers)]
    for i, cap in enumerate(caps):
        for j in range(len(caps)):
            if cap is None or caps[i] >= need[i]:
                break
            spare = 0 if caps[j] is None or j == i else caps[j] - need[j]
            if spare > 0:
                moved = min(spare, need[i] - caps[i])
                caps[i] += moved
                caps[j] -= moved
    return caps


def wrap_cell(cell: Any, width: int | None) -> Any:
    """A table cell wrapped to `width` at spaces (tabulate's own wrap cuts words wherever the column
    ends: "--speculative" / "-num-steps"); only a token wider than the column is split
    (`_split_token`). Non-text cells and cells without a width are returned as they are."""
    if not width or not isinstance(cell, str) or all(len(line) <= width for line in cell.split("\n")):
        return cell
    out: list[str] = []
    for line in cell.split("\n"):
        current = ""
        for word in line.split():
            for piece in _split_token(word, width):
                if current and len(current) + 1 + len(piece) <= width:
                    current += " " + piece
                else:
                    if current:
                        out.append(current)
                    current = piece
        out.append(current)
    return "\n".join(out)


def _wrapped(rows: list[list], caps: list) -> list[list]:
    """Every cell of `rows` wrapped to its column's cap at word boundaries (`wrap_cell`)."""
    return [[wrap_cell(cell, caps[i] if i < len(caps) else None) for i, cell in enumerate(row)]
            for row in prewrap(rows, caps)]


def _natural(rows: list[list[str]], col: int) -> int:
    return max([max((len(x) for x in str(r[col]).splitlines()), default=0) for r in rows])


def _fit_caps(rows: list[list[str]], headers: list[str], caps: list, steps: list[tuple[int, int]],
              width: int | None) -> list:
    """Column caps so the table is at most `width` wide, narrowing columns step by step."""
    caps = list(caps)
    if width is None or not rows:
        return caps
    natural = [_natural(rows, i) for i in range(len(headers))]
    header = [len(str(h)) + 2 for h in headers]  # tabulate pads every header by two (MIN_PADDING)

    def shown(i: int) -> int:
        return max(natural[i] if caps[i] is None else min(natural[i], caps[i]), header[i])

    for col, narrowest in steps:
        excess = sum(shown(i) for i in range(len(headers))) + _GAP * (len(headers) - 1) - width
        if excess <= 0:
            break
        current = shown(col)
        caps[col] = max(narrowest, header[col], current - excess) if current > narrowest else current
    return caps


# Colour on a terminal (TextFormat(color=True); never in files or mail): ANSI SGR codes by severity
# and by host status. tabulate measures cells without them.
_TONES = {"critical": "1;31", "high": "31", "medium": "33", "low": "36", "info": "2",
          "drift": "31", "clean": "32", "error": "35", "no_baseline": "2"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def visible_len(line: str) -> int:
    return len(_ANSI.sub("", line))


def _splits_words(rows: list[list[str]], caps: list) -> bool:
    """Whether wrapping some cell to its column's cap would cut a word (other than after a hyphen)."""
    for row in rows:
        for cell, cap in zip(row, caps, strict=False):  # a row may be longer than its caps
            for line in str(cell).splitlines() if cap else ():
                if any(len(piece) > cap for piece in textwrap.wrap(line, width=cap, break_long_words=False)):
                    return True
    return False


class TextFormat(Format):
    name = "text"
    media_type = "text/plain"
    suffix = ".txt"

    def __init__(self, width: int | None = None, color: bool = False):
        self.width = width if width and width > 0 else None
        self.color = color

    def _paint(self, text: str, tone: str | None) -> str:
        """`text` in its tone's colour when this output is coloured (a terminal), else as it is."""
        code = _TONES.get(str(tone)) if self.color else None
        return f"\x1b[{code}m{text}\x1b[0m" if code else text

    def _fit(self, line: str, indent: str = "  ") -> list[str]:
        """One logical line, wrapped to the width when there is one (continuations indented)."""
        if self.width is None or len(line) <= self.width:
            return [line]
        return textwrap.wrap(line, width=max(self.width, 20), subsequent_indent=indent, break_long_words=True,
                             break_on_hyphens=False) or [line]

    def _finding_list(self, findings: list[dict]) -> list[str]:
        """The ranked findings as blocks (as in the fleet report), for a terminal too narrow for the table."""
        lines: list[str] = []
        for f in findings:
            tag = w.rule_tag(f)
            head = self._fit(f"{w.rank_text(f):>3}. {w.finding_name(f)}: {w.finding_change(f)}", "     ")
            lines += [self._paint(head[0], f.get("severity"))] + head[1:]
            lines += self._fit(f"     impact: {w.impact_text(f)}" + (f"  [{tag}]" if tag else ""), "     ")
            lines += self._explanation(f)
        return lines

    def _explanation(self, f: dict) -> list[str]:
        """A finding's sentence as a paragraph, its details (if any) indented under it."""
        lines = self._para(w.explanation_lead(f), "     ") if f.get("explanation") else []
        if w.explanation_details(f):
            lines += self._para("details: " + w.explanation_details(f), "       ")
        return lines

    def _para(self, text: str, indent: str) -> list[str]:
        return _wrap(text, indent, 78 if self.width is None else min(78, self.width))

    def render_comparison(self, doc: ComparisonDoc) -> str:
        """Header lines, the ranked table, the summary paragraph, ignored findings and notes."""
        lines = [part for line in w.comparison_header(doc) for part in self._fit(line, "          ")] + [""]
        findings = view.comparison_findings(doc)
        if findings:
            rows = [[w.rank_text(f), w.finding_name(f), *w.finding_pair(f), w.impact_text(f),
                     w.rule_explanation(f)] for f in findings]
            caps = _fit_caps(rows, w.FINDING_COLUMNS, _FINDING_CAPS, _FINDING_SHRINK, self.width)
            shown = [[self._paint(row[0], f.get("severity")), *row[1:]]
                     for row, f in zip(prewrap(rows, caps), findings, strict=True)]
            table = tabulate(shown, headers=w.FINDING_COLUMNS, tablefmt="simple", maxcolwidths=caps)
            if self.width is not None and (self.width < TABLE_MIN_WIDTH or _splits_words(rows, caps)
                                           or max(visible_len(x) for x in table.splitlines()) > self.width):
                lines += self._finding_list(findings)  # too narrow for a table: one block per finding
            else:
                lines.append(table)
                details = w.details_lines(findings)  # the terms behind each number, below the table
                if details:
                    lines.append("")
                for detail in details:
                    lines += self._fit(detail, "     ")
            lines.append("")
        if w.comparison_summary(doc):
            lines += self._fit(w.comparison_summary(doc), "")
        ignored = view.comparison_ignored(doc)
        if ignored:
            lines += self._fit("ignored: " + "; ".join(w.ignored_text(f) for f in ignored))
        for n in view.comparison_warnings(doc):
            lines += self._fit(f"warning: {w.clean(n)}")
        for n in view.comparison_notes(doc):
            lines += self._fit(f"note: {w.clean(n)}")
        return "\n".join(lines) + "\n"

    def render_fleet(self, doc: FleetReportDoc, brief: bool = False) -> str:
        """Headline, counts, the drift shared by several units (told once), the host table, each
        drifted host's findings (not with `brief`: the mail's summary when the full report is
        attached), unreadable hosts."""
        lines = self._fit(f"driftwatch report: {w.headline(doc)}") + self._fit(f"baseline: {w.baseline_line(doc)}")
        if doc.get("generated_at"):
            lines.append(f"generated: {w.clean(doc['generated_at'])}")
        lines += [", ".join(w.count_parts(doc))]
        missing = view.missing_shards(doc)
        if missing:  # a merged report that lacks slices (`report --merge`): say so before anything else
            lines += self._fit(f"warning: slices missing from this report: {', '.join(map(w.clean, missing))} "
                               "(their hosts are not in it)")
        lines.append("")
        if brief:
            lines += self._fit(w.ATTACHED_TEXT) + [""]
        groups = view.shared_groups(doc)
        if groups:
            lines += self._fit(f"== {w.groups_heading(doc)}", "   ")
            for g in groups:
                lines += self._fit(f"{g['group']:>3}. {w.group_title(g)}", "     ")
                lines += self._fit(f"     impact: {w.impact_text(g)}", "     ")
                lines += self._para("hosts: " + w.group_hosts_text(g), "     ")
                lines += self._explanation(g)
                restore = w.restore_line(g, doc)
                if restore:  # one line, never wrapped: a command is copied whole
                    lines.append("     " + restore)
            lines.append("")
        rows = w.fleet_rows(doc)
        if rows:
            caps = _fit_caps(rows, w.FLEET_COLUMNS, _FLEET_CAPS if self.width else [None] * 5, _FLEET_SHRINK,
                             self.width)
            caps = _spare_for_words(rows, w.FLEET_COLUMNS, caps) if self.width else caps
            tones = [view.status(h).replace(" ", "_") for h in view.ordered_hosts(doc)]
            shown = [[*row[:2], self._paint(row[2], tone), *row[3:]]
                     for row, tone in zip(_wrapped(rows, caps), tones, strict=True)]
            lines.append(tabulate(shown, headers=w.FLEET_COLUMNS, tablefmt="simple", disable_numparse=True))
        else:
            lines.append("(no hosts in this report)")
        for title, body in [] if brief else self._host_sections(doc):
            lines += [""] + self._fit(f"== {title}", "   ") + body
        errors = view.unreadable_hosts(doc)
        if errors:
            lines += ["", f"== Unreadable hosts ({len(errors)})"]
            for h in errors:
                lines += self._fit(f"   {w.host_title(h)}: {w.host_error(h)}", "     ")
        return "\n".join(lines).rstrip() + "\n"

    def _host_sections(self, doc: DocumentLike) -> list[tuple[str, list[str]]]:
        """(title, body) per drifted host; units whose sections would read the same word for word
        (same status, prediction, summary and findings: typically every finding told once above)
        share one section that names them all, so 20 identical hosts are one section, not 20."""
        def section(h: dict) -> tuple:
            tone = view.status(h).replace(" ", "_")
            return f"{self._paint(view.status(h), tone)}, predicted {w.predicted(h)}", tuple(self._host_body(h))

        out = []
        for (head, body), hs in view.alike_sections(doc, section):
            if len(hs) == 1:
                out.append((f"{w.host_title(hs[0])}: {head}", list(body)))
            else:
                names = self._para(f"units: {w.hosts_text(hs)}", "   ")
                out.append((f"{len(hs)} units with the same findings: {head}", names + list(body)))
        return out

    def _host_body(self, h: dict) -> list[str]:
        """A drifted host's section below its title: summary, warnings, findings (one line each for
        those told once above)."""
        lines: list[str] = []
        summary = w.comparison_summary(view.comparison(h))
        if summary:
            lines += self._para(summary, "   ")
        for warning in view.comparison_warnings(view.comparison(h)):
            lines += self._para(f"warning: {w.clean(warning)}", "   ")
        fs = view.findings(h)
        if not fs:
            lines.append("   (no findings listed)")
        for f in fs:
            tag = w.rule_tag(f)
            if w.group_ref(f):  # told once above: one line here
                lines += self._fit(f"{w.rank_text(f):>3}. {w.finding_name(f)}: {w.finding_change(f)} "
                                   f"{w.group_ref(f)}", "     ")
                if w.finding_history(f):
                    lines += self._fit(f"     {w.finding_history(f)}", "       ")
                continue
            lines += self._fit(f"{w.rank_text(f):>3}. {w.finding_name(f)}: {w.finding_change(f)}", "     ")
            lines += self._fit(f"     impact: {w.impact_text(f)}" + (f"  [{tag}]" if tag else ""), "     ")
            if w.finding_history(f):
                lines += self._fit(f"     {w.finding_history(f)}", "       ")
            lines += self._explanation(f)
        return lines

    def render_history(self, doc: HistoryDoc) -> str:
        """Per unit: a title, its changes newest first (a table), then the baseline's findings
        with since when each is there; skipped files last."""
        lines = ["driftwatch history"] + [p for line in w.history_header(doc) for p in self._fit(line, "  ")]
        units = [u for u in doc.get("units") or [] if isinstance(u, dict)]
        if not units:
            lines += ["", "(no snapshots in the store for this selection)"]
        for u in units:
            lines += [""] + self._fit(f"== {w.history_unit_title(u)}", "   ")
            rows = w.history_rows(u)
            if rows:
                caps = _fit_caps(rows, w.HISTORY_COLUMNS, [20, 60, 40, 26], [(1, 30), (2, 16), (3, 12)], self.width)
                caps = _spare_for_words(rows, w.HISTORY_COLUMNS, caps) if self.width else caps
                lines.append(tabulate(_wrapped(rows, caps), headers=w.HISTORY_COLUMNS, tablefmt="simple",
                                      disable_numparse=True))
            else:
                lines.append("   (no changes" + (" in this period)" if doc.get("since") else ")"))
            findings = [f for f in u.get("findings") or [] if isinstance(f, dict)]
            judged = {"baseline": u["baseline"]} if isinstance(u.get("baseline"), dict) else doc  # own, or the run's
            if isinstance(judged.get("baseline"), dict):
                lines += ["", f"   findings of the newest snapshot against {w.baseline_name(judged)}:"
                          if findings else f"   no drift from {w.baseline_name(judged)} in the newest snapshot"]
                for f in findings:
                    head = f"   {w.rank_text(f):>2}. "
                    lines += textwrap.wrap(w.history_finding(f),
                                           width=78 if self.width is None else max(40, self.width),
                                           initial_indent=head, subsequent_indent=" " * len(head),
                                           break_long_words=True, break_on_hyphens=False)
        for problem in doc.get("problems") or []:
            lines += self._fit(f"warning: {w.clean(problem)}")
        return "\n".join(lines).rstrip() + "\n"
