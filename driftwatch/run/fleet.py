"""The fleet report (`driftwatch report`), end to end, in one function: `report_fleet`.

the targets, resolved once by the CLI (run/targets.py `resolve_targets`: what was named, or the
inventory's hosts narrowed by `limit`; each with its own baseline) → `--shard` → every baseline
named read → local files compared → live hosts collected, each compared as its answer arrives →
one `driftwatch.report/v1` document (drift told once in groups) → unused ignores checked on
the real findings of the whole fleet → "since" from the snapshot store → every unit read fed to the
store → rendered, written, shown → mailed.

A host that cannot be read, or whose unit cannot be read, is an entry with its error, never a
reason to stop the others. The document and its words are report/'s (`build_report`,
`comparison_to_dict`); the judging is findings/'s; this module only runs the steps in order.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..engines.files import NO_FILES, EngineFiles
from ..errors import EXIT_DRIFT, EXIT_OK, EXIT_TROUBLE, DriftwatchError, InputError, NotifyError
from .reading import CollectOptions, collect_targets
from .targets import Target, TargetRequest, baseline_override_note, with_unit
from .voice import Voice

if TYPE_CHECKING:
    from ..collect.raw import RawUnit
    from ..findings.compare import Comparison
    from ..findings.ignore import IgnoreEntry
    from ..findings.judging import Judging
    from ..report.document import DocumentLike, FleetReportDoc, HostEntry
    from ..snapshots.baseline import Baseline
    from ..snapshots.snapshot import Snapshot
    from .live_containers import LiveRead
    from .shard import Shard


class Judge:
    """Units judged against their baselines, each becoming one entry of the report. A unit's
    baseline is its Target's (resolved once, run/targets.py), read through `baselines`; without a
    target, `pick(host, unit)` says which (default: `baseline` for every one; None: the unit has no
    baseline, its entry says so and it is not judged). Every Comparison is kept, so the ignores
    that matched nothing are found on the real findings; every live unit read is kept in `read`
    (for the snapshot store). Units are read with `files`, the engine configuration files the
    user gave. Every entry names the baseline it is (or would have been) judged against, an
    unreadable one included."""

    def __init__(self, baseline: Baseline | None, judging: Judging, files: EngineFiles = NO_FILES,
                 pick: Callable[[str, str], Baseline | None] | None = None, baselines: _Baselines | None = None):
        self.baseline = baseline
        self.judging = judging
        self.files = files
        self.pick = pick
        self.baselines = baselines
        self.comparisons: list[Comparison] = []
        self.read: list[Snapshot] = []

    def baseline_of(self, host: str | None, unit: str | None, target: Target | None = None) -> Baseline | None:
        if target is not None and self.baselines is not None:
            return self.baselines.get(target.baseline) if target.baseline else None
        return self.pick(host or "", unit or "") if self.pick is not None else self.baseline

    def snapshot(self, snap: Snapshot, file: str | None = None, target: Target | None = None) -> HostEntry:
        """The entry of a unit read (labelled by `file`, the path the user gave, when it is one)."""
        from ..report.data import comparison_to_dict, host_entry
        if target is not None:
            base = self.baseline_of(snap.host, snap.unit, target)
        else:
            base = self.baseline if file is not None else self.baseline_of(snap.host, snap.unit)
        label = file if file is not None else snap.host
        if base is None:
            return host_entry(label, snap.unit, "no_baseline", file=file)
        result = self.judging.compare(base, snap)
        entry = host_entry(label, snap.unit, "drift" if result.drift else "clean",
                           comparison_to_dict(result), file=file)
        self.comparisons.append(result)
        return _named(entry, base)

    def unit_file(self, path: str, target: Target | None = None) -> HostEntry:
        """A local unit file, labelled by the path as given; one that cannot be read or parsed is an
        entry with its error."""
        from ..report.data import host_entry
        from .reading import snapshot_from_unit_file
        try:
            snap = snapshot_from_unit_file(path, None, self.judging.engine_version, self.files)
        except DriftwatchError as exc:
            entry = host_entry(path, path.rstrip("/").rsplit("/", 1)[-1], "error", error=str(exc),
                               failure="invalid unit", file=path)
            return _named(entry, self.baseline_of(None, None, target) if target is not None else self.baseline)
        return self.snapshot(snap, file=path, target=target)

    def raw(self, raw: RawUnit, target: Target | None = None) -> HostEntry:
        """One host and unit as collected; whatever goes wrong with it stays its own error (the
        entry still names the unit's baseline: a down host keeps it in every output)."""
        from ..report.data import host_entry
        from ..snapshots.reader import snapshot_from_raw
        base = self._quiet_baseline(raw, target)
        if raw.status not in ("ok", "fallback"):
            error = f"{raw.host}: {raw.unit}: {raw.status}" + (f": {raw.error}" if raw.error else "")
            return _named(host_entry(raw.host, raw.unit, "error", error=error, failure=raw.status), base)
        try:
            snap = snapshot_from_raw(raw, self.judging.engine_version, self.files)
        except DriftwatchError as exc:
            return _named(host_entry(raw.host, raw.unit, "error", error=str(exc), failure="invalid unit"), base)
        self.read.append(snap)
        try:
            return self.snapshot(snap, target=target)
        except DriftwatchError as exc:
            return _named(host_entry(raw.host, raw.unit, "error", error=str(exc), failure="invalid unit"), base)
        except Exception as exc:  # noqa: BLE001 - a bug on one host's input must not cost the report
            return _named(host_entry(raw.host, raw.unit, "error", error=f"{raw.host}: {raw.unit}: internal error: "
                                     f"{type(exc).__name__}", failure="error"), base)

    def manifest(self, target: Target, collect: CollectOptions) -> HostEntry:
        """`report --manifest`: the manifests' engine container, labelled by the first file; a file
        that cannot be read is an entry with its error."""
        from ..report.data import host_entry
        from .reading import read_target
        try:
            snap = read_target(target, collect)
        except DriftwatchError as exc:
            entry = host_entry(target.path, target.unit or "manifest", "error", error=str(exc),
                               failure="invalid unit", file=target.path)
            return _named(entry, self._quiet_baseline_of(target))
        entry = self.snapshot(snap, file=target.path, target=target)
        entry["unit"] = snap.unit
        return _with_labels(entry, _container_labels(snap))

    def live(self, read: LiveRead) -> HostEntry:
        """A container or Kubernetes unit read live (run/live_containers.py): judged against its
        target's baseline, a Pod against its workload's template; an unreadable one is its error."""
        from ..report.data import comparison_to_dict, host_entry
        base = read.template if read.template is not None else self._quiet_baseline_of(read.target)
        if read.snapshot is None:
            entry = host_entry(read.host, read.unit, "error", error=read.error, failure=read.failure or "error")
            return _with_labels(_named(entry, base), read.labels)
        self.read.append(read.snapshot)
        if base is None:
            return _with_labels(_named(host_entry(read.host, read.unit, "no_baseline"), None), read.labels)
        try:
            result = self.judging.compare(base, read.snapshot)
        except DriftwatchError as exc:
            entry = host_entry(read.host, read.unit, "error", error=f"{read.host}: {read.unit}: {exc}",
                               failure="invalid unit")
            return _with_labels(_named(entry, base), read.labels)
        self.comparisons.append(result)
        entry = host_entry(read.host, read.unit, "drift" if result.drift else "clean", comparison_to_dict(result))
        return _with_labels(_named(entry, base), read.labels)

    def _quiet_baseline_of(self, target: Target) -> Baseline | None:
        try:
            return self.baseline_of(target.host, target.unit, target)
        except DriftwatchError:
            return None

    def _quiet_baseline(self, raw: RawUnit, target: Target | None) -> Baseline | None:
        try:
            return self.baseline_of(raw.host, raw.unit, target)
        except DriftwatchError:
            return None

    def unused_ignores(self) -> list[IgnoreEntry] | None:
        """The ignores that matched no difference on any unit (None: nothing was compared, so no
        ignore could have matched)."""
        from ..findings.ignore import unused
        if not self.comparisons:
            return None
        pairs = [(f.rule, f.difference) for c in self.comparisons for f in c.findings + c.ignored]
        return unused(list(self.judging.ignore), pairs)


def _with_labels(entry: HostEntry, labels: dict[str, str]) -> HostEntry:
    """The entry with where its container runs (`namespace`, `workload`, `container`: the Prometheus
    labels of a container's series; a unit's entry has none)."""
    for key in ("namespace", "workload", "container"):
        if labels.get(key):
            entry[key] = labels[key]
    return entry


def _container_labels(snap: Snapshot) -> dict[str, str]:
    """A manifest's container: its namespace, workload (KIND/NAME) and container name."""
    origin = (snap.runtime.get("container") or {}).get("origin") or {}
    out = {"namespace": origin.get("namespace") or "", "container": origin.get("container") or ""}
    if origin.get("kind") and origin.get("name"):
        out["workload"] = f"{origin['kind']}/{origin['name']}"
    return out


def _judge_live(judge: Judge, targets: list[Target], collect: CollectOptions) -> list[HostEntry]:
    """The containers' and workloads' entries (run/live_containers.py), in the order named."""
    if not targets:
        return []
    from .live_containers import read_live
    return [judge.live(read) for read in read_live(targets, collect)]


def _named(entry: HostEntry, base: Baseline | None) -> HostEntry:
    """The entry with the name of the baseline its unit is judged against (None: none), also when
    it could not be read: the report says which baseline a down host was to be judged against."""
    entry["baseline"] = base.name if base is not None else None
    return entry


@dataclass
class FleetReport:
    doc: FleetReportDoc  # driftwatch.report/v1
    trouble: bool  # a unit unreadable, a file not written or a mail not sent

    @property
    def exit_code(self) -> int:
        if self.trouble:
            return EXIT_TROUBLE
        return EXIT_DRIFT if self.doc["summary"]["drifted"] else EXIT_OK


@dataclass(frozen=True)
class JudgingOptions:
    """How units are judged: rules, ignores, the workload the prediction is for, where named
    baselines live."""

    rules_dir: str | None = None
    ignores: tuple[str, ...] = ()
    ignore_file: str | None = None
    concurrency: int | None = None
    workload: tuple[tuple[str, float], ...] = ()
    baselines_dir: str | None = None

    def load(self, engine_version: str | None) -> Judging:
        from ..findings.judging import load_judging
        judging = load_judging(self.rules_dir, self.ignores, self.ignore_file, self.concurrency, engine_version)
        if self.workload:  # --workload-prefix-share / --workload-prompt-tokens (impact/workload.py)
            judging = dataclasses.replace(judging, workload=tuple(self.workload))
        return judging


@dataclass(frozen=True)
class FleetOutputs:
    """Where the report goes: printed (`show`), --output, --prometheus, mail (`settings`: e-mail,
    SMTP, state, laid over the config file's), and the snapshot store fed with every unit read."""

    settings: dict
    fmt: str = "text"
    output: str | None = None
    prometheus_file: str | None = None
    always: bool = False
    show: Callable[[FleetReportDoc], None] | None = None
    store: str | None = None
    save: bool = True


@dataclass(frozen=True)
class FleetRun:
    """One fleet report: the targets (resolved once, run/targets.py, each with its baseline), how
    they are read, judged and published."""

    targets: tuple[Target, ...]
    collect: CollectOptions
    judging: JudgingOptions
    outputs: FleetOutputs
    voice: Voice
    inventory: str | None = None  # the inventory the hosts came from (named in the document)
    shard: Shard | None = None


def report_settings(options: dict, config_path: str | None) -> tuple[dict, dict]:
    """(the command line's report settings laid over the config file's, the config file's alone):
    the second says what the file names (its inventory, baseline), never merged into the targets."""
    from ..config import load_report_settings, merge
    from_file = load_report_settings(config_path, os.environ)
    settings = merge(options, from_file)
    if settings.get("only_changes") and not settings.get("state"):
        raise InputError("--only-changes needs --state FILE (where the last report's fingerprint is kept)")
    return settings, from_file


def report_fleet(run: FleetRun) -> FleetReport:
    """Check the targets against their own baselines; write, show and mail one report; feed the
    snapshot store with every live unit read (unless `outputs.save` is false). Notes, the
    document's own warnings and what the mail did are said `aside`; the errors that make the exit
    code 2 are `say`d."""
    from ..report.data import build_report
    voice, outputs = run.voice, run.outputs
    judging = run.judging.load(run.collect.engine_version)
    if outputs.save or outputs.store:  # the store's own measured changes re-size the intervals (findings/fleet.py)
        from ..findings.fleet import with_fleet
        judging = with_fleet(judging, outputs.store)
    baselines = _Baselines(run.judging.baselines_dir, outputs.settings, run.collect.files, voice)
    targets = _with_units(list(run.targets), baselines)
    if run.shard is not None:
        targets = [t for t in targets if t.host is None or run.shard.holds(t.host)]
    if not targets:
        raise InputError("nothing to check: give --inventory FILE, --host H --unit U, --unit-file FILE or "
                         "--manifest FILE")
    for spec in dict.fromkeys(t.baseline for t in targets if t.baseline):
        baselines.get(spec)  # every baseline named, known before any host is read
    note = baseline_override_note(targets)
    if note:
        voice.aside(note)
    specs = {t.baseline for t in targets}
    only = specs.pop() if len(specs) == 1 else None
    default = baselines.get(only) if only else None
    judge = Judge(default, judging, run.collect.files, baselines=baselines)
    entries = [judge.unit_file(t.path or "", t) for t in targets if t.kind == "unit-file"]
    entries += [judge.manifest(t, run.collect) for t in targets if t.kind == "manifest"]
    entries += _judge_hosts(judge, [t for t in targets if t.kind == "ssh"], dataclasses.replace(run.collect,
                                                                                                  warn=voice.warn))
    entries += _judge_live(judge, [t for t in targets if t.kind in ("container", "kubernetes")], run.collect)
    inventory = os.path.abspath(run.inventory) if run.inventory else None
    doc = build_report(default, entries, baselines.used(entries), inventory)
    if run.shard is not None:
        doc["shard"] = str(run.shard)  # what `report --merge` checks the shards by; a label on run-level metrics
    _say_unused_ignores(doc, judge, voice)
    _since_from_store(doc, outputs.store, baselines, judging, voice)
    store_trouble = _feed_store(judge.read, outputs.store, voice) if outputs.save else False
    return FleetReport(doc, publish(doc, outputs.settings, fmt=outputs.fmt, output=outputs.output,
                                    prometheus_file=outputs.prometheus_file, always=outputs.always, voice=voice,
                                    show=outputs.show) or store_trouble)


def fleet_request_check(targets: list[Target], request: TargetRequest) -> None:
    """A report must be able to judge what was named: a unit file needs a baseline (typed or the
    config file's); a host typed and unknown to the inventory needs one too (the inventory's
    silence or opt-out is a decision; a typo'd host without a baseline is not)."""
    for t in targets:
        if t.kind == "unit-file" and t.baseline is None:
            raise InputError("--unit-file needs --baseline NAME (or `baseline:` in the config file)")
        if t.kind == "manifest" and t.baseline is None:
            raise InputError("--manifest needs --baseline NAME (or `baseline:` in the config file)")
        if t.kind in ("ssh", "container") and request.hosts and t.baseline is None and t.baseline_from == "none" \
                and not _in_inventory(t):
            raise InputError("report needs --baseline NAME (or `baseline:` in the config file or the inventory)")


def _in_inventory(target: Target) -> bool:
    return target.address is not None and bool(target.address.units or target.address.baseline
                                               or target.address.unit_baselines or target.address.groups
                                               or target.address.containers or target.address.kubernetes)


def _with_units(targets: list[Target], baselines: _Baselines) -> list[Target]:
    """A host named without --unit is read for the unit its baseline records."""
    out = []
    for t in targets:
        if t.kind == "ssh" and not t.unit:
            recorded = baselines.get(t.baseline).unit if t.baseline else None
            if not recorded:
                raise InputError("--host needs --unit (the baseline records none)")
            t = with_unit(t, recorded)
        out.append(t)
    return out


def publish(doc: FleetReportDoc, settings: dict, *, fmt: str, output: str | None, prometheus_file: str | None,
            always: bool, voice: Voice, show: Callable[[FleetReportDoc], None] | None) -> bool:
    """A finished report written (--output, --prometheus), shown, its unreadable units named and
    mailed: the tail every fleet report shares, one run's or shards merged (run/merge.py). True when
    a unit was unreadable, a file not written or the mail not sent."""
    trouble = doc["summary"]["unreadable"] > 0
    trouble = _write(doc, fmt, output, prometheus_file, voice) or trouble
    if show is not None and not output:  # -o FILE: the document is the file's, not stdout's too
        show(doc)
    for entry in doc["hosts"]:  # even when quiet: exit 2 must come with a reason cron can mail
        if entry["status"] == "error":
            voice.say(str(entry["error"]))
    if settings.get("email"):
        trouble = _mail(doc, settings, always, voice) or trouble
    return trouble


class _Baselines:
    """Baselines by NAME (or path), each read once; an unknown one is the user's error (InputError)."""

    def __init__(self, baselines_dir: str | None, settings: dict, files: EngineFiles, voice: Voice):
        self.baselines_dir, self.settings, self.files, self.voice = baselines_dir, settings, files, voice
        self.known: dict[str, Baseline] = {}

    def get(self, spec: str) -> Baseline:
        from ..config import resolve_baselines_dir
        from .reading import named_baseline
        if spec not in self.known:
            note = lambda m: self.voice.aside(f"note: {m}")  # noqa: E731
            self.known[spec] = named_baseline(
                spec, resolve_baselines_dir(spec, self.baselines_dir, os.environ, self.settings, note), self.files)
        return self.known[spec]

    def used(self, entries: Sequence[DocumentLike]) -> list[Baseline]:
        """The baselines the entries were judged (or, unread, were to be judged) against, in the
        order first used."""
        names = []
        for e in entries:
            name = ((e.get("comparison") or {}).get("baseline") or {}).get("name") or e.get("baseline")
            if name and name not in names:
                names.append(name)
        by_name = {b.name: b for b in self.known.values()}
        return [by_name[n] for n in names if n in by_name]


def _judge_hosts(judge: Judge, targets: list[Target], collect: CollectOptions) -> list[HostEntry]:
    """The live hosts' entries, in the order they were named; each host is compared as its answer
    arrives, overlapping the others' reads."""
    if not targets:
        return []
    from .answers import AnswerWorker
    compared: dict[int, HostEntry] = {}

    def arrived(item: tuple[RawUnit, Target]) -> None:
        raw, target = item
        compared[id(raw)] = judge.raw(raw, target)

    with AnswerWorker(arrived) as behind:  # compared off the collector's loop, in arrival order
        raws = collect_targets(targets, collect, on_result=lambda raw, target: behind.put((raw, target)))
    return [compared.get(id(raw)) or judge.raw(raw, target) for raw, target in zip(raws, targets, strict=True)]


def _say_unused_ignores(doc: FleetReportDoc, judge: Judge, voice: Voice) -> None:
    """An ignore that matched no difference on any host: a warning naming it (`aside`, and the
    report's `warnings`)."""
    from ..findings.ignore import unused_warning
    entries = judge.unused_ignores()
    if entries is None:
        return
    doc["warnings"] = [unused_warning(e) for e in entries]
    for message in doc["warnings"]:
        voice.aside(f"warning: {message}")


def _since_from_store(doc: FleetReportDoc, store: str | None, baselines: _Baselines, judging: Judging,
                      voice: Voice) -> None:
    """Each finding's "since" from the snapshot store, each unit against its own baseline (nothing
    when the store holds no snapshot of it)."""
    from ..snapshots.store import open_store
    from .since import annotate_since
    opened = open_store(store or None, on_problem=lambda m: voice.aside(f"warning: {m}"))
    by_name: dict[str, list[HostEntry]] = {}
    for entry in doc["hosts"]:
        name = c["baseline"].get("name") if (c := entry.get("comparison")) else None
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
    from ..diff.changes import changes_between
    from ..snapshots.store import save_snapshot
    trouble = False
    for snap in snapshots:
        try:
            save_snapshot(snap, store or None, changes=changes_between)  # kept, so history never diffs
        except DriftwatchError as exc:
            voice.say(f"{snap.host}: {snap.unit}: not stored: {exc}")
            trouble = True
    return trouble


def _write(doc: FleetReportDoc, fmt: str, output: str | None, prometheus_file: str | None, voice: Voice) -> bool:
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


def _mail(doc: FleetReportDoc, settings: dict, always: bool, voice: Voice) -> bool:
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
