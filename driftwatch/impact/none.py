"""`no_impact` (server address, port, log level, served model name, API key, ...), `unknown`, and
`command_change` (the arguments of a program no engine plug-in reads)."""
from __future__ import annotations

import difflib
import shlex
from typing import Any

from .base import HIGH, LOW, NONE_DIM, Estimate, ImpactContext

_MAX_SHOWN = 3  # changed stretches of an argv named in the detail


def no_impact(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
              params: dict) -> Estimate:
    return Estimate(1.0, HIGH, f"{name} does not affect throughput", NONE_DIM)


def unknown(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
            params: dict) -> Estimate:
    return Estimate(None, LOW, f"no rule knows this setting ({name}); impact unknown")


def _words(value: Any) -> list[str] | None:
    if isinstance(value, (list, tuple)) and all(isinstance(w, str) for w in value):
        return list(value)
    if isinstance(value, str):  # a shell-quoted argv (shlex.join), else plain words
        try:
            return shlex.split(value)
        except ValueError:
            return value.split()
    return None


def _argv_changes(baseline_value: Any, current_value: Any) -> str:
    """The changed stretches of two argvs, e.g. `--threads 8` → `--threads 16`; "" when not argvs."""
    b, c = _words(baseline_value), _words(current_value)
    if b is None or c is None:
        return ""
    ops = [op for op in difflib.SequenceMatcher(a=b, b=c, autojunk=False).get_opcodes() if op[0] != "equal"]
    parts = []
    for tag, i1, i2, j1, j2 in ops[:_MAX_SHOWN]:
        old, new = " ".join(b[i1:i2]), " ".join(c[j1:j2])
        parts.append(f"added `{new}`" if tag == "insert" else f"removed `{old}`" if tag == "delete"
                     else f"`{old}` → `{new}`")
    more = f" and {len(ops) - _MAX_SHOWN} more" if len(ops) > _MAX_SHOWN else ""
    return "; ".join(parts) + more


def command_change(name: str, baseline_value: Any, current_value: Any, ctx: ImpactContext,
                   params: dict) -> Estimate:
    """exec.argv of a command no engine plug-in knows: what changed, impact unknown."""
    changes = _argv_changes(baseline_value, current_value)
    what = f"{changes}: " if changes else ""
    return Estimate(None, LOW, f"{what}no engine plug-in reads these arguments, so the effect on throughput is "
                    f"unknown; re-measure")
