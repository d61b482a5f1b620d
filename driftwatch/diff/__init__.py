"""Two snapshots -> the semantic differences between them (the diff stage).

- difference.py: the Difference and EnginePair records;
- values.py: when two values are the same setting;
- flags.py: engine flags under one release, grouped under their cause; concepts across engines;
- unit.py: environment, unit keys, launcher, prefixes, GPUs, and the origin file of each side;
- runtime.py: disk vs loaded vs running on the current side;
- reported.py: the fourth truth, what the server reported it computed (start-up log, --probe).
"""
from __future__ import annotations

import shlex

from ..parse.wrappers import NO_ENGINE
from ..redact import UNKNOWN_FINGERPRINT, comparable_fingerprints
from ..snapshots.snapshot import Snapshot
from .difference import Difference, EnginePair
from .flags import default_changes, diff_concepts, diff_flags, read_pair
from .reported import reported_truths
from .runtime import _runtime_truths
from .unit import (
    _attach_origin,
    _comparable_unit_keys,
    _dict_diff,
    _exec_vars,
    _gpu_summary,
    _launcher_diff,
    _prefix_set,
)
from .upgrade import upgrade_differences

__all__ = ["Difference", "EnginePair", "read_pair", "diff_flags", "diff_concepts", "default_changes",
           "diff_snapshots"]


def _engine_diff(baseline: Snapshot, current: Snapshot, pair: EnginePair) -> list[Difference]:
    """A different engine (or none) on one side: one finding, and the argv compared as words."""
    b, c = pair.baseline, pair.current
    diffs = []
    if not pair.same_engine:
        diffs.append(Difference(key="launcher.engine", label="engine", baseline=b.title, current=c.title,
                                notes=[f"the unit now runs {c.title} where the baseline ran {b.title}: "
                                       "settings and throughput are not comparable flag by flag"]))
    if NO_ENGINE not in (b.engine, c.engine):
        diffs += diff_concepts(b, c)  # a migration: what it changed, in words both engines share
    elif baseline.expanded_argv[1:] != current.expanded_argv[1:]:
        # The whole command line after the program: for `sh -c 'a && b'` every command of the script
        # counts, not only the innermost one the wrapper layer reached.
        diffs.append(Difference(key="exec.argv", label="arguments", baseline=shlex.join(baseline.expanded_argv[1:]),
                                current=shlex.join(current.expanded_argv[1:])))
    return diffs


def environment_differences(base: dict, cur: dict, base_unread: list[str], cur_unread: list[str]
                            ) -> list[Difference]:
    """The variables' differences. A side with an EnvironmentFile= that could not be read (a login
    that may not read it) does not know its variables: one it lacks may be set by that file, so no
    "removed"/"added" is claimed for it, and a value it has may be overridden by the file (systemd
    lets EnvironmentFile= win over Environment=), which the difference says."""
    if cur_unread:
        base = {k: v for k, v in base.items() if k in cur}
    if base_unread:
        cur = {k: v for k, v in cur.items() if k in base}
    diffs = _dict_diff("env.", "{name}", base, cur, secret_aware=True)
    notes = [f"the {side} side's value may be overridden by {', '.join(files)}, which could not be read"
             for side, files in (("baseline", base_unread), ("current", cur_unread)) if files]
    for diff in diffs:
        diff.notes.extend(notes)
    return diffs


def diff_snapshots(baseline: Snapshot, current: Snapshot, pair: EnginePair) -> list[Difference]:
    if pair.same_engine and pair.baseline.engine != NO_ENGINE:
        diffs = diff_flags(pair.baseline, pair.current)
    else:
        diffs = _engine_diff(baseline, current, pair)
    used = _exec_vars(baseline) | _exec_vars(current)  # compared through the flags they expand into
    diffs += environment_differences({k: v for k, v in baseline.environment.items() if k not in used},
                                     {k: v for k, v in current.environment.items() if k not in used},
                                     baseline.unreadable_files, current.unreadable_files)
    b_keys, c_keys = _comparable_unit_keys(baseline, current)
    diffs += _dict_diff("unit.", "{name}=", b_keys, c_keys)
    diffs += _launcher_diff(baseline, current)
    b_prefixes, c_prefixes = _prefix_set(baseline.prefixes), _prefix_set(current.prefixes)
    if b_prefixes != c_prefixes:  # `-` ignores a failed start, `!` runs privileged, …
        diffs.append(Difference(key="exec.prefixes", label="ExecStart prefixes", baseline=b_prefixes or None,
                                current=c_prefixes or None))
    if (pair.same_engine and baseline.engine_version and current.engine_version
            and baseline.engine_version != current.engine_version):
        diffs += upgrade_differences(baseline, current, pair)
    bg, cg = baseline.runtime.get("gpus"), current.runtime.get("gpus")
    if bg is not None and cg is not None and _gpu_summary(bg) != _gpu_summary(cg):
        diffs.append(Difference(key="host.gpus", label="GPUs", baseline=_gpu_summary(bg), current=_gpu_summary(cg)))
    diffs += _runtime_truths(current, pair.current)
    if pair.current.engine != NO_ENGINE:
        diffs += reported_truths(current, pair.current)
    for diff in diffs:
        _attach_origin(diff, baseline, current)
        if not comparable_fingerprints(diff.baseline, diff.current):
            # a baseline saved by an older release or under another key: say so, never "no drift"
            diff.details["fingerprints"] = "unknown"
            diff.notes.append(UNKNOWN_FINGERPRINT)
    return diffs
