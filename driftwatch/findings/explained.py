"""Measured against predicted (issue 35): does the configuration drift explain a measured change?

Where a throughput was measured on the baseline and now (its metrics, `--current-metric`, a probe), the
measured ratio is set beside the 80 % interval the findings predict. Inside it (give or take one
benchmark run's noise): the drift explains it. Outside: something that is not in the configuration moved
too, and the host facts that differ from the baseline's (GPUs seen, their memory and link, the engine
release, the driver, the concurrency the figure was measured at) are where to look.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

EXPLAINED, NOT_EXPLAINED, NO_PREDICTION = "explained", "not explained", "no prediction"
# A measured ratio within ×e^±this of the interval still counts as explained: one benchmark run's own
# run-to-run noise (a judgement: public before/after runs repeat within a few percent).
MEASURED_NOISE = 0.05
# Host facts a collector may record beside the unit (snapshot runtime key -> the words for it).
_RUNTIME_FACTS = (("driver_version", "driver"), ("cuda_version", "CUDA"), ("interconnect", "GPU link"),
                  ("active_state", "unit state"))


@dataclass
class MeasuredVsPredicted:
    measured: float
    interval: tuple[float, float] | None
    verdict: str  # explained | not explained | no prediction
    look_at: list[str] = field(default_factory=list)  # "GPUs 2 → 1": host facts that differ from the baseline's

    @property
    def unexplained_regression(self) -> bool:
        """Slower than the drift explains: what a fleet report lists first."""
        return self.verdict == NOT_EXPLAINED and self.interval is not None and self.measured < self.interval[0]

    def to_dict(self) -> dict:
        return {"measured": self.measured, "interval": None if self.interval is None else list(self.interval),
                "verdict": self.verdict, "look_at": list(self.look_at)}


def host_facts(snapshot: Any, version: str | None = None, metrics: dict | None = None) -> dict[str, str]:
    """What is known of the host a snapshot was taken on, beside its configuration: words -> value."""
    runtime = getattr(snapshot, "runtime", None) or {}
    out: dict[str, str] = {}
    gpus = runtime.get("gpus")
    if isinstance(gpus, list):
        out["GPUs"] = str(len(gpus))
        names = list(dict.fromkeys(str(g.get("name")) for g in gpus if isinstance(g, dict) and g.get("name")))
        if names:
            out["GPU model"] = " + ".join(names)
        memory = list(dict.fromkeys(str(g.get("memory_total")) for g in gpus
                                    if isinstance(g, dict) and g.get("memory_total") not in (None, "?")))
        if memory:
            out["GPU memory"] = " + ".join(memory)
    for key, words in _RUNTIME_FACTS:
        if runtime.get(key) not in (None, ""):
            out[words] = str(runtime[key])
    if version:
        out["engine release"] = str(version)
    concurrency = (metrics or {}).get("concurrency")
    if isinstance(concurrency, (int, float)) and not isinstance(concurrency, bool):
        out["measured at concurrency"] = f"{concurrency:g}"
    return out


def differing_facts(baseline: dict[str, str], current: dict[str, str]) -> list[str]:
    """'GPUs 2 → 1' for every fact known on both sides that differs (a fact one side did not record says
    nothing about what changed)."""
    return [f"{name} {baseline[name]} → {current[name]}" for name in baseline
            if name in current and baseline[name] != current[name]]


def judge(measured: float | None, interval: tuple[float, float] | None,
          baseline_facts: dict[str, str], current_facts: dict[str, str]) -> MeasuredVsPredicted | None:
    """The verdict on a measured ratio against the predicted interval; None when nothing was measured."""
    if measured is None or not math.isfinite(measured) or measured <= 0:
        return None
    look = differing_facts(baseline_facts, current_facts)
    if interval is None:
        return MeasuredVsPredicted(measured, None, NO_PREDICTION, look)
    lo, hi = interval
    inside = lo * math.exp(-MEASURED_NOISE) <= measured <= hi * math.exp(MEASURED_NOISE)
    return MeasuredVsPredicted(measured, (float(lo), float(hi)), EXPLAINED if inside else NOT_EXPLAINED,
                               [] if inside else look)
