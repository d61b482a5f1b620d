"""Formatting shared by the compare renderers (no computing: the Comparison holds every number)."""
from __future__ import annotations

from ..compare import Comparison, Finding, display_pair, unquantified


def impact_text(f: Finding) -> str:
    """`×0.61 single-stream, low confidence`; `no throughput impact`; `capacity, unknown size`."""
    r = f.throughput_ratio
    if f.dimension == "none" and (r is None or abs(r - 1.0) < 1e-9):
        return "no throughput impact" if r is not None else "unknown impact"
    if r is None:
        return f"{f.dimension}, not quantified"
    if abs(r - 1.0) < 1e-9:
        return f"{f.dimension}; speed unchanged ({f.confidence} confidence)"
    return f"×{r:.2f} {f.dimension}, {f.confidence} confidence"


def summary(c: Comparison) -> str:
    """One paragraph: the prediction and where most of it comes from."""
    b = c.baseline
    if not c.findings:
        tail = f" ({len(c.ignored)} ignored)" if c.ignored else ""
        return f"No drift from baseline {b.name}{tail}."
    n = len(c.findings)
    head = f"{n} difference{'s' if n != 1 else ''} from baseline {b.name}"
    top = c.findings[0]
    base, cur = display_pair(top.difference)
    top_text = f"{top.difference.label} {base} → {cur}"
    unit = "tok/s"
    if c.predicted_throughput is not None:
        pred = (f"predicted {c.predicted_throughput:g} {unit} vs {c.baseline_metrics['throughput']:g} baseline "
                f"(×{c.predicted_throughput_ratio:.2f}) at concurrency {c.concurrency}")
    elif c.predicted_throughput_ratio is not None:
        pred = (f"predicted throughput ×{c.predicted_throughput_ratio:.2f} of the baseline at concurrency "
                f"{c.concurrency} (record --metric throughput=N on the baseline for tok/s)")
    else:
        pred = "no quantitative prediction"
    most = f"most of it from {top_text}" if top.throughput_ratio not in (None, 1.0) else f"top finding: {top_text}"
    measured = c.current_metrics.get("throughput")
    extra = f"; measured now: {measured:g} {unit}" if measured is not None else ""
    unknown = unquantified(c.findings)
    if unknown:
        names = ", ".join(f.difference.label for f in unknown[:4]) + (" …" if len(unknown) > 4 else "")
        extra += (f"; {len(unknown)} change{'s' if len(unknown) != 1 else ''} without a throughput model "
                  f"({names}) {'are' if len(unknown) != 1 else 'is'} not in the prediction: re-measure")
    return f"{head}: {pred}; {most}{extra}."


def header_lines(c: Comparison) -> list[str]:
    b, cur = c.baseline, c.current
    where = f"{cur.unit or '-'} on {cur.host}" if cur.host else f"{cur.unit or '-'} (local file)"
    source = {"systemctl cat": " read by systemctl cat", "disk": " read from disk (systemctl cat failed)",
              "file": ""}.get(cur.source, f" from {cur.source}")
    return [
        f"baseline: {b.name} ({b.unit or '-'} on {b.host or 'no host'}; SGLang {c.pair.baseline.version})",
        f"current:  {where}{source}; SGLang {c.pair.current.version} ({c.pair.current.version_reason})",
    ]
