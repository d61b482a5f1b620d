"""Combine per-finding ratios into one predicted throughput ratio.

Assumes the effects are independent and multiply. The speculative and concurrency models are
built so that their product is the joint model (steps evaluated at the current batch, the cap at
the baseline's drafting); a topk/draft change alongside a steps change returns 1.0 so it is not
counted twice. Unknown (None) ratios are left out, never guessed.
"""
from __future__ import annotations

import math
from collections.abc import Iterable


def combine(ratios: Iterable[float | None]) -> float | None:
    product, known = 1.0, False
    for r in ratios or ():
        if isinstance(r, bool) or not isinstance(r, (int, float)):
            continue
        if not math.isfinite(r) or r <= 0:
            continue
        product *= float(r)
        known = True
    return product if known else None
