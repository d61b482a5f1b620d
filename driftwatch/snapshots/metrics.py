"""Measured figures (`--metric`, `--baseline-metric`, `--current-metric`, a baseline's `metrics:`):
the names driftwatch reads, and the values no server can have.

A misspelt name (`accept_lenght`) would be silently ignored by every model, and an impossible value
(an accept length below 1) would be clamped into a confident, wrong estimate: both are refused
(exit 2) instead. What one unit's steps can reach is checked by findings/metrics.py.
"""
from __future__ import annotations

import difflib
import math
import re

from ..errors import InputError

# name -> (what it is, kind): "count" is a whole number >= 1, "rate" a number >= 0, "length" >= 1,
# "share" a fraction 0-1.
METRICS: dict[str, tuple[str, str]] = {
    "throughput": ("output tok/s measured (one stream at concurrency 1, all streams above)", "rate"),
    "accept_length": ("mean tokens accepted per speculative step (SGLang logs `accept len`)", "length"),
    "concurrency": ("client concurrency the throughput was measured at", "count"),
    "max_running_requests": ("the server's concurrent-request cap as it reported at start-up", "count"),
    "context_length": ("the context length the server reported at start-up", "count"),
    "max_total_tokens": ("tokens the KV pool holds, as the server reported at start-up", "count"),
    # the workload (compare --workload-prefix-share / --workload-prompt-tokens pass these)
    "prefix_share": ("share of prompt tokens that repeat an earlier request's prefix", "share"),
    "prefix_cache_hit_rate": ("prefix-cache hit rate the server measured (0-1)", "share"),
    "prompt_tokens": ("typical prompt length in tokens", "count"),
    "temperature": ("sampling temperature the workload requests (0 = greedy): prices acceptance rules", "rate"),
}
# Other spellings the impact models read with the same meaning.
ALIASES = {"spec_accept_length": "accept_length", "accept_len": "accept_length"}
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def known_names() -> list[str]:
    return list(METRICS) + list(ALIASES)


def _unknown(option: str, pair: str, name: str) -> InputError:
    close = difflib.get_close_matches(name, known_names(), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    return InputError(f"{option} {pair!r}: unknown metric {name!r} ({hint}known: {', '.join(known_names())})")


def check_value(name: str, number: float, where: str) -> None:
    """Refuse a value no server can have (InputError naming `where`)."""
    kind = METRICS[ALIASES.get(name, name)][1]
    if kind == "rate" and number < 0:
        raise InputError(f"{where}: {name} cannot be negative")
    if kind == "length" and number < 1:
        raise InputError(f"{where}: {name} is at least 1 (every step yields the verified token)")
    if kind == "share" and not 0 <= number <= 1:
        raise InputError(f"{where}: {name} is a fraction between 0 and 1")
    if kind == "count" and (number < 1 or not float(number).is_integer()):
        raise InputError(f"{where}: {name} must be a whole number of at least 1")


def parse_metrics(pairs: tuple[str, ...] | list[str], option: str = "--metric") -> dict[str, float]:
    """['throughput=70', 'accept_length=3.1'] -> {'throughput': 70.0, ...}; a malformed pair, an
    unknown name or an impossible value is an InputError (exit 2) listing the known names."""
    metrics: dict[str, float] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not _NAME_RE.match(key):
            raise InputError(f"{option} {pair!r}: expected NAME=NUMBER, e.g. throughput=70 "
                             f"(known: {', '.join(known_names())})")
        if key not in METRICS and key not in ALIASES:
            raise _unknown(option, pair, key)
        try:
            number = float(value)
        except ValueError:
            raise InputError(f"{option} {pair!r}: {value!r} is not a number") from None
        if not math.isfinite(number):
            raise InputError(f"{option} {pair!r}: a metric must be a finite number")
        check_value(key, number, f"{option} {pair!r}")
        metrics[key] = number
    return metrics
