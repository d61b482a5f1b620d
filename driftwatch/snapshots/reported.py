"""What the server reported about itself, as a snapshot stores it (`runtime.startup`, `runtime.effective`).

The engine's readers (`Engine.parse_startup_log`, `Engine.parse_probe`) return a `StartupValues`;
this module keeps of it what says something the unit does not (a value the engine computed, or one
that differs from the unit's), redacts it like everything else a snapshot stores, and checks it again
when a saved file is read back. `diff/reported.py` lays it over the typed flags when comparing.
"""
from __future__ import annotations

import math
from typing import Any

from ..engines.config import EFFECTIVE, RUNTIME, STARTUP, EngineConfig  # runtime.startup / runtime.effective
from ..engines.startup import StartupValues
from ..engines.values import _changed
from ..redact import Redactor, credential_kind

KINDS = (STARTUP, EFFECTIVE)
MAX_REPORTED_VALUES = 2000  # a ServerArgs has ~400 fields; more is not a server's answer


MAX_NUMBER = 1e15  # what a saved snapshot may hold (snapshot.py reads nothing larger back)
MAX_TEXT = 64 << 10
UNORDERED = ("cuda_graph.batch_sizes",)  # lists whose order is not the setting (engines sort them)


def _storable(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, (int, float)):
        return math.isfinite(value) and abs(value) <= MAX_NUMBER
    return isinstance(value, str) and len(value) <= MAX_TEXT


def _scalar_or_list(value: Any) -> bool:
    """Values a snapshot can hold and read back, and a comparison can read: JSON scalars and flat
    lists of them, within the bounds snapshot.py checks on reading."""
    if isinstance(value, list):
        return len(value) <= 4096 and all(v is not None and _storable(v) for v in value)
    return _storable(value)


def differs(config: EngineConfig, name: str, a: Any, b: Any) -> bool:
    """Whether two values of the native field `name` are different settings (capture sizes in
    another order are the same sizes)."""
    binding = config.bindings.get(name)
    if binding is not None and binding.concept in UNORDERED and isinstance(a, list) and isinstance(b, list):
        try:
            return _changed(sorted(set(a)), sorted(set(b)))
        except TypeError:  # numbers and words mixed: compared as written
            pass
    return _changed(a, b)


def keep_reported(values: StartupValues, config: EngineConfig, policy: Redactor) -> dict[str, Any]:
    """The record to store: the fields the unit does not already say (computed by the engine, or
    different from the typed value), concepts and figures; secrets fingerprinted, credentials cut."""
    fields: dict[str, Any] = {}
    for name, value in list(values.fields.items())[:MAX_REPORTED_VALUES]:
        typed = config.flags.get(name)
        if typed is None or not _scalar_or_list(value):
            continue  # not a setting of this release's command line, or not a value we can compare
        if typed.source == RUNTIME and typed.value is None:
            if value is None:
                continue  # "computed at start-up", and the server did not say
        elif not differs(config, name, typed.value, value):
            continue  # the unit (or the release default, or the rule driftwatch knows) already says this
        protect = policy.fp if credential_kind(name, value) else policy.cut  # a secret, or credentials in text
        if isinstance(value, list):
            fields[name] = [protect(v) if isinstance(v, str) else v for v in value]
        else:
            fields[name] = protect(value) if isinstance(value, str) else value
    concepts = {k: v for k, v in list(values.concepts.items())[:MAX_REPORTED_VALUES]
                if isinstance(k, str) and isinstance(v, (bool, int, float)) and _storable(v)}
    figures = {k: float(v) for k, v in list(values.figures.items())[:MAX_REPORTED_VALUES]
               if isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and _storable(v)}
    record: dict[str, Any] = {}
    if fields:
        record["fields"] = policy.scrub(fields)
    if concepts:
        record["concepts"] = concepts
    if figures:
        record["figures"] = figures
    return record

