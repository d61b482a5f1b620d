"""The report documents as types: what run/ builds, every format renders and notify/ mails.

TypedDicts, not classes: at run time each document stays the plain dict it always was, so its JSON
(`driftwatch.compare/v1`, `driftwatch.report/v1`, `driftwatch.history/v1`) is byte for byte what
scripts and the shards' `report --merge` read; the types only let mypy check every key a builder
writes and a reader asks for. A key marked NotRequired is written only when it applies (a secret,
a shard, a "since" from the store); a key typed `X | None` is always there and may be null.

Readers that take a document from outside (a file given to `report --merge`, a JSON on disk a format
renders) cannot trust it to fit these types: report/view.py and report/wording.py read any
`DocumentLike` defensively; these types say what driftwatch itself writes.

The package imports this module only for the checker (`if TYPE_CHECKING:`): building two dozen
TypedDicts costs ~4 ms, which no command pays at start-up.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:  # typing.NotRequired is 3.11+; only the checker reads the annotations (PEP 563)
    from typing_extensions import NotRequired

# A document as the defensive readers (report/view.py, report/wording.py) take it: any of the
# TypedDicts below, or a dict read from a file that may not fit them.
DocumentLike = Mapping[str, Any]

# a unit judged and drifted or clean, unreadable, or read without a baseline to judge it against
Status = Literal["drift", "clean", "error", "no_baseline"]

# --------------------------------------------------------------------------- driftwatch.compare/v1


class BaselineRef(TypedDict):
    """A baseline as the documents name it (`report.baseline`, `report.baselines[]`, history's)."""

    name: str
    host: str | None
    unit: str | None
    metrics: dict[str, Any]  # throughput, accept_length, … as recorded (numbers, by the schema)


class ComparedBaseline(BaselineRef):
    """A comparison's baseline side: the baseline and the engine its unit was read as."""

    engine: str | None
    engine_label: str | None
    engine_version: str | None


class ComparedTarget(TypedDict):
    """A comparison's current side: what was read, and the engine release it was read under (and why)."""

    host: str | None
    unit: str | None
    source: str | None
    metrics: dict[str, Any]
    engine: str | None
    engine_label: str | None
    engine_version: str | None
    engine_version_reason: str | None


class ImpactDoc(TypedDict):
    dimension: str | None
    throughput_ratio: float | None
    interval: list[float] | None  # [lo, hi], the ratio's 80 % interval
    direction: str | None
    confidence: str | None
    counted_in: NotRequired[int]  # the rank of the finding whose estimate holds this change's effect


class SinceDoc(TypedDict):
    """Since when a fleet finding has been present (run/since.py `annotate_since`): the first snapshot
    of its unbroken run (`at`, `snapshot`, `id`), or new since the newest stored one (`after`)."""

    at: str | None
    snapshot: str | None
    id: NotRequired[str]
    after: NotRequired[str]


class FindingDoc(TypedDict):
    """One finding (or ignored finding) of a comparison: report/data.py `finding_to_dict`."""

    rank: int
    key: str
    concept: str | None
    flag: str
    baseline: Any  # the baseline's value, masked; a placeholder when `secret`
    current: Any
    baseline_source: str | None
    current_source: str | None
    secret: NotRequired[bool]
    rule: str
    severity: str
    impact: ImpactDoc
    explanation: str
    origin: NotRequired[dict[str, Any]]  # {"baseline": file, "current": file} that set each side
    details: NotRequired[dict[str, Any]]
    ignored_because: NotRequired[str]
    group: NotRequired[int]  # the fleet report's drift group it is told in (report/data.py `drift_groups`)
    since: NotRequired[SinceDoc]  # with a snapshot store (fleet reports only)
    last_run: NotRequired[str]  # "new" | "still present" since the last mailed run (notify/state.py)


class MeasuredVsPredictedDoc(TypedDict):
    """Does the drift explain the measured change (findings/explained.py `MeasuredVsPredicted.to_dict`)."""

    measured: float
    interval: list[float] | None
    verdict: str  # explained | not explained | no prediction
    look_at: list[str]


class ComparisonDoc(TypedDict):
    """`driftwatch.compare/v1`: one unit against its baseline (report/data.py `comparison_to_dict`)."""

    schema: str
    baseline: ComparedBaseline
    target: ComparedTarget
    concurrency: int
    drift: bool
    predicted_throughput_ratio: float | None
    predicted_throughput_interval: list[float] | None
    predicted_direction: str | None
    predicted_throughput: float | None
    prediction_withheld: str | None
    measured_throughput_ratio: float | None
    measured_vs_predicted: MeasuredVsPredictedDoc | None
    warnings: list[str]
    summary: str
    findings: list[FindingDoc]
    ignored: list[FindingDoc]
    notes: list[str]


# --------------------------------------------------------------------------- driftwatch.report/v1


class HostEntry(TypedDict):
    """One (host, unit) of a fleet report (report/data.py `host_entry`, completed by run/fleet.py)."""

    host: str
    unit: str | None
    status: Status
    error: str | None
    comparison: ComparisonDoc | None
    failure: NotRequired[str]  # why it could not be read (status "error")
    file: NotRequired[str]  # the unit file's path, as given
    baseline: NotRequired[str | None]  # the baseline it is (or was to be) judged against
    namespace: NotRequired[str]  # where a container runs (the Prometheus labels of its series)
    workload: NotRequired[str]
    container: NotRequired[str]


class UnitCounts(TypedDict):
    total: int
    drifted: int
    clean: int
    unreadable: int
    no_baseline: int


class ReportSummary(TypedDict):
    """Hosts counted (a host with two units is one host); `units`, the (host, unit) pairs."""

    hosts: int
    drifted: int
    clean: int
    unreadable: int
    no_baseline: int
    units: UnitCounts


class GroupHost(TypedDict):
    host: str | None
    unit: str | None


class DriftGroup(TypedDict):
    """Identical findings across units, told once (report/data.py `drift_groups`)."""

    rule: str | None
    key: str | None
    concept: str | None
    flag: str | None
    severity: str | None
    baseline_name: str | None
    baseline: Any
    current: Any
    baseline_source: str | None
    current_source: str | None
    secret: bool
    origin: str | None  # the file name (not the path) that set the current value
    impact: ImpactDoc | None
    explanation: str | None
    rank: int | None
    hosts: list[GroupHost]
    group: int


class StoreNote(TypedDict):
    """The snapshot store a fleet report read "since" from, and what it could not read."""

    store: str | None
    problems: list[str]


class FleetReportDoc(TypedDict):
    """`driftwatch.report/v1`: many units, each against its baseline (report/data.py
    `assemble_report`, completed by run/fleet.py and run/merge.py)."""

    schema: str
    generated_at: str
    baseline: BaselineRef | None  # the report's one baseline; null when units were judged against several
    baselines: list[BaselineRef]
    summary: ReportSummary
    inventory: str | None
    drift_groups: list[DriftGroup]
    hosts: list[HostEntry]
    shard: NotRequired[str]  # `report --shard I/N`
    warnings: NotRequired[list[str]]  # ignores that matched nothing; a merge's missing shards
    history: NotRequired[StoreNote]
    merged: NotRequired[list[str]]  # `report --merge`: the shards merged, in order
    missing_shards: NotRequired[list[str]]


# --------------------------------------------------------------------------- driftwatch.history/v1


class SnapshotRef(TypedDict):
    snapshot: str
    collected_at: str


class PreviousRef(SnapshotRef):
    last_seen: str  # the last run that still saw the old state


class ChangeDoc(TypedDict):
    """A change between two consecutive snapshots (diff/changes.py), where and when it was seen."""

    at: str
    snapshot: str
    key: str
    concept: str | None
    flag: str
    kind: str
    old: Any
    new: Any
    old_source: str | None
    new_source: str | None
    secret: NotRequired[bool]
    origin: NotRequired[dict[str, Any]]
    note: NotRequired[str]
    previous: PreviousRef


# an episode of a finding: present from `from` until `gone_at` (None: still present); "from" is a keyword
EpisodeDoc = TypedDict("EpisodeDoc", {"from": SnapshotRef | None, "gone_at": SnapshotRef | None})


class HistoryFindingDoc(TypedDict):
    """A finding of the newest snapshot, through time (run/since.py `baseline_findings`)."""

    rank: int
    key: str
    concept: str | None
    flag: str
    baseline: Any
    current: Any
    baseline_source: str | None
    current_source: str | None
    rule: str
    severity: str
    impact: ImpactDoc
    secret: NotRequired[bool]
    origin: NotRequired[dict[str, Any]]
    since: SnapshotRef | None
    first_seen: SnapshotRef | None
    went_away: bool
    episodes: list[EpisodeDoc]
    value_since: NotRequired[SnapshotRef | None]


class UnitHistoryDoc(TypedDict):
    """One host/unit of a history (run/history_document.py `unit_history`)."""

    host: str
    unit: str
    snapshots: int
    readable: int
    runs: int
    first: SnapshotRef | None
    latest: SnapshotRef | None
    last_run: str | None
    changes: list[ChangeDoc]
    findings: NotRequired[list[HistoryFindingDoc]]  # with a baseline
    baseline: NotRequired[BaselineRef | None]  # each unit judged against its own


class HistoryDoc(TypedDict):
    """`driftwatch.history/v1` (run/history_document.py `history_document`)."""

    schema: str
    generated_at: str
    store: str
    since: str | None
    baseline: BaselineRef | None
    units: list[UnitHistoryDoc]
    problems: list[str]
    baselines: NotRequired[list[BaselineRef]]


AnyDocument = ComparisonDoc | FleetReportDoc | HistoryDoc

__all__ = [
    "AnyDocument", "BaselineRef", "ChangeDoc", "ComparedBaseline", "ComparedTarget", "ComparisonDoc",
    "DocumentLike", "DriftGroup", "EpisodeDoc", "FindingDoc", "FleetReportDoc", "GroupHost", "HistoryDoc",
    "HistoryFindingDoc", "HostEntry", "ImpactDoc", "MeasuredVsPredictedDoc", "PreviousRef", "ReportSummary",
    "SinceDoc", "SnapshotRef", "Status", "StoreNote", "UnitCounts", "UnitHistoryDoc",
]
