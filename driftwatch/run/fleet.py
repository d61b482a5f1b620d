"""The fleet report (`driftwatch report`), end to end, in one function: `report_fleet`.

settings and baseline → local files compared → live hosts collected, each compared as its answer
arrives → unused ignores checked on the real findings of the whole fleet → "since" from the
snapshot store → one `driftwatch.report/v1` document → rendered, written, shown → mailed.

A host that cannot be read, or whose unit cannot be read, is an entry with its error, never a
reason to stop the others. The document and its words are report/'s (`build_report`,
`comparison_to_dict`); the judging is findings/'s; this module only runs the steps in order.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..engines.files import NO_FILES, EngineFiles
from ..errors import DriftwatchError, EXIT_DRIFT, EXIT_OK, EXIT_TROUBLE, InputError, NotifyError
from .shard import Shard, pick
from .voice import Voice

if TYPE_CHECKING:
    from ..collect.raw import RawUnit
    from ..collect.sshoptions import SSHOptions
    from ..findings.compare import Comparison
    from ..findings.ignore import IgnoreEntry
    from ..findings.judging import Judging
    from ..snapshots.baseline import Baseline
    from ..snapshots.snapshot import Snapshot


class Judge:
    """One baseline judged against many units, each becoming one entry of the report. Every
    Comparison is kept, so the ignores that matched nothing are found on the real findings.
    Units are read with `files`, the engine configuration files the user gave."""

    def __init__(self, baseline: Baseline, judging: Judging, files: EngineFiles = NO_FILES):
        self.baseline = baseline
        self.judging = judging
        self.files = files
        self.comparisons: list[Comparison] = []

    def snapshot(self, snap: Snapshot, file: str | None = None) -> dict:
        """The entry of a unit read (labelled by `file`, the path the user gave, when it is one)."""
        from ..report.data import comparison_to_dict, host_entry
        result = self.judging.compare(self.baseline, snap)
        entry = host_entry(file if file is not None else snap.host, snap.unit, "drift" if result.drift else "clean",
                           comparison_to_dict(result), file=file)
        self.comparisons.append(result)
        return entry

    def unit_file(self, path: str) -> dict:
        """A local unit file, labelled by the path as given; one that cannot be read or parsed is an
        entry with its error."""
        from ..report.data import host_entry
        from .targets import snapshot_from_unit_file
        try:
            snap = snapshot_from_unit_file(path, None, self.judging.engine_version, self.files)
        except DriftwatchError as exc:
            return host_entry(path, path.rstrip("/").rsplit("/", 1)[-1], "error", error=str(exc),
                              failure="invalid unit", file=path)
        return self.snapshot(snap, file=path)

    def raw(self, raw: RawUnit) -> dict:
        """One host and unit as collected; whatever goes wrong with it stays its own error."""
        from ..report.data import host_entry
        from .targets import raw_to_snapshot
        if raw.status not in ("ok", "fallback"):
            error = f"{raw.host}: {raw.unit}: {raw.status}" + (f": {raw.error}" if raw.error else "")
            return host_entry(raw.host, raw.unit, "error", error=error, failure=raw.status)
        try:
            return self.snapshot(raw_to_snapshot(raw, self.judging.engine_version, self.files))
        except DriftwatchError as exc:
            return host_entry(raw.host, raw.unit, "error", error=str(exc), failure="invalid unit")
        except Exception as exc:  # noqa: BLE001 - a bug on one host's input must not cost the report
            return host_entry(raw.host, raw.unit, "error", error=f"{raw.host}: {raw.unit}: internal error: "
                              f"{type(exc).__name__}", failure="error")

    def unused_ignores(self) -> list[IgnoreEntry] | None:
        """The ignores that matched no difference on any unit (None: nothing was compared, so no
        ignore could have matched)."""
        from ..findings.ignore import unused
        if not self.comparisons:
            return None
        pairs = [(f.rule, f.difference) for c in self.comparisons for f in c.findings + c.ignored]
        return unused(list(self.judging.ignore), pairs)


@dataclass
class FleetReport:
    doc: dict  # driftwatch.report/v1
    trouble: bool  # a unit unreadable, a file not written or a mail not sent

    @property
    def exit_code(self) -> int:
        if self.trouble:
            return EXIT_TROUBLE
        return EXIT_DRIFT if self.doc["summary"]["drifted"] else EXIT_OK


def report_fleet(options: dict, *, config_path: str | None, host: str | None, unit: str | None,
                 unit_files: tuple[str, ...] | list[str], rules_dir: str | None, ignores: tuple[str, ...],
                 ignore_file: str | None, concurrency: int | None, engine_version: str | None,
                 baselines_dir: str | None, store: str | None, fmt: str, output: str | None,
                 prometheus_file: str | None, always: bool, ssh: SSHOptions, files: EngineFiles, voice: Voice,
                 show: Callable[[dict], None] | None = None, shard: Shard | None = None) -> FleetReport:
    """Check the hosts and files against a baseline; write, show and mail one report.

    `options`: the command line's report settings (e-mail, SMTP, state, inventory, baseline), laid
    over the config file's. `show(doc)` prints the document (after the files are written, before
    the unreadable units are named and the mail goes). Notes, the document's own warnings and what
    the mail did are said `aside`; the errors that make the exit code 2 are `say`d."""
    from ..notify.settings import load_report_settings, merge, resolve_baselines_dir
    from ..findings.judging import load_judging
    from ..report.data import build_report
    from .targets import named_baseline
    settings = merge(options, load_report_settings(config_path, os.environ))
    if not settings.get("baseline"):
        raise InputError("report needs --baseline NAME (or `baseline:` in the config file)")
    if settings.get("only_changes") and not settings.get("state"):
        raise InputError("--only-changes needs --state FILE (where the last report's fingerprint is kept)")
    judging = load_judging(rules_dir, ignores, ignore_file, concurrency, engine_version)
    note = lambda m: voice.aside(f"note: {m}")  # noqa: E731
    base = named_baseline(settings["baseline"],
                          resolve_baselines_dir(settings["baseline"], baselines_dir, os.environ, settings, note), files)
    judge = Judge(base, judging, files)
    entries = [judge.unit_file(path) for path in unit_files]  # each labelled by the file the user named
    entries += _judge_hosts(judge, _targets(settings, host, unit, base.unit, unit_files, shard), ssh,
                            settings.get("inventory"), voice)
    doc = build_report(base, entries)
    _say_unused_ignores(doc, judge, voice)
    _since_from_store(doc, store, base, judging, voice)
    trouble = doc["summary"]["unreadable"] > 0
    trouble = _write(doc, fmt, output, prometheus_file, voice) or trouble
    if show is not None:
        show(doc)
    for entry in doc["hosts"]:  # even when quiet: exit 2 must come with a reason cron can mail
        if entry["status"] == "error":
            voice.say(entry["error"])
    if settings.get("email"):
        trouble = _mail(doc, settings, always, voice) or trouble
    return FleetReport(doc, trouble)


def _targets(settings: dict, host: str | None, unit: str | None, baseline_unit: str | None,
             unit_files, shard: Shard | None = None) -> list[tuple[str, str]]:
    """The (host, unit) pairs to read live: --host with --unit (default: the baseline's unit), or
    the inventory's (every unit it lists, or --unit); with `shard`, only that slice's hosts."""
    from ..collect.unitname import validate_unit_name
    from .targets import inventory_targets
    targets = []
    if host:
        targets.append((host, unit or baseline_unit))
    elif settings.get("inventory"):
        targets.extend(inventory_targets(settings["inventory"], unit))
    targets = pick(targets, shard)
    if not targets and not unit_files:
        raise InputError("nothing to check: give --inventory FILE, --host H --unit U or --unit-file FILE")
    for _, u in targets:
        if not u:
            raise InputError("--host needs --unit (the baseline records none)")
        validate_unit_name(u)
    return targets


def _judge_hosts(judge: Judge, targets: list[tuple[str, str]], ssh: SSHOptions, inventory: str | None,
                 voice: Voice) -> list[dict]:
    """The live hosts' entries, in the order they were named; each host is compared as its answer
    arrives, overlapping the others' reads."""
    if not targets:
        return []
    from .targets import collect_live
    compared: dict[int, dict] = {}

    def arrived(raw) -> None:
        compared[id(raw)] = judge.raw(raw)

    raws = collect_live(targets, ssh, inventory, on_result=arrived, warn=voice.warn, files=judge.files)
    return [compared.get(id(raw)) or judge.raw(raw) for raw in raws]


def _say_unused_ignores(doc: dict, judge: Judge, voice: Voice) -> None:
    """An ignore that matched no difference on any host: a warning naming it (`aside`, and the
    report's `warnings`)."""
    from ..findings.ignore import unused_warning
    entries = judge.unused_ignores()
    if entries is None:
        return
    doc["warnings"] = [unused_warning(e) for e in entries]
    for message in doc["warnings"]:
        voice.aside(f"warning: {message}")


def _since_from_store(doc: dict, store: str | None, base: Baseline, judging: Judging, voice: Voice) -> None:
    """Each finding's "since" from the snapshot store (nothing when the store holds no snapshot of it)."""
    from .history import annotate_since
    from ..snapshots.store import SnapshotStore
    annotate_since(doc, SnapshotStore(store or None, on_problem=lambda m: voice.aside(f"warning: {m}")), base,
                   judging)


def _write(doc: dict, fmt: str, output: str | None, prometheus_file: str | None, voice: Voice) -> bool:
    """--prometheus and --output, each atomically; True when one could not be written (said, and the
    report is still shown and mailed)."""
    from ..fileio import write_atomic
    from ..report import get_format
    trouble = False
    for path, name in ((prometheus_file, "prometheus"), (output, fmt)):
        if not path:
            continue
        text = get_format(name).render_fleet(doc)
        try:
            write_atomic(path, text)
        except DriftwatchError as exc:
            voice.say(str(exc))
            trouble = True
    return trouble


def _mail(doc: dict, settings: dict, always: bool, voice: Voice) -> bool:
    """Mail the report when warranted; True when delivery failed (said). What happened is said
    aside: cron mails any output, so a quiet run stays silent unless something is wrong."""
    from ..notify.deliver import deliver
    try:
        outcome = deliver(doc, settings, always)
    except NotifyError as exc:
        voice.say(str(exc))
        return True
    voice.aside(outcome)
    return False
