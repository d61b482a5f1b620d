"""Baseline + current snapshot -> a ranked Comparison: findings, estimates, predicted throughput.

This is the one place that joins diff, rules and impact models. It makes numbers, not sentences:
report/wording.py words each finding (`explain`), and renderers only format.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..diff import Difference, EnginePair, diff_snapshots, read_pair
from ..diff.reported import reported_concepts, reported_figures
from ..engines.config import EngineConfig, folded_issues
from ..facts import facts_context
from ..impact import ImpactContext, combine, combine_intervals, direction, get_model
from ..redact import mask_fingerprints
from ..snapshots.baseline import Baseline
from ..snapshots.snapshot import Snapshot
from ..snapshots.unitload import depends_on_unknown
from .explained import MeasuredVsPredicted, host_facts, judge
from .ignore import IgnoreEntry
from .rulebook import Rule, match_rule

COMPARE_SCHEMA = "driftwatch.compare/v1"
_SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}
# Ranking weight of a finding with no quantitative estimate, by severity (≈ |ln ratio| equivalents).
_UNQUANTIFIED_WEIGHT = {"high": 0.15, "medium": 0.05, "low": 0.01, "info": 0.0}


def _link_counted(findings: list[Finding]) -> None:
    """A finding whose effect another one holds names that one's rank (reports: "counted in #1")."""
    by_concept = {f.difference.concept: f.rank for f in findings if f.difference.concept}
    for finding in findings:
        if finding.counted_in is not None:
            finding.counted_in_rank = by_concept.get(finding.counted_in)


@dataclass
class Finding:
    difference: Difference
    rule: Rule
    throughput_ratio: float | None
    confidence: str
    dimension: str
    detail: str  # the impact model's own sentence (fingerprints masked); report/ words the explanation
    rank: int = 0
    ignored_because: str | None = None
    interval: tuple[float, float] | None = None  # the ratio's 80 % interval (impact/uncertainty.py)
    counted_in: str | None = None  # the concept whose finding holds this change's effect (impact model's)
    counted_in_rank: int | None = None  # that finding's rank, once ranked

    @property
    def direction(self) -> str:
        """faster / slower only where the interval excludes 1; unchanged; unknown."""
        return direction(self.throughput_ratio, self.interval)

    @property
    def key(self) -> str:
        return self.difference.key

    @property
    def performance(self) -> bool:
        """False for a setting with no throughput effect: a secret (compared by fingerprint only), or a
        rule's dimension `none` (logging, identity, supervision). Those rank below every performance
        finding and never ask to re-measure."""
        return not self.difference.secret and self.dimension != "none"

    def weight(self) -> float:
        r = self.throughput_ratio
        if r is not None and r > 0 and abs(math.log(r)) > 1e-9:
            return abs(math.log(r))
        return _UNQUANTIFIED_WEIGHT.get(self.rule.severity, 0.03) * (0.5 if r == 1.0 else 1.0)


@dataclass
class Comparison:
    baseline: Baseline
    current: Snapshot
    pair: EnginePair
    findings: list[Finding]
    ignored: list[Finding]
    concurrency: int
    baseline_metrics: dict[str, float]
    current_metrics: dict[str, float]
    predicted_throughput_ratio: float | None
    predicted_throughput: float | None
    notes: list[str] = field(default_factory=list)
    prediction_withheld: str | None = None  # why there is no prediction at all (other model/engine, no start,
    # or a modelled product smaller than what an unquantified high-severity change may do)
    warnings: list[str] = field(default_factory=list)  # what makes the numbers less trustworthy
    measured_throughput_ratio: float | None = None  # measured now ÷ measured on the baseline, when both are
    predicted_throughput_interval: tuple[float, float] | None = None  # 80 % interval of the predicted ratio
    # the measured ratio against that interval, and the host facts to look at where it is not explained
    measured_vs_predicted: MeasuredVsPredicted | None = None

    @property
    def predicted_direction(self) -> str:
        return direction(self.predicted_throughput_ratio, self.predicted_throughput_interval)

    @property
    def drift(self) -> bool:
        return bool(self.findings)


def _side_values(config: EngineConfig) -> tuple[dict[str, Any], set[str]]:
    """What impact models read of one side: concept -> value, and the concepts computed at start-up."""
    return config.concept_values()


def _startup_differences(pair: EnginePair, current: Snapshot) -> list[Difference]:
    """One finding for everything that stops the current server from starting (unless the baseline
    has the same problem): unknown or removed flags, ambiguous prefixes, known start-up crashes. A value
    an unread EnvironmentFile= may set is unknown, not a problem (snapshots/unitload.py)."""
    known = {(i.kind, i.flag) for i in pair.baseline.issues}
    explicit = pair.current.explicit() if current.unknown_variables else {}
    problems = [i for i in pair.current.issues if i.severity == "error" and (i.kind, i.flag) not in known
                and not depends_on_unknown(i, explicit, current.unknown_variables)]
    if not problems:
        return []
    named = list(dict.fromkeys(i.flag for i in problems if i.flag))
    flags = ", ".join(named[:_NAMED]) + (f", … ({len(named) - _NAMED} more)" if len(named) > _NAMED else "")
    notes = [f"{i.message}." for i in problems[:_NAMED]]
    if len(problems) > _NAMED:  # every one is named in the details; the sentence names the first few
        notes.append(f"… and {len(problems) - _NAMED} more problems of the same kind (all in the details).")
    return [Difference(key="engine.startup", label=f"start-up ({flags or 'the command line'})", baseline="starts",
                       current="refuses to start", notes=notes, details={"problems": folded_issues(problems)})]


def _load_differences(b: Snapshot, c: Snapshot) -> list[Difference]:
    """One finding when systemd will not load the current unit (unless the baseline is refused for the
    same reasons): whatever its flags say, it never starts (snapshots/unitload.py)."""
    def reason(message: str) -> str:  # "FILE:LINE: why" -> "why": the same refusal in another file
        return re.sub(r"^\S+?(:\d+)?: ", "", message, count=1)
    known = {reason(m) for m in b.load_errors}
    reasons = [m for m in c.load_errors if reason(m) not in known]
    if not reasons:
        return []
    notes = [f"systemd will not load this unit: {m}." for m in reasons[:_NAMED]]
    if len(reasons) > _NAMED:
        notes.append(f"… and {len(reasons) - _NAMED} more reasons (all in the details).")
    return [Difference(key="systemd.load", label="systemd load", baseline="refused" if b.load_errors else "loads",
                       current="refused", notes=notes, details={"load_errors": reasons})]


_NAMED = 8  # start-up problems named in the finding's label and sentence (a unit may have thousands)


def compare(baseline: Baseline, current: Snapshot, rules: list[Rule], ignore: list[IgnoreEntry] | None = None,
            concurrency: int | None = None, baseline_metrics: dict[str, float] | None = None,
            current_metrics: dict[str, float] | None = None, engine_version: str | None = None) -> Comparison:
    pair = read_pair(baseline.snapshot, current, engine_version)
    startup = _startup_differences(pair, current)
    for diff in startup:  # what will not start is written on the ExecStart= line
        if "ExecStart" in current.origins:
            diff.origin = {"current": current.origins["ExecStart"]}
    diffs = diff_snapshots(baseline.snapshot, current, pair) + startup + _load_differences(baseline.snapshot, current)
    b_metrics = {**_reported_capacities(baseline.snapshot), **baseline.metrics, **(baseline_metrics or {})}
    c_metrics = {**current.runtime.get("measured", {}), **_reported_capacities(current), **reported_figures(current),
                 **(current_metrics or {})}
    conc = concurrency or int(b_metrics.get("concurrency") or c_metrics.get("concurrency") or 1)
    b_values, b_runtime = _side_values(pair.baseline)
    c_values, c_runtime = _side_values(pair.current)
    # Measured beats assumed: a value the server reported at start-up replaces one the engine
    # would compute (or a release default guessed for it), and a measured change is a finding.
    for metrics, values, runtime, config in ((b_metrics, b_values, b_runtime, pair.baseline),
                                             (c_metrics, c_values, c_runtime, pair.current)):
        _apply_measured(metrics, values, runtime, config)
    diffs += _measured_differences(diffs, b_metrics, c_metrics)
    gpus = current.runtime.get("gpus")
    ctx = ImpactContext(baseline=b_values, current=c_values, baseline_runtime=b_runtime, current_runtime=c_runtime,
                        baseline_metrics=b_metrics, current_metrics=c_metrics, concurrency=max(1, conc),
                        # "one stream" only when someone said so: else a batch-dependent model has no number
                        concurrency_known=(concurrency is not None or "concurrency" in b_metrics
                                           or "concurrency" in c_metrics),
                        gpus=len(gpus) if isinstance(gpus, list) else None,
                        current_reported=frozenset(pair.current.reported),
                        engine=pair.current.label if pair.same_engine and pair.current.label else None,
                        **facts_context(baseline.snapshot, current))  # model/GPU facts (driftwatch/facts)
    findings: list[Finding] = []
    ignored: list[Finding] = []
    for diff in diffs:
        rule = match_rule(rules, diff.key, diff.kind, None if diff.rule_by_key else diff.concept)
        model_rule = _model_rule(rules, rule, diff)
        name, b_value, c_value = diff.model_inputs()
        estimate = get_model(model_rule.model)(name, b_value, c_value, ctx, model_rule.params)
        finding = Finding(difference=diff, rule=rule, throughput_ratio=estimate.throughput_ratio,
                          confidence=estimate.confidence, dimension=estimate.dimension or model_rule.dimension,
                          detail=mask_fingerprints(estimate.detail), interval=estimate.interval,
                          counted_in=estimate.counted_in)
        if diff.secret and finding.throughput_ratio is None:
            finding.dimension = "none"  # a key or token: who may call the server, not how fast it runs
        entry = next((e for e in ignore or [] if e.matches(rule, diff)), None)
        if entry is not None:
            finding.ignored_because = entry.reason
            ignored.append(finding)
        else:
            findings.append(finding)
    findings = _fold_environment_files(findings, baseline.snapshot, current)
    # A unit that will not start serves nothing: that outranks any speed estimate. Settings with no
    # throughput effect (secrets, logging, identity) come after every performance finding.
    findings.sort(key=lambda f: (f.key not in ("systemd.load", "engine.startup"), f.key != "systemd.load",
                                 not f.performance, -f.weight(),
                                 _SEVERITY_ORDER.get(f.rule.severity, 9), f.key))
    for rank, finding in enumerate(findings, start=1):
        finding.rank = rank
    _link_counted(findings)
    withheld = _prediction_withheld(findings)
    ratio = None if withheld else _predict(findings)
    interval = None if ratio is None else combine_intervals((f.throughput_ratio, f.interval) for f in findings)
    if ratio is not None and interval is None:  # nothing modelled: the prediction is "unchanged" by definition
        interval = (ratio, ratio)
    throughput = b_metrics.get("throughput")
    predicted = round(throughput * ratio, 1) if ratio is not None and throughput is not None else None
    verdict = judge(_measured_ratio(b_metrics, c_metrics), _configuration_interval(findings, withheld, interval),
                    host_facts(baseline.snapshot, pair.baseline.version, b_metrics),
                    host_facts(current, pair.current.version, c_metrics))
    notes = list(dict.fromkeys(pair.baseline.notes + pair.current.notes))
    partial = [f"{side} {snap.host or 'local'}:{snap.unit}: {snap.runtime['not_read']}"
               for side, snap in (("baseline", baseline.snapshot), ("current", current))
               if snap.runtime.get("not_read")]  # a partial read never looks complete (a report shows warnings)
    if pair.same_engine and not pair.shared_version:
        notes.append(f"baseline read as {pair.baseline.title}, current as {pair.current.version}")
    return Comparison(baseline=baseline, current=current, pair=pair, findings=findings, ignored=ignored,
                      concurrency=ctx.concurrency, baseline_metrics=b_metrics, current_metrics=c_metrics,
                      predicted_throughput_ratio=None if ratio is None else float(ratio),
                      predicted_throughput=predicted, notes=notes, prediction_withheld=withheld,
                      warnings=partial + _warnings(b_metrics, ctx.concurrency, concurrency),
                      measured_throughput_ratio=_measured_ratio(b_metrics, c_metrics),
                      predicted_throughput_interval=interval, measured_vs_predicted=verdict)


def _fold_environment_files(findings: list[Finding], b: Snapshot, c: Snapshot) -> list[Finding]:
    """An EnvironmentFile= change is one finding carrying the variables its files set (named in its
    sentence, each in `details.variables`), not one finding more per variable. It ranks as the worst
    of them (their severity, dimension and combined estimate), so nothing they change is hidden."""
    carrier = next((f for f in findings if f.key == "unit.Service.EnvironmentFile"), None)
    files = set(b.environment_files or ()) | set(c.environment_files or ())
    if carrier is None or not files:
        return findings
    carried = [f for f in findings if f.key.startswith("env.")
               and any(f.difference.origin.get(side) in files for side in ("baseline", "current"))]
    if not carried:
        return findings
    diff = carrier.difference
    diff.details["variables"] = [{"key": f.key, "name": f.difference.label, "baseline": f.difference.baseline,
                                  "current": f.difference.current, "rule": f.rule.id, "severity": f.rule.severity,
                                  "secret": f.difference.secret} for f in carried]
    said = ", ".join(_change_text(f.difference) for f in carried)
    diff.notes.append(f"The variables they set that differ: {said}.")
    worst = min(carried + [carrier], key=lambda f: (not f.performance, _SEVERITY_ORDER.get(f.rule.severity, 9)))
    if worst is not carrier:
        from dataclasses import replace
        carrier.rule = replace(carrier.rule, severity=worst.rule.severity, dimension=worst.rule.dimension)
        carrier.dimension = worst.dimension
    ratios = [(f.throughput_ratio, f.interval) for f in carried if f.throughput_ratio is not None]
    if ratios:
        carrier.throughput_ratio = combine([r for r, _ in ratios])
        carrier.interval = combine_intervals(ratios)
    carrier.detail = ""  # the environment model's "no model for this variable": the list says more
    gone = {id(f) for f in carried}
    return [f for f in findings if id(f) not in gone]


def _change_text(diff: Difference) -> str:
    """NAME a → b for a variable carried by an EnvironmentFile= finding; a secret's value never shown."""
    if diff.secret:
        what = "set (redacted)" if diff.baseline is None else "unset" if diff.current is None else "changed (redacted)"
        return f"{diff.label} {what}"
    shown = ["unset" if v is None else mask_fingerprints(str(v)) for v in (diff.baseline, diff.current)]
    return f"{diff.label} {shown[0]} → {shown[1]}"


def _model_rule(rules: list[Rule], rule: Rule, diff: Difference) -> Rule:
    """The rule whose model estimates `diff`: its own, or (`params: {model_of: concept}`, DW604) the
    rule of the same concept, so "the server runs 1, not 16" is estimated as 16 → 1 would be."""
    if rule.params.get("model_of") != "concept" or not diff.concept:
        return rule
    native = diff.key.split(".", 1)[-1]
    return match_rule([r for r in rules if r is not rule], native, diff.kind, diff.concept)


# Metrics that are the start-up value of a concept (read from the engine's log or endpoint).
MEASURED_CONCEPTS = {"max_running_requests": "batch.max_running_requests",
                     "context_length": "kv.context_length",
                     "max_total_tokens": "kv.max_total_tokens"}


def _reported_capacities(snapshot: Snapshot) -> dict[str, float]:
    """Start-up values with no native field (vLLM's KV cache size in tokens), as the metrics of
    MEASURED_CONCEPTS, so both sides' values are compared (`measured.*`)."""
    by_concept = {concept: metric for metric, concept in MEASURED_CONCEPTS.items()}
    return {by_concept[c]: v for c, v in reported_concepts(snapshot, used_only=True).items()
            if c in by_concept and not isinstance(v, bool)}


def _apply_measured(metrics: dict, values: dict, runtime: set, config: EngineConfig) -> None:
    """Measured start-up values replace what is not set on the command line."""
    for metric, concept in MEASURED_CONCEPTS.items():
        if metric not in metrics:
            continue
        keys = [k for k, b in config.bindings.items() if b.concept == concept]
        if any(config.flags[k].source == "explicit" for k in keys if k in config.flags):
            continue  # the unit sets it: the flag is what the server runs with
        values[concept] = metrics[metric]
        runtime.discard(concept)


def _measured_differences(diffs: list[Difference], b_metrics: dict, c_metrics: dict) -> list[Difference]:
    """A start-up value measured on both sides that differs, when no flag difference already
    carries that concept (seed 004: max_running_requests 26 → 21, computed by SGLang)."""
    carried = {d.concept for d in diffs if d.concept}
    out = []
    for metric, concept in MEASURED_CONCEPTS.items():
        b, c = b_metrics.get(metric), c_metrics.get(metric)
        if b is None or c is None or b == c or concept in carried:
            continue
        b, c = (int(v) if float(v).is_integer() else v for v in (b, c))  # counts read as counts
        out.append(Difference(key=f"measured.{metric}", label=f"{metric} (measured at start-up)",
                              baseline=b, current=c, baseline_source="measured", current_source="measured",
                              concept=concept, concept_baseline=b, concept_current=c,
                              notes=["both values were measured on the running servers, not read from the units"]))
    return out


def _warnings(b_metrics: dict[str, float], compared_at: int, asked: int | None) -> list[str]:
    """A prediction at another concurrency than the baseline's throughput was measured at scales
    that throughput by models, not by measurement: say so."""
    if b_metrics.get("throughput") is None:
        return []
    measured_at = b_metrics.get("concurrency")
    if measured_at is None:
        if asked is not None and asked != 1:
            return [f"the baseline's throughput was recorded without the concurrency it was measured at "
                    f"(record --metric concurrency=N); predicting for concurrency {compared_at}"]
        return []
    if int(measured_at) != compared_at:
        return [f"the baseline's throughput was measured at concurrency {measured_at:g}, the prediction is for "
                f"concurrency {compared_at}: tok/s figures are not comparable without re-measuring"]
    return []


def _configuration_interval(findings: list[Finding], withheld: str | None,
                            interval: tuple[float, float] | None) -> tuple[float, float] | None:
    """What the configuration drift explains, for the measured-against-predicted verdict: the comparison's
    interval, except that host facts (host.gpus: the GPUs the host shows) are what the verdict points at,
    not part of the drift; None where a configuration change has no number (nothing to hold the
    measurement against), ×1 where nothing in the configuration moved."""
    config = [f for f in findings if not f.key.startswith("host.")]
    if len(config) == len(findings):
        return interval
    if withheld and any(f.key in ("engine.startup", "launcher.engine") for f in config):
        return None
    if any(f.performance and f.throughput_ratio is None for f in config):
        return None
    return combine_intervals((f.throughput_ratio, f.interval) for f in config) or (1.0, 1.0)


def _measured_ratio(b_metrics: dict[str, float], c_metrics: dict[str, float]) -> float | None:
    b, c = b_metrics.get("throughput"), c_metrics.get("throughput")
    if b is None or c is None or b <= 0:
        return None
    return c / b


# Findings after which no throughput figure of the baseline says anything about the current unit.
_NOT_COMPARABLE = (
    ("engine.startup", None, "the current unit will not start"),
    ("launcher.engine", None, "the current unit runs another engine"),
    (None, "model.path", "the current unit serves a different model"),
)


def _prediction_withheld(findings: list[Finding]) -> str | None:
    """Why no prediction is made (None: predict). A ratio against another model, another engine or
    a server that does not start would be confidently wrong."""
    for key, concept, why in _NOT_COMPARABLE:
        for f in findings:
            if (key is not None and f.key == key) or (concept is not None and f.difference.concept == concept):
                return why
    # A product smaller than what an unmodelled high-severity change may do has no sign to trust (one
    # case: ×1.10 modelled, the unmodelled drafter change went ×0.89). Larger modelled effects keep
    # their prediction, with the unmodelled changes named beside it (summary).
    dark = [f for f in findings if f.throughput_ratio is None and f.rule.severity == "high"
            and f.dimension in ("single-stream", "aggregate")]
    known = combine([f.throughput_ratio for f in findings])
    if dark and known is not None and abs(math.log(known)) < _UNQUANTIFIED_WEIGHT["high"]:
        partial = f"; the modelled changes alone: ×{known:.2f}" if abs(known - 1.0) > 1e-9 else ""
        return (f"the effect of {dark[0].difference.label} is not quantified (size or sign unknown) and may "
                f"outweigh the modelled changes{partial}")
    return None


def unquantified(findings: list[Finding]) -> list[Finding]:
    """Findings that may move throughput but have no sound model (left out of the prediction)."""
    return [f for f in findings if f.throughput_ratio is None and f.performance
            and f.dimension in ("single-stream", "aggregate", "stability") and f.rule.severity in ("high", "medium")]


def _predict(findings: list[Finding]) -> float | None:
    """Product of the modelled ratios; None when nothing modelled moves it but unmodelled changes might."""
    if not findings:
        return 1.0
    ratio = combine([f.throughput_ratio for f in findings])
    if ratio is not None and abs(ratio - 1.0) < 1e-9 and unquantified(findings):
        return None
    return ratio
