"""The current side's other truths: what systemd loaded and what process runs, against the unit on disk."""
from __future__ import annotations

import re
from typing import Any

from ..engines.config import EngineConfig
from ..snapshots.snapshot import Snapshot
from .difference import Difference
from .flags import diff_flags


def _runtime_truths(current: Snapshot, config: EngineConfig) -> list[Difference]:
    """Disk vs loaded vs running on the current side: restart/daemon-reload pending."""
    diffs: list[Difference] = []
    rt = current.runtime
    loaded = _loaded_argv(rt.get("loaded_exec_start"))
    if loaded is not None and not rt.get("need_daemon_reload") and loaded != " ".join(" ".join(current.argv).split()):
        rt = dict(rt, need_daemon_reload=True)  # systemd's loaded ExecStart differs from the file on disk
    if rt.get("need_daemon_reload"):
        diffs.append(Difference(key="systemd.loaded", label="daemon-reload pending", baseline="loaded = on disk",
                                current="on disk differs from what systemd loaded",
                                notes=["systemd reports NeedDaemonReload=yes: the next restart runs the unit "
                                       "on disk only after `systemctl daemon-reload`"]))
    launcher = current.running_launcher()  # the running argv, read once into the snapshot
    if launcher is not None:
        if launcher.engine != config.engine:
            return diffs  # not the same program: which process serves the unit is not known here
        running_config = current.running_config(config.version)
        if running_config is None:
            return diffs  # no engine runs: there are no flags to compare
        changed = diff_flags(running_config, config)
        if changed:
            summary = ", ".join(f"{d.label} (secret) changed" if d.secret else
                                f"{d.label} {_short(d.baseline)} → {_short(d.current)}" for d in changed[:6])
            diffs.append(Difference(key="process.argv", label="restart pending",
                                    baseline="running process", current="unit on disk",
                                    details={d.key: ({"running": "(redacted)", "unit": "(redacted)"} if d.secret
                                                     else {"running": d.baseline, "unit": d.current})
                                             for d in changed},
                                    notes=[f"the running server was started with other flags ({summary}); "
                                           "its throughput comes from the running flags until a restart."]))
    return diffs


def _loaded_argv(show_value: str | None) -> str | None:
    """`systemctl show -p ExecStart` -> the argv systemd loaded, joined by spaces (None if unknown).

    The property looks like `{ path=/usr/bin/x ; argv[]=/usr/bin/x -a b ; ignore_errors=no ; ... }`.
    """
    if not show_value:
        return None
    m = re.search(r"argv\[\]=(.*?) ; ignore_errors=", show_value, re.S)
    return " ".join(m.group(1).split()) if m else None


def _short(value: Any) -> str:
    return "default" if value is None else str(value)
