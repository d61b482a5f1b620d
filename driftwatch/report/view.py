"""Read report documents defensively for the formats: the parts they show, in display order.

Formats read `driftwatch.compare/v1` and `driftwatch.report/v1` dicts only through these accessors
and report/wording.py, so a field missing or of the wrong type never breaks a render, and a field
not named here (even one holding a secret) is never shown. Sorting for display is all this does.

Display order of hosts: drifted hosts first, worst first (lowest predicted throughput ratio, then
most high-severity findings), then unreadable hosts, then clean hosts; ties by host name.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .document import DocumentLike


_Doc = TypeVar("_Doc", bound="DocumentLike")


def _dict(value) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list_of_dicts(value) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def by_rank(findings: Sequence[_Doc]) -> list[_Doc]:
    def key(f: DocumentLike):
        rank = f.get("rank")
        return (0, rank) if isinstance(rank, (int, float)) and not isinstance(rank, bool) else (1, 0)

    return sorted(findings, key=key)


# --------------------------------------------------------------------------- a comparison


def comparison_findings(doc: DocumentLike) -> list[dict[str, Any]]:
    """A comparison's findings, by rank."""
    return by_rank(_list_of_dicts(doc.get("findings")))


def comparison_ignored(doc: DocumentLike) -> list[dict[str, Any]]:
    return _list_of_dicts(doc.get("ignored"))


def comparison_notes(doc: DocumentLike) -> list[str]:
    notes = doc.get("notes")
    return [str(n) for n in notes if n is not None] if isinstance(notes, list) else []


def missing_shards(doc: DocumentLike) -> list[str]:
    """The slices (`I/N`) a merged report lacks (`report --merge` with a shard's file missing)."""
    missing = doc.get("missing_shards")
    return [str(m) for m in missing if m is not None] if isinstance(missing, list) else []


def comparison_warnings(doc: DocumentLike) -> list[str]:
    warnings = doc.get("warnings")
    return [str(n) for n in warnings if n is not None] if isinstance(warnings, list) else []


def drift(doc: DocumentLike) -> bool:
    return bool(doc.get("drift"))


# --------------------------------------------------------------------------- a fleet report


def baseline(report: DocumentLike) -> dict[str, Any]:
    return _dict(report.get("baseline"))


def baselines(report: DocumentLike) -> list[dict[str, Any]]:
    return _list_of_dicts(report.get("baselines"))


def drift_groups(report: DocumentLike) -> list[dict[str, Any]]:
    """Identical findings across units, told once (best rank first)."""
    return _list_of_dicts(report.get("drift_groups"))


def group_hosts(group: DocumentLike) -> list[dict[str, Any]]:
    return _list_of_dicts(group.get("hosts"))


def shared_groups(report: DocumentLike) -> list[dict[str, Any]]:
    """The groups more than one unit shares (the ones worth telling once)."""
    return [g for g in drift_groups(report) if len(group_hosts(g)) > 1]


def hosts(report: DocumentLike) -> list[dict[str, Any]]:
    return _list_of_dicts(report.get("hosts"))


def comparison(h: DocumentLike) -> dict[str, Any]:
    return _dict(h.get("comparison"))


def findings(h: DocumentLike) -> list[dict[str, Any]]:
    """A host's findings, by rank."""
    return comparison_findings(comparison(h))


def status(h: DocumentLike) -> str:
    return str(h.get("status") or "?")


def _severity_count(h: DocumentLike, levels=("critical", "high")) -> int:
    return sum(1 for f in findings(h) if f.get("severity") in levels)


def _worst_key(h: DocumentLike):
    ratio = comparison(h).get("predicted_throughput_ratio")
    has_ratio = isinstance(ratio, (int, float)) and not isinstance(ratio, bool)
    return (0 if has_ratio else 1, ratio if has_ratio else 0, -_severity_count(h),
            -len(findings(h)), str(h.get("host")), str(h.get("unit")))


def _by_name(h: DocumentLike):
    return str(h.get("host")), str(h.get("unit"))


def unexplained_regression(h: DocumentLike) -> float | None:
    """The measured ratio of a host measured slower than its drift explains (issue 35), else None."""
    v = comparison(h).get("measured_vs_predicted")
    if not isinstance(v, dict) or v.get("verdict") != "not explained":
        return None
    measured, iv = v.get("measured"), v.get("interval")
    if not isinstance(measured, (int, float)) or not isinstance(iv, list) or len(iv) != 2:
        return None
    return float(measured) if measured < iv[0] else None


def ordered_hosts(report: DocumentLike) -> list[dict[str, Any]]:
    """Hosts in display order: measured slower than their drift explains (worst first, drifted or not),
    drifted (worst first), unreadable, clean, others."""
    hs = hosts(report)
    first = sorted((h for h in hs if unexplained_regression(h) is not None),
                   key=lambda h: (unexplained_regression(h), *_by_name(h)))
    hs = [h for h in hs if unexplained_regression(h) is None]
    drifted = sorted((h for h in hs if status(h) == "drift"), key=_worst_key)
    errors = sorted((h for h in hs if status(h) == "error"), key=_by_name)
    clean = sorted((h for h in hs if status(h) == "clean"), key=_by_name)
    other = [h for h in hs if status(h) not in ("drift", "error", "clean")]
    return first + drifted + errors + clean + other


def detailed_hosts(report: DocumentLike) -> list[dict[str, Any]]:
    """Hosts that get a section of their own: drifted ones, any host with findings listed, and any host
    measured slower than its drift explains."""
    return [h for h in ordered_hosts(report) if status(h) == "drift" or findings(h)
            or unexplained_regression(h) is not None]


def alike_sections(report: DocumentLike, section) -> list[tuple[Any, list[dict[str, Any]]]]:
    """The detailed hosts grouped by `section(host)` (what a renderer would write for it, hashable):
    [(section, hosts)] in first-seen order, so units whose sections read the same word for word are
    told once (20 identical hosts: one section naming them all)."""
    groups: dict[Any, list[dict]] = {}
    for h in detailed_hosts(report):
        groups.setdefault(section(h), []).append(h)
    return list(groups.items())


def unreadable_hosts(report: DocumentLike) -> list[dict[str, Any]]:
    return [h for h in ordered_hosts(report) if status(h) == "error"]


def counts(report: DocumentLike) -> dict[str, Any]:
    """hosts/drifted/clean/unreadable: the report's summary where given, else counted from hosts."""
    hs = hosts(report)
    counted = {
        "hosts": len(hs),
        "drifted": sum(1 for h in hs if status(h) == "drift"),
        "clean": sum(1 for h in hs if status(h) == "clean"),
        "unreadable": sum(1 for h in hs if status(h) == "error"),
        "no_baseline": sum(1 for h in hs if status(h) == "no_baseline"),
    }
    summary = _dict(report.get("summary"))
    out = {}
    for k, v in counted.items():
        s = summary.get(k)
        out[k] = s if isinstance(s, int) and not isinstance(s, bool) else v
    return out
