"""How driftwatch's results read to a person: one wording for every format.

A finding reads the same everywhere: in `compare` (text, Markdown, HTML, and the explanation inside
the JSON, written by `explain`), in the fleet `report` and in the mail. Every
phrase is built here from the documents report/data.py produces (`driftwatch.compare/v1`,
`driftwatch.report/v1`); formats only lay the phrases out and escape them.

Values:    3 · on / off · unset · 0.85 (default) · default (none) · computed at start-up ·
           (redacted) → changed (redacted) · "" · {"algorithm": "EAGLE"} (containers as JSON)
Change:    --speculative-num-steps 3 → 1
Impact:    ×0.55–0.70 single-stream, most likely ×0.61, medium confidence (the 80 % interval first) ·
           direction unknown: ×0.85–1.20 aggregate, most likely ×0.95, low confidence ·
           ×0.61 single-stream, low confidence (a document without an interval) ·
           capacity; speed unchanged (high confidence) ·
           single-stream, not quantified · no throughput impact · unknown impact
Numbers:   42.5 tok/s, 70 tok/s (one decimal at most) · ×0.61 (two decimals)

Control characters (a newline inside a value) are shown as visible escapes, so every phrase is
one line. Nothing here computes drift: the documents hold every number.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

from ..engines.config import DEFAULT, RUNTIME, SOURCE_WORDS
from ..redact import CHANGED_FINGERPRINT, UNKNOWN_FINGERPRINT, has_fingerprint, mask_fingerprints, visible
from . import unreadable, view

if TYPE_CHECKING:
    from ..diff import Difference
    from ..findings.compare import Finding
    from .document import DocumentLike


def as_dict(value: Any) -> dict:
    """`value` when it is a mapping, else {}: a report may come from a file, an older release or a hand."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    """`value` when it is a list, else []."""
    return value if isinstance(value, list) else []

ARROW = "\u2192"  # →
DASH = "\u2014"  # —
TIMES = "\u00d7"  # ×
ELLIPSIS = "\u2026"  # …
EN_DASH = "\u2013"  # –

COMPUTED = "computed at start-up"
UNSET = "unset"
REDACTED = "(redacted)"
CHANGED_REDACTED = CHANGED_FINGERPRINT  # one wording, in redact.py and here
UNKNOWN_REDACTED = "unknown (redacted with another key: re-save the baseline)"

FINDING_COLUMNS = ["#", "flag", "baseline", "current", "impact", "explanation"]
FLEET_COLUMNS = ["host", "unit", "status", "top finding", "predicted"]



# --------------------------------------------------------------------------- small pieces


def clean(text: Any) -> str:
    """One display line: control characters (newlines, terminal escapes) become visible escapes and
    redaction fingerprints read "(redacted)"."""
    return visible(mask_fingerprints(str(text)))


def shorten(text: str, width: int | None) -> str:
    return text if not width or len(text) <= width else text[: width - 1] + ELLIPSIS


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def tps_text(value: Any) -> str:
    """Tokens per second: 42.5 -> '42.5', 42.0 -> '42', 1566 -> '1566'."""
    if not is_number(value):
        return value_text(value)
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def ratio_text(value: Any) -> str:
    """'×0.61', or '' when there is no ratio."""
    return f"{TIMES}{value:.2f}" if is_number(value) else ""


def _interval(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(is_number(v) for v in value) \
            and 0 < value[0] <= value[1]:
        return float(value[0]), float(value[1])
    return None


def range_text(ratio: Any, interval: Any, direction: Any = None) -> str:
    """'×0.55–0.70, most likely ×0.61'; 'direction unknown: ×0.85–1.20, most likely ×0.95' when the
    interval holds 1; the ratio alone ('×0.61') without an interval or when it rounds to a point."""
    if not is_number(ratio):
        return ""
    iv = _interval(interval)
    if iv is None:
        return ratio_text(ratio)
    lo, hi = f"{iv[0]:.2f}", f"{iv[1]:.2f}"
    if lo == hi == f"{ratio:.2f}":
        return ratio_text(ratio)
    unknown = "direction unknown: " if direction == "unknown" else ""
    return f"{unknown}{TIMES}{lo}{EN_DASH}{hi}, most likely {ratio_text(ratio)}"


def engine_text(label: Any, version: Any) -> str:
    """'SGLang 0.5.12'; 'no known engine' for a unit that runs none."""
    if not label:
        return "no known engine"
    return f"{clean(label)} {clean(version)}" if version not in (None, "") else clean(label)


# --------------------------------------------------------------------------- a finding's values


def value_text(value: Any, source: str | None = None) -> str:
    """One side of a difference: where it came from matters as much as what it is."""
    if value is None:
        if source == RUNTIME:
            return COMPUTED
        return "default (none)" if source == DEFAULT else UNSET
    if isinstance(value, bool):
        text = "on" if value else "off"
    elif is_number(value):
        text = str(value)
    elif isinstance(value, str):
        text = clean(value) if value != "" else '""'
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "), default=str)
        except (TypeError, ValueError):
            text = str(value)
        text = clean(text)
    if source in SOURCE_WORDS:
        return f"{text} ({SOURCE_WORDS[source]})"
    return text


def pair_text(baseline: Any, baseline_source: str | None, current: Any, current_source: str | None,
              secret: bool = False) -> tuple[str, str]:
    """Both sides of a difference; a secret's values never show, only whether they are set."""
    if secret:
        return (REDACTED if baseline is not None else UNSET, CHANGED_REDACTED if current is not None else UNSET)
    base, cur = value_text(baseline, baseline_source), value_text(current, current_source)
    if base == cur and baseline != current and (has_fingerprint(baseline) or has_fingerprint(current)):
        cur = CHANGED_REDACTED  # only a redacted part differs: say so rather than print two equal sides
    return base, cur


def display_pair(diff: Difference) -> tuple[str, str]:
    """Both sides of a `Difference` (`explain` writes them into the rule's sentence)."""
    base, cur = pair_text(diff.baseline, diff.baseline_source, diff.current, diff.current_source,
                          bool(diff.secret))
    if (getattr(diff, "details", None) or {}).get("fingerprints") == "unknown" and diff.current is not None:
        cur = UNKNOWN_REDACTED  # fingerprints of another key: not known to have changed
    return base, cur


class _SafeFormat(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _drop_restatement(detail: str, diff: Difference) -> str:
    """Models often open with "NAME a → b: …"; the rule's sentence already says that."""
    head, sep, rest = detail.partition(": ")
    names = [diff.key.split(".", 1)[-1], diff.label] + ([diff.concept] if diff.concept else [])
    if sep and "→" in head and any(name in head for name in names) and rest:
        return rest[:1].upper() + rest[1:]
    return detail


def explain(finding: Finding) -> str:
    """A finding's explanation: its rule's sentence filled with both sides and the model's detail."""
    diff, detail = finding.difference, finding.detail
    base, cur = display_pair(diff)
    if diff.secret:
        detail = "the value is a secret: compared by fingerprint only"
    if (diff.details or {}).get("fingerprints") == "unknown":
        detail = UNKNOWN_FINGERPRINT  # says why this may not be drift, and what to do
    detail = _drop_restatement(detail or "", diff)
    first = detail.split(" ", 1)[0]
    if first.isalpha() and first.islower():  # a sentence, not a setting name like context_length
        detail = detail[:1].upper() + detail[1:]
    text = finding.rule.explanation.format_map(_SafeFormat(
        label=diff.label, key=diff.key, baseline=base, current=cur, detail=detail or "",
        note=" ".join(diff.notes)))
    return mask_fingerprints(" ".join(text.split()))


def finding_pair(f: DocumentLike) -> tuple[str, str]:
    """Both sides of a finding of a `driftwatch.compare/v1` document."""
    base, cur = pair_text(f.get("baseline"), f.get("baseline_source"), f.get("current"), f.get("current_source"),
                          bool(f.get("secret")))
    if (f.get("details") or {}).get("fingerprints") == "unknown" and f.get("current") is not None:
        cur = UNKNOWN_REDACTED
    return base, cur


def finding_name(f: DocumentLike) -> str:
    """How a person recognises the setting: --flag, NAME, User=; else its key. A value set by a
    drop-in says so: '--context-length (from override.conf)'."""
    return clean(f.get("flag") or f.get("key") or "?") + origin_text(f)


def _is_dropin(path: Any) -> TypeGuard[str]:
    return isinstance(path, str) and path.endswith(".conf") and ".d/" in path


def origin_text(f: DocumentLike) -> str:
    """' (from override.conf)' when a drop-in set the current (else the baseline) value; '' otherwise."""
    origin = as_dict(f.get("origin"))
    for side in ("current", "baseline"):
        path = origin.get(side)
        if _is_dropin(path):
            name = path.rsplit("/", 1)[-1]
            return f" (from {clean(name)}{'' if side == 'current' else ', baseline'})"
    return ""


def change_text(base: str, cur: str, width: int | None = None) -> str:
    """'3 → 1' (each side cut to `width` characters when given)."""
    return f"{shorten(base, width)} {ARROW} {shorten(cur, width)}"


def change_line(name: str, base: str, cur: str, width: int | None = None) -> str:
    """A finding's one-line change: '--speculative-num-steps 3 → 1'."""
    return f"{name} {change_text(base, cur, width)}"


def finding_change(f: DocumentLike, width: int | None = None) -> str:
    return change_text(*finding_pair(f), width=width)


def finding_line(f: DocumentLike, width: int | None = None) -> str:
    return change_line(finding_name(f), *finding_pair(f), width=width)


def impact_text(f: DocumentLike) -> str:
    """'×0.61 single-stream, low confidence'; 'capacity; speed unchanged (high confidence)';
    'single-stream, not quantified'; 'no throughput impact'; 'unknown impact'."""
    imp = as_dict(f.get("impact"))
    dim = clean(imp.get("dimension") or "none")
    r = imp.get("throughput_ratio")
    r = r if is_number(r) else None
    conf = clean(imp["confidence"]) if imp.get("confidence") else None
    unchanged = r is not None and abs(r - 1.0) < 1e-9
    if dim == "none" and (r is None or unchanged):
        return "no throughput impact" if r is not None else "unknown impact"
    if r is None:
        return f"{dim}, not quantified"
    iv, way = _interval(imp.get("interval")), imp.get("direction")
    if unchanged and is_number(imp.get("counted_in")):
        return f"{dim}; counted in #{imp['counted_in']}"
    if unchanged and (iv is None or way != "unknown"):
        return f"{dim}; speed unchanged" + (f" ({conf} confidence)" if conf else "")
    words = range_text(r, iv, way)
    if iv is not None and "," in words:  # '×0.55–0.70 single-stream, most likely ×0.61, …'
        span, likely = words.split(", ", 1)
        return f"{span} {dim}, {likely}" + (f", {conf} confidence" if conf else "")
    return f"{words} {dim}" + (f", {conf} confidence" if conf else "")


def rule_tag(f: DocumentLike) -> str:
    """'DW101 high'."""
    return " ".join(clean(x) for x in (f.get("rule"), f.get("severity")) if x)


def rank_text(f: DocumentLike) -> str:
    rank = f.get("rank")
    return clean(rank) if rank is not None else "-"


# A model's detail leads with what the change does in operators' words, then " Details: " and the
# terms behind the number (α, E(k), the roofline's): tables show the lead, the terms go below them.
DETAILS_MARK = " Details: "


def explanation_text(f: DocumentLike) -> str:
    return clean(f.get("explanation") or "")


def explanation_lead(f: DocumentLike) -> str:
    """The explanation up to its details (all of it when it has none)."""
    return explanation_text(f).split(DETAILS_MARK, 1)[0]


def explanation_details(f: DocumentLike) -> str:
    """The terms behind the number ('' when the explanation has none)."""
    parts = explanation_text(f).split(DETAILS_MARK, 1)
    return parts[1] if len(parts) == 2 else ""


def rule_explanation(f: DocumentLike) -> str:
    """'DW101 --speculative-num-steps 3 → 1: each target forward pass …' (the rule id, then why;
    without the details, which `details_lines` gives below the table)."""
    return " ".join(x for x in (clean(f.get("rule") or ""), explanation_lead(f)) if x)


def details_lines(findings: Sequence[DocumentLike]) -> list[str]:
    """'#1 details: no accept length measured: α prior 0.97; …', one per finding that has details."""
    return [f"#{rank_text(f)} details: {explanation_details(f)}" for f in findings if explanation_details(f)]


def ignored_text(f: DocumentLike) -> str:
    """'--port (DW901: port differs by design)'."""
    return f"{finding_name(f)} ({clean(f.get('rule') or '?')}: {clean(f.get('ignored_because') or '')})"


# --------------------------------------------------------------------------- a comparison


def _label(side: DocumentLike) -> str | None:
    """The engine's display name (`engine_label`); its registry name for documents without one."""
    if side.get("engine_label") is not None or side.get("engine") == "none":
        return side.get("engine_label") or None
    return side.get("engine") or ("engine" if side.get("engine_version") else None)


def comparison_header(doc: DocumentLike) -> list[str]:
    """'baseline: 70toks (sglang-qwen.service on ct129; SGLang 0.5.12)',
    'current:  sglang-qwen.service (local file); SGLang 0.5.12 (inferred: …)'."""
    b = as_dict(doc.get("baseline"))
    t = as_dict(doc.get("target"))
    unit = clean(t.get("unit") or "-")
    where = f"{unit} on {clean(t['host'])}" if t.get("host") else f"{unit} (local file)"
    src = t.get("source")
    source = {"systemctl cat": " read by systemctl cat", "disk": " read from disk (systemctl cat failed)",
              "file": "", None: ""}.get(src, f" from {clean(src)}")
    reason = f" ({clean(t['engine_version_reason'])})" if t.get("engine_version_reason") else ""
    return [
        f"baseline: {clean(b.get('name') or '?')} "
        f"({clean(b.get('unit') or '-')} on {clean(b.get('host') or 'no host')}; "
        f"{engine_text(_label(b), b.get('engine_version'))})",
        f"current:  {where}{source}; {engine_text(_label(t), t.get('engine_version'))}{reason}",
    ]


def comparison_title(doc: DocumentLike) -> str:
    """'ct129 vs baseline 70toks' (the unit stands for the host when it was a local file)."""
    b = as_dict(doc.get("baseline"))
    t = as_dict(doc.get("target"))
    return f"{clean(t.get('host') or t.get('unit') or '?')} vs baseline {clean(b.get('name') or '?')}"


def comparison_summary(doc: DocumentLike) -> str:
    """The one-paragraph summary report/data.py wrote into the document ('' when absent)."""
    return clean(doc.get("summary")) if isinstance(doc.get("summary"), str) else ""


@dataclass(frozen=True)
class SummaryFacts:
    """What a comparison's summary says, as report/data.py gathers it from the Comparison."""

    baseline_name: str
    findings: int
    ignored: int
    top_line: str | None
    top_moves: bool
    concurrency: int
    predicted: float | None
    ratio: float | None
    baseline_tps: float | None
    measured_tps: float | None
    unquantified: list[str] = field(default_factory=list)
    withheld: str | None = None
    measured_ratio: float | None = None
    interval: Any = None
    direction: str | None = None
    verdict: dict | None = None


def summary_sentence(facts: SummaryFacts) -> str:
    """The comparison's summary, from facts report/data.py gathers:
    '3 differences from baseline 70toks: predicted 42.5 tok/s vs 70 baseline (×0.61) at concurrency 1;
    most of it from --speculative-num-steps 3 → 1.'"""
    baseline_name, findings, ignored, top_line = facts.baseline_name, facts.findings, facts.ignored, facts.top_line
    top_moves, concurrency, predicted, ratio = facts.top_moves, facts.concurrency, facts.predicted, facts.ratio
    baseline_tps, measured_tps, unquantified = facts.baseline_tps, facts.measured_tps, facts.unquantified
    withheld, measured_ratio = facts.withheld, facts.measured_ratio
    interval, direction = facts.interval, facts.direction
    verdict = facts.verdict
    said = measured_vs_predicted_text(verdict)
    if not findings:
        tail = f" ({ignored} ignored)" if ignored else ""
        return f"No drift from baseline {baseline_name}{tail}" + (f"; {said}." if said else ".")
    head = f"{findings} difference{'s' if findings != 1 else ''} from baseline {baseline_name}"
    iv = _interval(interval)
    if predicted is not None and baseline_tps is not None and ratio is not None:
        pred = (f"predicted {tps_text(predicted)} tok/s vs {tps_text(baseline_tps)} baseline "
                f"({range_text(ratio, iv, direction)}) at concurrency {concurrency}")
    elif ratio is not None:
        pred = (f"predicted throughput {range_text(ratio, iv, direction)} of the baseline at concurrency "
                f"{concurrency} (record --metric throughput=N on the baseline for tok/s)")
    elif withheld:
        pred = f"no quantitative prediction ({clean(withheld)})"
    else:
        pred = "no quantitative prediction"
    most = f"most of it from {top_line}" if top_moves and not withheld else f"top finding: {top_line}"
    extra = f"; measured now: {tps_text(measured_tps)} tok/s" if measured_tps is not None else ""
    if said:
        extra += f"; {said}"
    elif measured_ratio is not None and ratio is not None:
        extra += f"; the findings explain {ratio_text(ratio)} of the observed {ratio_text(measured_ratio)}"
    if unquantified:
        n = len(unquantified)
        names = ", ".join(unquantified[:4]) + (f" {ELLIPSIS}" if n > 4 else "")
        extra += (f"; {n} change{'s' if n != 1 else ''} without a throughput model "
                  f"({names}) {'are' if n != 1 else 'is'} not in the prediction: re-measure")
    return f"{head}: {pred}; {most}{extra}."


def measured_vs_predicted_text(verdict: Any) -> str:
    """'measured ×0.57, the drift explains ×0.51–0.78: explained'; 'measured ×0.45, the drift explains
    ×0.95–1.05: not explained by the configuration — look at: GPUs 2 → 1, driver 570 → 575' ('' without
    a measured ratio: the JSON's measured_vs_predicted)."""
    if not isinstance(verdict, dict) or not is_number(verdict.get("measured")):
        return ""
    measured = f"measured {ratio_text(verdict['measured'])}"
    iv = _interval(verdict.get("interval"))
    if iv is None:
        return f"{measured}, no prediction to hold it against"
    lo, hi = iv
    explains = (f"the drift explains {ratio_text(lo)}" if f"{lo:.2f}" == f"{hi:.2f}"
                else f"the drift explains {TIMES}{lo:.2f}–{hi:.2f}")
    if verdict.get("verdict") == "explained":
        return f"{measured}, {explains}: explained"
    look = [clean(str(x)) for x in verdict.get("look_at") or [] if x]
    where = (f"look at: {', '.join(look)}" if look else
             "no host fact recorded differs from the baseline's (GPUs, driver, release): re-measure both")
    return f"{measured}, {explains}: not explained by the configuration {DASH} {where}"


# --------------------------------------------------------------------------- a fleet report


def baseline_name(report: DocumentLike) -> str:
    """The report's baseline; 'their baselines (sg-qwen27b, vl-32b)' when its units had several."""
    b = view.baseline(report)
    if not b and len(view.baselines(report)) > 1:
        return "their baselines (" + ", ".join(clean(x.get("name") or "?") for x in view.baselines(report)) + ")"
    return clean(b.get("name") or b.get("host") or "the baseline")


def _one_baseline_line(b: DocumentLike) -> str:
    where = ", ".join(clean(b[k]) for k in ("host", "unit") if b.get(k))
    metrics = as_dict(b.get("metrics"))
    bits = [where] if where else []
    if metrics.get("throughput") is not None:
        bits.append(f"{tps_text(metrics['throughput'])} tok/s")
    return clean(b.get("name") or b.get("host") or "the baseline") + (f" ({'; '.join(bits)})" if bits else "")


def baseline_line(report: DocumentLike) -> str:
    """'70toks (ct129, sglang-qwen.service; 70 tok/s)'; several joined by '; ' ('none' when no unit had one)."""
    b = view.baseline(report)
    if b:
        return _one_baseline_line(b)
    several = view.baselines(report)
    return "; ".join(_one_baseline_line(x) for x in several) if several else "none"


STATUS_WORDS = {"no_baseline": "no baseline"}


def status_text(h: DocumentLike) -> str:
    """A unit's status as shown: drift, clean, error, 'no baseline'."""
    return STATUS_WORDS.get(view.status(h), view.status(h))


def host_baseline(h: DocumentLike) -> str:
    """The baseline a unit was judged against ('none' when it has none); for a unit not read, the
    one it was to be judged against (the entry's `baseline`)."""
    judged = view.comparison(h).get("baseline")
    name = judged.get("name") if isinstance(judged, dict) else None
    if not name and isinstance(h.get("baseline"), str):
        name = h["baseline"]
    return clean(name) if name else "none"


NO_BASELINE_TEXT = "no baseline named for this unit (stored, not judged)"


def group_title(g: DocumentLike) -> str:
    """'5 hosts: --speculative-num-steps 3 → 1 (from override.conf) [vl-32b]'."""
    n = len(view.group_hosts(g))
    base, cur = finding_pair(g)
    dropin = str(g.get("origin") or "").endswith(".conf")  # a drop-in, as origin_text says; not the unit itself
    origin = f" (from {clean(g['origin'])})" if dropin else ""
    return (f"{n} host{'s' if n != 1 else ''}: {change_line(finding_name(g), base, cur)}{origin} "
            f"[baseline {clean(g.get('baseline_name') or '?')}]")


def group_ref(f: DocumentLike) -> str:
    """'(group 2, told once above)' for a finding other units share; '' otherwise."""
    return f"(group {f['group']}, told once above)" if isinstance(f.get("group"), int) else ""


def groups_heading(report: DocumentLike) -> str:
    n = len(view.shared_groups(report))
    return f"Drift shared by several units ({n} finding{'s' if n != 1 else ''}, each told once)"


GROUP_COLUMNS = ["group", "flag", "baseline", "current", "impact", "explanation"]
ATTACHED_TEXT = "Summary only: the full report is attached (report.html, report.txt)."


def group_count_text(g: DocumentLike) -> str:
    """'2 hosts, baseline vl-b'."""
    n = len(view.group_hosts(g))
    return f"{n} host{'s' if n != 1 else ''}, baseline {clean(g.get('baseline_name') or '?')}"


def group_hosts_text(g: DocumentLike) -> str:
    """'sglang.service on ct129, ct200; vllm.service on ct140' (hosts by unit, in the group's order)."""
    return hosts_text(view.group_hosts(g))


def restore_command(g: DocumentLike, report: DocumentLike) -> str | None:
    """The command that writes the group's units back to their baseline (`driftwatch restore`, whose
    plan is checked before it is offered): the group's hosts of the report's inventory (numbered
    hosts as one ``~regex`` that matches exactly them, not thousands of names), or its one host; None
    when neither names them."""
    import shlex
    hosts = list(dict.fromkeys(str(h.get("host") or "") for h in view.group_hosts(g)))
    base = ["driftwatch", "restore", "--baseline", str(g.get("baseline_name") or "")]
    if not base[-1] or not all(hosts):
        return None
    if isinstance(report.get("inventory"), str):
        from ..collect.hostpatterns import names_regex  # numbered hosts: one exact pattern, not each name
        exact = names_regex(hosts)
        words = base + ["--inventory", report["inventory"], "--limit", "~" + exact if exact else ":".join(hosts)]
    elif len(view.group_hosts(g)) == 1:
        words = base + ["--host", hosts[0], "--unit", str(view.group_hosts(g)[0].get("unit") or "")]
    else:
        return None
    return clean(" ".join(shlex.quote(word) for word in words))


def restore_line(g: DocumentLike, report: DocumentLike) -> str | None:
    """'to restore: driftwatch restore --baseline … (review first with --write DIR)'."""
    command = restore_command(g, report)
    return f"to restore: {command} (each unit's drop-in, checked; review with --write DIR, install with --apply)" \
        if command else None


def host_title(h: DocumentLike) -> str:
    return f"{clean(h.get('host') or '?')} {clean(h.get('unit') or '?')}"


def hosts_text(hs: Sequence[DocumentLike]) -> str:
    """'sglang.service on gpu00, gpu01; vllm.service on ct140' (units' hosts by unit, in order)."""
    by_unit: dict[str, list[str]] = {}
    for h in hs:
        by_unit.setdefault(clean(h.get("unit") or "?"), []).append(clean(h.get("host") or "?"))
    return "; ".join(f"{unit} on {', '.join(hosts)}" for unit, hosts in by_unit.items())


def host_error(h: DocumentLike) -> str:
    """Why the host could not be read, without repeating its host and unit (`unreadable.reason`)."""
    return clean(unreadable.reason(h.get("host"), h.get("unit"), h.get("error")) or "unknown error")


def predicted(h: DocumentLike) -> str:
    """'42.5 tok/s (×0.55–0.70, most likely ×0.61)', '×0.61' or '—' (always '—' for a clean host): the
    80 % interval with the point where the comparison has one."""
    if view.status(h) == "clean":
        return DASH
    c = view.comparison(h)
    tp = c.get("predicted_throughput")
    r = range_text(c.get("predicted_throughput_ratio"), c.get("predicted_throughput_interval"),
                   c.get("predicted_direction"))
    if is_number(tp):
        return f"{tps_text(tp)} tok/s" + (f" ({r})" if r else "")
    return r or DASH


def top_finding(h: DocumentLike, width: int = 32) -> str:
    """The host's first finding as one change line, or why it could not be read."""
    if view.status(h) == "error":
        why = unreadable.reason(h.get("host"), h.get("unit"), h.get("error"))
        return shorten(clean(why or "unreadable"), 2 * width)
    if view.status(h) == "no_baseline":
        return NO_BASELINE_TEXT
    fs = view.findings(h)
    return finding_line(fs[0], width) if fs else DASH


def fleet_rows(report: DocumentLike) -> list[list[str]]:
    """The summary table (FLEET_COLUMNS), hosts in display order."""
    return [[clean(h.get("host") or "?"), clean(h.get("unit") or "?"), status_text(h), top_finding(h), predicted(h)]
            for h in view.ordered_hosts(report)]


def count_parts(report: DocumentLike) -> list[str]:
    """['hosts: 14', 'drifted: 2', 'clean: 11', 'unreadable: 1'] (joined by each format)."""
    c = view.counts(report)
    parts = [f"{k}: {c[k]}" for k in ("hosts", "drifted", "clean", "unreadable")]
    if c.get("no_baseline"):
        parts.append(f"no baseline: {c['no_baseline']}")
    return parts


def _headline_parts(report: DocumentLike) -> tuple[str, str]:
    c = view.counts(report)
    name = baseline_name(report)
    n, d, u = c["hosts"], c["drifted"], c["unreadable"]
    s = "s" if n != 1 else ""
    if d:
        main = f"{d} of {n} host{s} drifted from {name}"
    elif u or c.get("no_baseline"):
        main = f"{c['clean']} of {n} host{s} match {name}"
    else:
        main = f"{n} host{s} match{'es' if n == 1 else ''} {name}"
    none = c.get("no_baseline") or 0
    return main, (f", {u} unreadable" if u else "") + (f", {none} without a baseline" if none else "")


def headline(report: DocumentLike) -> str:
    """'2 of 14 hosts drifted from 70toks, 1 unreadable' / '14 hosts match 70toks'."""
    main, tail = _headline_parts(report)
    return main + tail


def _worst_host_phrase(report: DocumentLike) -> str:
    drifted = [h for h in view.ordered_hosts(report) if view.status(h) == "drift"]
    if not drifted:
        return ""
    w = drifted[0]
    host = clean(w.get("host") or "?")
    comp = view.comparison(w)
    tp, r = comp.get("predicted_throughput"), comp.get("predicted_throughput_ratio")
    if is_number(tp):
        return f": {host} predicted {tps_text(tp)} tok/s"
    if is_number(r):
        return f": {host} predicted {r * 100:.0f}% of baseline throughput"
    if view.findings(w):
        return f": {host} {top_finding(w, width=20)}"
    return f": {host}"


def subject(report: DocumentLike, prefix: str = "[driftwatch]") -> str:
    """One header line, worst host first:
    '[driftwatch] 2 of 14 hosts drifted from 70toks: ct129 predicted 42 tok/s, 1 unreadable',
    '[driftwatch] 14 hosts match 70toks', '[driftwatch] 13 of 14 hosts match 70toks, 1 unreadable'."""
    main, tail = _headline_parts(report)
    text = main + _worst_host_phrase(report) + tail
    prefix = clean(prefix or "").strip()
    return clean(f"{prefix} {text}" if prefix else text)


# --------------------------------------------------------------------------- history and "since"


def since_text(f: DocumentLike) -> str:
    """'since 2026-11-28T03:00:00Z, first seen in snapshot 20261128T030000Z-00.yaml' (the start of the
    finding's current unbroken run in the store); 'new since the last snapshot (2026-…)' when the
    newest stored snapshot did not have it; '' without a store."""
    s = f.get("since") if isinstance(f.get("since"), dict) else None
    if not s:
        return ""
    if s.get("at"):
        name = f", first seen in snapshot {clean(s['snapshot'])}" if s.get("snapshot") else ""
        return f"since {clean(s['at'])}{name}"
    if s.get("after"):
        return f"new since the last snapshot ({clean(s['after'])})"
    return ""


LAST_RUN = {"new": "new since last run", "still present": "still present"}


def last_run_text(f: DocumentLike) -> str:
    """'new since last run' / 'still present' (mail: against the last settled run), else ''."""
    last = f.get("last_run")
    return LAST_RUN.get(last, "") if isinstance(last, str) else ""


def finding_history(f: DocumentLike) -> str:
    """'still present; since 2026-11-28T03:00:00Z, first seen in snapshot …' ('' when nothing is known)."""
    return "; ".join(x for x in (last_run_text(f), since_text(f)) if x)


HISTORY_COLUMNS = ["time", "change", "set by", "snapshot"]


def _ref_text(ref: Any) -> str:
    """'2026-11-28T03:00:00Z (snapshot 20261128T030000Z-00.yaml)'."""
    if not isinstance(ref, dict) or not ref.get("collected_at"):
        return "?"
    return f"{clean(ref['collected_at'])} (snapshot {clean(ref.get('snapshot') or '?')})"


def history_change(c: DocumentLike, width: int | None = None) -> str:
    """'--speculative-num-steps 3 → 1'; a restart pending appearing: 'restart pending: no → yes'."""
    base, cur = pair_text(c.get("old"), c.get("old_source"), c.get("new"), c.get("new_source"),
                          bool(c.get("secret")))
    name = clean(c.get("flag") or c.get("key") or "?")
    if c.get("key") in ("process.argv", "systemd.loaded"):
        return f"{name}: {change_text(base, cur, width)}"
    return change_line(name, base, cur, width)


def history_origin(c: DocumentLike) -> str:
    """The file that set the new side (the old one for a removal): a drop-in by name, else the path."""
    origin = as_dict(c.get("origin"))
    path = origin.get("new") or origin.get("old")
    if not isinstance(path, str) or not path:
        return DASH
    return clean(path.rsplit("/", 1)[-1] if _is_dropin(path) else path)


def history_rows(u: DocumentLike) -> list[list[str]]:
    """HISTORY_COLUMNS rows of one unit's changes, newest first (as the document lists them)."""
    changes = as_list(u.get("changes"))
    return [[clean(c.get("at") or "?"), history_change(c), history_origin(c), clean(c.get("snapshot") or "?")]
            for c in changes if isinstance(c, dict)]


def history_unit_title(u: DocumentLike) -> str:
    """'ct129 sglang-qwen.service: 3 snapshots, 290 runs, 2026-11-20T03:00:00Z → 2026-12-01T10:40:00Z'."""
    n, runs = u.get("snapshots") or 0, u.get("runs") or 0
    first = as_dict(u.get("first"))
    span = ""
    if first.get("collected_at") and u.get("last_run"):
        span = f", {clean(first['collected_at'])} {ARROW} {clean(u['last_run'])}"
    return (f"{clean(u.get('host') or '?')} {clean(u.get('unit') or '?')}: {n} snapshot{'s' if n != 1 else ''}, "
            f"{runs} run{'s' if runs != 1 else ''}{span}")


def history_finding(f: DocumentLike) -> str:
    """'--speculative-num-steps 3 → 1: since 2026-11-28T03:00:00Z, first seen in snapshot …; never went away'
    or '…: since T (snapshot S); first seen T0 in snapshot S0; went away at T1 (snapshot S1)'."""
    since = as_dict(f.get("since"))
    first = as_dict(f.get("first_seen"))
    head = finding_line(f)
    if not since.get("collected_at"):
        return head
    if not f.get("went_away"):
        text = (f"{head}: since {clean(since['collected_at'])}, first seen in snapshot "
                f"{clean(since.get('snapshot') or '?')}; never went away")
    else:
        gone = [e.get("gone_at") for e in f.get("episodes") or [] if isinstance(e, dict) and e.get("gone_at")]
        away = "; ".join(f"went away at {_ref_text(g)}" for g in gone)
        text = (f"{head}: since {_ref_text(since)}; first seen {_ref_text(first)}; {away}"
                f"{' and came back' if gone else ''}")
    value = f.get("value_since") if isinstance(f.get("value_since"), dict) else None
    if value and value.get("collected_at"):
        text += f"; at its current value since {_ref_text(value)}"
    return text


def history_header(doc: DocumentLike) -> list[str]:
    """'store: /var/lib/driftwatch (2 units)', 'since: …', 'baseline: 70toks (…)'."""
    units = as_list(doc.get("units"))
    lines = [f"store: {clean(doc.get('store') or '?')} ({len(units)} unit{'s' if len(units) != 1 else ''})"]
    if doc.get("since"):
        lines.append(f"changes since: {clean(doc['since'])}")
    if isinstance(doc.get("baseline"), dict):
        lines.append(f"findings against baseline: {baseline_line(doc)}")
    return lines
