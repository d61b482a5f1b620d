"""The fleet teaches the model (issue 35 item 4): the fleet's own history as calibration.

Every change between two consecutive snapshots of a unit with a measured throughput on both sides is a
pair (the 80 % interval the models predict for it, the ratio measured). `driftwatch calibration` keeps
them in the store (snapshots/store_calibration.py) and shows, per family of change, how often this fleet's
measurements fell inside the intervals and how far the points were off. Once a family holds
MIN_PAIRS pairs, its intervals are re-sized to the fleet's own 80 % coverage by split-conformal
calibration on the log ratio (conformalized quantile intervals): each pair scores
s = max(ln lo − ln m, ln m − ln hi) (negative inside, by how far), and q is the ⌈(n + 1)·0.8⌉-th smallest
score; an interval of that family becomes [lo·e^−q, hi·e^q]: narrower where the fleet's changes land well
inside, wider where they miss. The explanation says so ("interval from 14 changes on this fleet").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..snapshots.store_calibration import CalibrationPair

MIN_PAIRS = 10  # a family's own pairs before its intervals follow them (issue 35: "say 10")
COVERAGE = 0.80  # the intervals' nominal coverage
# Concept prefix (driftwatch/concepts.py) -> the family a change belongs to, as the scorecard names them.
_FAMILIES = {"speculative": "speculative decoding", "cuda_graph": "CUDA graphs", "kv": "KV cache",
             "prefill": "prefill", "scheduler": "scheduler", "kernel": "kernels", "parallel": "parallelism",
             "batch": "batch size", "quant": "quantization", "model": "model"}


def family_of(finding: Any) -> str:
    """The family of one finding: its concept's (speculative.steps -> speculative decoding), else 'other'."""
    concept = getattr(finding.difference, "concept", None) or ""
    return _FAMILIES.get(concept.split(".", 1)[0], "other")


def comparison_family(comparison: Any) -> str | None:
    """The family of a comparison's change: its top-ranked finding that carries a ratio (None: nothing priced)."""
    for f in comparison.findings:
        if f.throughput_ratio is not None and f.interval is not None and f.performance:
            return family_of(f)
    return None


def pair_of(comparison: Any, names: tuple[str, str, str, str]) -> CalibrationPair | None:
    """The (predicted interval, measured ratio) pair of one comparison, when both exist. `names`: host,
    unit, baseline snapshot, current snapshot."""
    measured = comparison.measured_throughput_ratio
    interval = comparison.predicted_throughput_interval
    family = comparison_family(comparison)
    if measured is None or interval is None or family is None or not comparison.findings:
        return None
    top = next(f for f in comparison.findings if f.throughput_ratio is not None)
    return CalibrationPair(*names, family=family, lo=float(interval[0]), hi=float(interval[1]),
                           measured=float(measured), point=comparison.predicted_throughput_ratio, top_key=top.key)


def measured_throughput(snapshot: Any) -> dict[str, float]:
    """What was measured on a snapshot's server (probe, journal figures): {} without a throughput."""
    measured = (getattr(snapshot, "runtime", None) or {}).get("measured") or {}
    return dict(measured) if isinstance(measured, dict) and measured.get("throughput") else {}


def history_pairs(store: Any, judging: Any, groups: list[tuple[str, str]] | None = None) -> list[CalibrationPair]:
    """Every pair the store's history holds: consecutive snapshots of a unit, both with a measured
    throughput, whose comparison predicts an interval."""
    from ..snapshots.baseline import Baseline

    pairs = []
    for host, unit in groups if groups is not None else store.groups():
        stored = [s for s in store.load(host, unit) if measured_throughput(s.snapshot)]
        for before, after in zip(stored, stored[1:], strict=False):
            base = Baseline(name=before.record.name, snapshot=before.snapshot,
                            metrics=measured_throughput(before.snapshot))
            result = judging.compare(base, after.snapshot)
            pair = pair_of(result, (host, unit, before.record.name, after.record.name))
            if pair is not None:
                pairs.append(pair)
    return pairs


def _score(p: CalibrationPair) -> float:
    """Conformity score on the log ratio: how far outside the interval (negative: how far inside)."""
    m = math.log(p.measured)
    return max(math.log(p.lo) - m, m - math.log(p.hi))


@dataclass
class FamilyCalibration:
    """One family's pairs on this fleet, and the re-sizing its intervals get (q = 0 below MIN_PAIRS)."""

    family: str
    pairs: list[CalibrationPair] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.pairs)

    @property
    def active(self) -> bool:
        return self.n >= MIN_PAIRS

    @property
    def q(self) -> float:
        """The split-conformal log margin: the ⌈(n+1)·0.8⌉-th smallest score (0 below MIN_PAIRS)."""
        if not self.active:
            return 0.0
        scores = sorted(_score(p) for p in self.pairs)
        k = min(math.ceil((self.n + 1) * COVERAGE), self.n)
        return scores[k - 1]

    def coverage(self, q: float = 0.0) -> float:
        """The share of this family's measurements inside its intervals re-sized by q."""
        return sum(_score(p) <= q + 1e-12 for p in self.pairs) / self.n if self.n else 0.0

    def residuals(self) -> list[float]:
        """ln(measured ÷ point) of the pairs with a point: how far the point estimates were off."""
        return [math.log(p.measured / p.point) for p in self.pairs if p.point]

    def resize(self, interval: tuple[float, float], point: float | None) -> tuple[float, float]:
        lo, hi = interval[0] * math.exp(-self.q), interval[1] * math.exp(self.q)
        if point is not None:  # the point stays inside what it is the point of
            lo, hi = min(lo, point), max(hi, point)
        return (lo, hi)

    def to_dict(self) -> dict:
        res = sorted(abs(r) for r in self.residuals())
        return {"family": self.family, "pairs": self.n, "covered": sum(p.covered for p in self.pairs),
                "coverage": round(self.coverage(), 4), "active": self.active,
                "log_margin": round(self.q, 4) if self.active else None,
                "coverage_after": round(self.coverage(self.q), 4) if self.active else None,
                "median_abs_log_residual": round(res[len(res) // 2], 4) if res else None}


@dataclass
class FleetCalibration:
    """Every family's calibration on this fleet (from the store's pairs)."""

    families: dict[str, FamilyCalibration] = field(default_factory=dict)

    @classmethod
    def from_pairs(cls, pairs: list[CalibrationPair]) -> FleetCalibration:
        families: dict[str, FamilyCalibration] = {}
        for p in pairs:
            families.setdefault(p.family, FamilyCalibration(p.family)).pairs.append(p)
        return cls(dict(sorted(families.items())))

    def active(self, family: str) -> FamilyCalibration | None:
        fam = self.families.get(family)
        return fam if fam is not None and fam.active else None

    def apply(self, comparison: Any) -> Any:
        """Re-size the intervals of the findings whose family has enough pairs, say so in their detail, and
        recompute the comparison's interval and its measured-against-predicted verdict."""
        changed = False
        for f in comparison.findings:
            fam = self.active(family_of(f)) if f.interval is not None else None
            if fam is None:
                continue
            before = f.interval
            f.interval = fam.resize(before, f.throughput_ratio)
            f.detail = (f"{f.detail}; interval from {fam.n} changes on this fleet: ×{f.interval[0]:.2f}–"
                        f"{f.interval[1]:.2f} (the models alone: ×{before[0]:.2f}–{before[1]:.2f})")
            changed = True
        if changed:
            _recompute(comparison)
        return comparison


def _recompute(comparison: Any) -> None:
    """The comparison's interval and verdict after its findings' intervals changed (as compare.compare)."""
    from ..impact import combine_intervals
    from .compare import _configuration_interval, _measured_ratio
    from .explained import host_facts, judge

    if comparison.predicted_throughput_ratio is None:
        return
    interval = combine_intervals((f.throughput_ratio, f.interval) for f in comparison.findings)
    if interval is not None:
        comparison.predicted_throughput_interval = interval
    b, c = comparison.baseline_metrics, comparison.current_metrics
    comparison.measured_vs_predicted = judge(
        _measured_ratio(b, c),
        _configuration_interval(comparison.findings, comparison.prediction_withheld,
                                comparison.predicted_throughput_interval),
        host_facts(comparison.baseline.snapshot, comparison.pair.baseline.version, b),
        host_facts(comparison.current, comparison.pair.current.version, c))


def with_fleet(judging: Any, store_location: Any = None) -> Any:
    """`judging` with the fleet's calibration of the store at `store_location` (None: the default store) when
    a family there has enough pairs; else `judging` unchanged. A store not created yet is read as empty."""
    import dataclasses

    from ..snapshots.store import open_store
    from ..snapshots.store_calibration import load_pairs

    store = open_store(store_location)
    try:
        pairs = load_pairs(store)
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()
    fleet = FleetCalibration.from_pairs(pairs)
    if not any(f.active for f in fleet.families.values()):
        return judging
    return dataclasses.replace(judging, fleet=fleet)
