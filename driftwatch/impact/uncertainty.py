"""Intervals: how sure a ratio is, as an 80 % range [lo, hi] around the point estimate.

Every ratio an impact model gives carries an interval. The speculative model builds its own from
the sources of uncertainty it models (acceptance range of the drafter family, decay with depth, tree
gain, step cost, unknown GPU and link, unstated concurrency, a measured step that disagrees with the
roofline: speculative.py). Models without a modelled uncertainty get a band by their confidence
(`DEFAULT_SPREAD`). The constants live in calibration.py and are calibrated on the public cases
(tools/fit_calibration.py --intervals, docs/impact.md "Intervals").

From an interval follow the direction (faster/slower only when it excludes 1) and the confidence
(by its width, not by where an input came from). Pure arithmetic; no words.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from . import calibration as cal
from .base import HIGH, LOW, MEDIUM, Estimate

FASTER, SLOWER, UNCHANGED, UNKNOWN = "faster", "slower", "unchanged", "unknown"


def valid(interval: Any) -> tuple[float, float] | None:
    """(lo, hi) as floats when it is a usable interval (finite, positive, lo ≤ hi), else None."""
    try:
        lo, hi = (float(interval[0]), float(interval[1]))
    except (TypeError, ValueError, IndexError):
        return None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi < lo:
        return None
    return lo, hi


def around(ratio: float, spread_low: float, spread_high: float | None = None) -> tuple[float, float]:
    """[ratio·e^−spread_low, ratio·e^+spread_high] (log half-widths ≥ 0)."""
    hi = spread_low if spread_high is None else spread_high
    return ratio * math.exp(-max(0.0, spread_low)), ratio * math.exp(max(0.0, hi))


def hull(values: Iterable[float], widen: float = 0.0) -> tuple[float, float]:
    """The smallest interval holding every (positive, finite) value, widened by e^±widen."""
    vs = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v) and v > 0]
    if not vs:
        raise ValueError("no value to hold")
    return min(vs) * math.exp(-max(0.0, widen)), max(vs) * math.exp(max(0.0, widen))


def holding(ratio: float, interval: Any) -> tuple[float, float]:
    """The interval made to hold its own point (lo ≤ ratio ≤ hi)."""
    iv = valid(interval)
    if iv is None:
        return ratio, ratio
    return min(iv[0], ratio), max(iv[1], ratio)


def width(interval: Any) -> float | None:
    """hi ÷ lo (1 = a point)."""
    iv = valid(interval)
    return None if iv is None else iv[1] / iv[0]


def direction(ratio: float | None, interval: Any) -> str:
    """faster / slower when the interval lies wholly on one side of 1; unchanged for a point at 1;
    unknown otherwise (no ratio, or an interval that holds 1)."""
    iv = valid(interval)
    if ratio is None or iv is None:
        return UNKNOWN
    lo, hi = iv
    if abs(lo - 1.0) < 1e-9 and abs(hi - 1.0) < 1e-9:
        return UNCHANGED
    if lo > 1.0 + 1e-9:
        return FASTER
    if hi < 1.0 - 1e-9:  # an interval whose top is ×1 up to rounding holds "no change"
        return SLOWER
    if abs(ratio - 1.0) < 1e-9 and hi / lo <= cal.CONFIDENCE_WIDTH[HIGH]:
        return UNCHANGED  # a tight band around "no change" says no change
    return UNKNOWN


def confidence_of(interval: Any) -> str:
    """high / medium / low by the interval's width (CONFIDENCE_WIDTH)."""
    w = width(interval)
    if w is None:
        return LOW
    if w <= cal.CONFIDENCE_WIDTH[HIGH]:
        return HIGH
    if w <= cal.CONFIDENCE_WIDTH[MEDIUM]:
        return MEDIUM
    return LOW


def finish(est: Estimate) -> Estimate:
    """Give a ratio its interval (by confidence when the model set none), make the interval hold the
    ratio, and let the confidence follow the width. No ratio: no interval."""
    r = est.throughput_ratio
    if r is None:
        est.interval = None
        return est
    iv = valid(est.interval)
    if iv is None:
        spread = cal.DEFAULT_SPREAD.get(est.confidence, cal.DEFAULT_SPREAD[LOW])
        iv = around(r, spread)
    est.interval = holding(r, iv)
    est.confidence = confidence_of(est.interval)
    return est


def combine_intervals(items: Iterable[tuple[float | None, object]]) -> tuple[float, float] | None:
    """The interval of a product of independent ratios: the product of the points, widened on each
    side by the root sum of squares of the factors' log half-widths (independent errors do not all
    land at their ends at once). Items whose ratio is None are left out, as combine() leaves them."""
    point, lows, highs, known = 1.0, 0.0, 0.0, False
    for r, interval in items or ():
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or r <= 0:
            continue
        lo, hi = holding(float(r), interval)
        point *= float(r)
        lows += math.log(r / lo) ** 2
        highs += math.log(hi / r) ** 2
        known = True
    if not known:
        return None
    return point * math.exp(-math.sqrt(lows)), point * math.exp(math.sqrt(highs))
