"""`driftwatch show`: what was read from one unit, as a table or as JSON."""
from __future__ import annotations

import json
import shlex

from ..engines.config import FoldedKeys, folded_issues, folded_keys
from ..redact import mask_for_show, visible
from ..snapshots.snapshot import Snapshot, engine_to_dict
from .cells import fast_table, prewrap

_FLAG_WIDTHS = [None, None, None, 40, None, 50]

SHOW_SCHEMA = "driftwatch.show/v1"


def show_dict(snap: Snapshot, include_defaults: bool) -> dict:
    container = {"container": dict(snap.runtime["container"])} if "container" in snap.runtime else {}
    return {**container,
        "schema": SHOW_SCHEMA,
        "host": snap.host,
        "unit": snap.unit,
        "source": snap.source,
        "paths": list(snap.paths),
        "exec_start": {"prefixes": snap.prefixes, "argv": list(snap.argv), "expanded_argv": list(snap.expanded_argv)},
        "launcher": snap.launcher.to_dict(),
        "engine": engine_to_dict(snap.engine, include_defaults=include_defaults),
        "environment": dict(snap.environment),
        "environment_files": list(snap.environment_files),
        "unit_keys": dict(snap.unit_keys),
        "findings": folded_issues(snap.issues),
        "warnings": list(snap.warnings),
        "runtime": dict(snap.runtime),
    }


def _value(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _cells(rows) -> list[list[str]]:
    """Table cells with every control character as a visible escape (before tabulate, which
    measures and wraps escape sequences wrongly)."""
    return [[visible(c) for c in row] for row in rows]


_REPORTED_TITLES = {"startup": "computed at start-up (journal)", "effective": "reported by the server (--probe)"}


def _reported_lines(rt: dict) -> list[str]:
    """What the server said it runs with: one line per source, then what could not be asked."""
    lines = []
    for kind, title in _REPORTED_TITLES.items():
        record = rt.get(kind) or {}
        values = {**record.get("fields", {}), **record.get("concepts", {})}
        parts = [f"{k}={_value(v)}" for k, v in sorted(values.items())]
        parts += [f"{k}={v:g}" for k, v in sorted(record.get("figures", {}).items())]
        if parts:
            lines.append(f"{title}: " + ", ".join(parts))
        for path, why in sorted(record.get("problems", {}).items()):
            lines.append(f"probe:       {'' if path == '*' else path + ': '}{why}")
    return lines


def render_show(snap: Snapshot, fmt: str, include_defaults: bool) -> str:
    if fmt == "json":
        from .json_ import dump  # lazy: a command imports only the format it renders (tests/report)
        return dump(mask_for_show(show_dict(snap, include_defaults)))
    e = snap.engine
    launcher = snap.launcher
    entry = launcher.entry or (f"the default command of image {launcher.image}" if launcher.image else "-")
    lines = [
        f"unit:        {snap.unit or '-'}" + (f" on {snap.host}" if snap.host else ""),
        f"read from:   {', '.join(snap.paths) or '-'} ({snap.source})",
        f"launcher:    {entry}" + (f" via {' > '.join(launcher.wrappers)}" if launcher.wrappers else "")
        + (f" in image {launcher.image}" if launcher.image and launcher.entry else ""),
        f"interpreter: {launcher.interpreter or '-'}" + (f" (venv {launcher.venv})" if launcher.venv else ""),
        (f"engine:      {e.title} ({e.version_reason})" if e.label else
         "engine:      none (no known engine in ExecStart: unit keys, environment and argv are compared)"),
        f"argv:        {shlex.join(snap.argv)}",
    ]
    if snap.expanded_argv != snap.argv:
        lines.append(f"expanded:    {shlex.join(snap.expanded_argv)}")
    lines.append("")
    if e.label:
        rows = []
        chosen = sorted((k, v) for k, v in e.flags.items() if v.source == "explicit" or include_defaults)
        for entry in folded_keys(chosen, e.concept_of):
            if isinstance(entry, FoldedKeys):
                rows.append([visible(f"{entry.field}.…"), "", visible(entry.flag), f"{entry.count} more keys",
                             ", ".join(sorted(entry.sources)), "--format json shows every one"])
                continue
            key, value = entry
            shown = "computed at start-up" if value.value is None and value.source == "runtime" else _value(value.value)
            rows.append([visible(x) for x in (key, e.concept_of(key) or "", value.flag or "", shown, value.source,
                                                value.note or "")])
        lines.append(fast_table(prewrap(rows, _FLAG_WIDTHS), ["field", "concept", "flag", "value", "source", "note"],
                                _FLAG_WIDTHS))
    else:
        lines.append(f"arguments:   {shlex.join(launcher.engine_argv) or '-'}")
    if snap.unit_keys and not e.label:  # with an engine, its flags are what matters most
        lines += ["", fast_table(prewrap(_cells(sorted(snap.unit_keys.items())), [None, 80]), ["unit key", "value"],
                                 [None, 80])]
    if snap.environment:
        lines += ["", fast_table(prewrap(_cells(sorted(snap.environment.items())), [None, 80]),
                                 ["environment", "value"], [None, 80])]
    rt = snap.runtime
    if rt:
        lines.append("")
        if "active_state" in rt or "main_pid" in rt:
            lines.append(f"systemd:     {rt.get('active_state', '?')}, main pid {rt.get('main_pid') or '-'}"
                         + ("; daemon-reload pending" if rt.get("need_daemon_reload") else ""))
        if rt.get("running_argv"):
            same = rt["running_argv"] == snap.expanded_argv
            lines.append("running:     " + ("same command line as the unit" if same else
                                            "started with another command line: " + shlex.join(rt["running_argv"])))
        if rt.get("gpus"):
            lines.append("gpus:        " + ", ".join(f"{g.get('index', '?')}: {g.get('name', '?')}"
                                                     for g in rt["gpus"] if isinstance(g, dict))
                         + (f"; linked by {rt['interconnect']} (nvidia-smi topo -m)"
                            if rt.get("interconnect") in ("nvlink", "pcie") else ""))
        if rt.get("measured"):
            lines.append("measured:    " + ", ".join(f"{k}={v:g}" for k, v in rt["measured"].items()))
        lines += _reported_lines(rt)
    if snap.source != "file" and not rt.get("running_argv") and "active_state" not in rt and "main_pid" not in rt:
        # read live from a host without systemd: no MainPID, and no process had argv/port evidence
        lines.append("running:     unknown (no systemd MainPID, and no process whose command line or --port "
                     "is this unit's)")
    for note in e.notes:
        lines.append(f"note: {visible(note)}")
    for warning in snap.warnings:
        lines.append(f"warning: {visible(warning)}")
    if snap.issues:
        lines += ["", "findings:"]
        lines += [f"  [{i['severity']}] {i['kind']}: {visible(i['message'])}" for i in folded_issues(snap.issues)]
    # Anything interpolated above that still holds a control character (a terminal escape from a
    # remote unit) is made visible; the only raw control character left is the line break.
    # secrets read "<redacted>": no fingerprint on screen (it is for comparing, not for reading)
    return mask_for_show("\n".join(visible(part) for line in lines for part in line.split("\n")) + "\n")
