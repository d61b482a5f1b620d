"""The fleet report (`driftwatch report`), end to end, in one function: `report_fleet`.

settings and baselines (`--baseline`, else each unit's own from the inventory) → the hosts
(`--limit`, `--shard`) → local files compared → live hosts collected, each compared as its answer
arrives → one `driftwatch.report/v1` document (drift told once in groups) → unused ignores checked on
the real findings of the whole fleet → "since" from the snapshot store → every unit read fed to the
store → rendered, written, shown → mailed.

A host that cannot be read, or whose unit cannot be read, is an entry with its error, never a
reason to stop the others. The document and its words are report/'s (`build_report`,
`comparison_to_dict`); the judging is findings/'s; this module only runs the steps in order.
"""
from __future__ import annotations

import dataclasses
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
    """Units judged against their baselines, each becoming one entry of the report. `pick(host,
    unit)` says which baseline a live unit is judged against (default: `baseline` for every one; None:
    the unit has no baseline, its entry says so and it is not judged). Every Comparison is kept, so
    the ignores that matched nothing are found on the real findings; every live unit read is kept in
    `read` (for the snapshot store). Units are read with `files`, the engine configuration files the
    user gave."""

    def __init__(self, baseline: Baseline | None, judging: Judging, files: EngineFiles = NO_FILES,
                 pick: Callable[[str, str], Baseline | None] | None = None):
        self.baseline = baseline
        self.judging = judging
        self.files = files
        self.pick = pick
        self.comparisons: list[Comparison] = []
        self.read: list[Snapshot] = []

    def baseline_of(self, host: str | None, unit: str | None) -> Baseline | None:
        return self.pick(host or "", unit or "") if self.pick is not None else self.baseline

    def snapshot(self, snap: Snapshot, file: str | None = None) -> dict:
        """The entry of a unit read (labelled by `file`, the path the user gave, when it is one)."""
        from ..report.data import comparison_to_dict, host_entry
        base = self.baseline if file is not None else self.baseline_of(snap.host, snap.unit)
        label = file if file is not None else snap.host
        if base is None:
            return host_entry(label, snap.unit, "no_baseline", file=file)
        result = self.judging.compare(base, snap)
        entry = host_entry(label, snap.unit, "drift" if result.drift else "clean",
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
            snap = raw_to_snapshot(raw, self.judging.engine_version, self.files)
        except DriftwatchError as exc:
            return host_entry(raw.host, raw.unit, "error", error=str(exc), failure="invalid unit")
        self.read.append(snap)
        try:
            return self.snapshot(snap)
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
                 show: Callable[[dict], None] | None = None, save: bool = True,
                 limit: str | None = None, shard: Shard | None = None, workload: dict | None = None) -> FleetReport:
    """Check the hosts and files against their baselines; write, show and mail one report; feed
    the snapshot store with every live unit read (unless `save` is false).

    `options`: the command line's report settings (e-mail, SMTP, state, inventory, baseline), laid
    over the config file's. `show(doc)` prints the document (after the files are written, before
    the unreadable units are named and the mail goes). Notes, the document's own warnings and what
    the mail did are said `aside`; the errors that make the exit code 2 are `say`d."""
    from ..notify.settings import load_report_settings, merge
    from ..findings.judging import load_judging
    from ..report.data import build_report
    settings = merge(options, load_report_settings(config_path, os.environ))
    if settings.get("only_changes") and not settings.get("state"):
        raise InputError("--only-changes needs --state FILE (where the last report's fingerprint is kept)")
    judging = load_judging(rules_dir, ignores, ignore_file, concurrency, engine_version)
    if workload:  # --workload-prefix-share / --workload-prompt-tokens (impact/workload.py)
        judging = dataclasses.replace(judging, workload=tuple(workload.items()))
    baselines = _Baselines(baselines_dir, settings, files, voice)
    # --baseline on the command line judges every unit; else each unit's own from the inventory
    # (unit > host > groups > defaults), else the config file's `baseline:`.
    forced = options.get("baseline") or None
    fallback = settings.get("baseline") or None
    if not forced and not (settings.get("inventory") and not host) and not fallback:
        raise InputError("report needs --baseline NAME (or `baseline:` in the config file or the inventory)")
    if unit_files and not (forced or fallback):
        raise InputError("--unit-file needs --baseline NAME (or `baseline:` in the config file)")
    default = baselines.get(forced or fallback) if (forced or fallback) else None
    targets = _targets(settings, host, unit, default.unit if default else None, unit_files, limit, shard)
    named = {} if forced or host or not settings.get("inventory") else _inventory_names(settings["inventory"], unit)
    for name in sorted({n for n in named.values() if n}):
        baselines.get(name)  # every baseline the inventory names, known before any host is read
    judge = Judge(default, judging, files,
                  pick=lambda h, u: baselines.get(named[(h, u)]) if named.get((h, u)) else default)
    entries = [judge.unit_file(path) for path in unit_files]  # each labelled by the file the user named
    entries += _judge_hosts(judge, targets, ssh, settings.get("inventory"), voice)
    doc = build_report(default, entries, baselines.used(entries),
                       os.path.abspath(settings["inventory"]) if settings.get("inventory") else None)
    if shard is not None:
        doc["shard"] = str(shard)  # what `report --merge` checks the shards by; a label on run-level metrics
    _say_unused_ignores(doc, judge, voice)
    _since_from_store(doc, store, baselines, judging, voice)
    store_trouble = _feed_store(judge.read, store, voice) if save else False
    return FleetReport(doc, publish(doc, settings, fmt=fmt, output=output, prometheus_file=prometheus_file,
                                    always=always, voice=voice, show=show) or store_trouble)


def publish(doc: dict, settings: dict, *, fmt: str, output: str | None, prometheus_file: str | None,
            always: bool, voice: Voice, show: Callable[[dict], None] | None) -> bool:
    """A finished report written (--output, --prometheus), shown, its unreadable units named and
    mailed: the tail every fleet report shares, one run's or shards merged (run/merge.py). True when
    a unit was unreadable, a file not written or the mail not sent."""
    trouble = doc["summary"]["unreadable"] > 0
    trouble = _write(doc, fmt, output, prometheus_file, voice) or trouble
    if show is not None and not output:  # -o FILE: the document is the file's, not stdout's too
        show(doc)
    for entry in doc["hosts"]:  # even when quiet: exit 2 must come with a reason cron can mail
        if entry["status"] == "error":
            voice.say(entry["error"])
    if settings.get("email"):
        trouble = _mail(doc, settings, always, voice) or trouble
    return trouble


class _Baselines:
    """Baselines by NAME (or path), each read once; an unknown one is the user's error (InputError)."""

    def __init__(self, baselines_dir: str | None, settings: dict, files: EngineFiles, voice: Voice):
        self.baselines_dir, self.settings, self.files, self.voice = baselines_dir, settings, files, voice
        self.known: dict[str, Baseline] = {}

    def get(self, spec: str) -> Baseline:
        from ..notify.settings import resolve_baselines_dir
        from .targets import named_baseline
        if spec not in self.known:
            note = lambda m: self.voice.aside(f"note: {m}")  # noqa: E731
            self.known[spec] = named_baseline(
                spec, resolve_baselines_dir(spec, self.baselines_dir, os.environ, self.settings, note), self.files)
        return self.known[spec]

    def used(self, entries: list[dict]) -> list[Baseline]:
        """The baselines the entries were judged against, in the order first used."""
        names = []
        for e in entries:
            name = ((e.get("comparison") or {}).get("baseline") or {}).get("name")
            if name and name not in names:
                names.append(name)
        by_name = {b.name: b for b in self.known.values()}
        return [by_name[n] for n in names if n in by_name]


def _inventory_names(inventory: str, unit: str | None) -> dict[tuple[str, str], str | None]:
    from .targets import inventory_baselines
    return inventory_baselines(inventory, unit)


def _targets(settings: dict, host: str | None, unit: str | None, baseline_unit: str | None,
             unit_files, limit: str | None = None, shard: Shard | None = None) -> list[tuple[str, str]]:
    """The (host, unit) pairs to read live: --host with --unit (default: the baseline's unit), or
    the inventory's (every unit it lists, or --unit; only the hosts --limit selects); with `shard`,
    only that slice's hosts."""
    from ..collect.unitname import validate_unit_name
    from .targets import inventory_targets
    targets = []
    if limit and (host or not settings.get("inventory")):
        raise InputError("--limit chooses among an inventory's hosts: give --inventory FILE (and no --host)")
    if host:
        targets.append((host, unit or baseline_unit))
    elif settings.get("inventory"):
        targets.extend(inventory_targets(settings["inventory"], unit, limit))
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

    from .answers import AnswerWorker
    with AnswerWorker(arrived) as behind:  # compared off the collector's loop, in arrival order
        raws = collect_live(targets, ssh, inventory, on_result=behind.put, warn=voice.warn, files=judge.files)
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


def _since_from_store(doc: dict, store: str | None, baselines: _Baselines, judging: Judging,
                      voice: Voice) -> None:
    """Each finding's "since" from the snapshot store, each unit against its own baseline (nothing
    when the store holds no snapshot of it)."""
    from .history import annotate_since
    from ..snapshots.store import SnapshotStore
    opened = SnapshotStore(store or None, on_problem=lambda m: voice.aside(f"warning: {m}"))
    by_name: dict[str, list[dict]] = {}
    for entry in doc["hosts"]:
        name = ((entry.get("comparison") or {}).get("baseline") or {}).get("name")
        if name:
            by_name.setdefault(name, []).append(entry)
    known = {b.name: b for b in baselines.known.values()}
    for name, entries in by_name.items():
        if name in known:
            annotate_since({"hosts": entries}, opened, known[name], judging)
    doc["history"] = {"store": str(opened.root), "problems": list(opened.problems)}


def _feed_store(snapshots: list[Snapshot], store: str | None, voice: Voice) -> bool:
    """Every live unit read saved to the snapshot store (after "since" was read from it), so history,
    "since" and "new since last run" work from the report's one cron job. True when one could not be
    saved (said; the report still goes out)."""
    from .history import changes_between
    from ..snapshots.store import save_snapshot
    trouble = False
    for snap in snapshots:
        try:
            save_snapshot(snap, store or None, changes=changes_between)  # kept, so history never diffs
        except DriftwatchError as exc:
            voice.say(f"{snap.host}: {snap.unit}: not stored: {exc}")
            trouble = True
    return trouble


def _write(doc: dict, fmt: str, output: str | None, prometheus_file: str | None, voice: Voice) -> bool:
    """--prometheus and --output, each atomically; True when one could not be written (said, and the
    report is still shown and mailed)."""
    from ..fileio import write_atomic
    from ..report import get_format
    trouble = False
    for path, name in ((prometheus_file, "prometheus"), (output, fmt)):
        if not path:
            continue
        if name == "prometheus":  # every series labelled with the file's name: runs never collide
            from ..report.prometheus import render_textfile, report_label
            text = render_textfile(doc, report_label(path))
        else:
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
