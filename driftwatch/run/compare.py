"""One unit against a known-good baseline (`driftwatch compare`): `compare_unit`.

The current side is what the user named (a unit file, a snapshot, a live host looked up in the
inventory) or, when nothing is named, the host and unit the baseline records, read live; the
baseline is the target's own (run/targets.py: typed > the inventory's for the unit > config).
Model and GPU facts given on the command line are recorded in the snapshots before they are judged.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..errors import InputError
from .voice import Voice

if TYPE_CHECKING:
    from ..findings.compare import Comparison
    from ..findings.judging import Judging
    from ..snapshots.baseline import Baseline
    from ..snapshots.snapshot import Snapshot
    from .fleet import JudgingOptions
    from .reading import CollectOptions
    from .targets import TargetRequest


@dataclass(frozen=True)
class CompareFacts:
    """What compare is told beside the units: figures measured on each side, the model's config.json
    (each side's) and the current host's GPUs, for the physical impact models."""

    baseline_metric: tuple[str, ...] = ()
    current_metric: tuple[str, ...] = ()
    model_config: str | None = None
    baseline_model_config: str | None = None
    gpu: str | None = None


def compare_unit(request: TargetRequest, collect: CollectOptions, judging: JudgingOptions, facts: CompareFacts,
                 voice: Voice) -> Comparison:
    """The ranked Comparison of the one unit `request` names (or the host and unit the baseline
    records) against its baseline: the typed --baseline, else the one the inventory names for it,
    else the config file's. An ignore that matched nothing is a warning (`voice.warn` and the
    comparison's `warnings`); a typed --baseline that differs from the inventory's is said once."""
    from ..snapshots.baseline import baselines_dir as resolve_dir
    from ..snapshots.metrics import parse_metrics
    from .reading import named_baseline, read_target
    from .targets import baseline_override_note, one_of, with_unit
    b_metrics = parse_metrics(facts.baseline_metric, "--baseline-metric")
    c_metrics = parse_metrics(facts.current_metric, "--current-metric")
    rules = judging.load(collect.engine_version)
    directory = resolve_dir(judging.baselines_dir)
    target = one_of(request, required=False)
    if target is None:  # nothing named: the host and unit the baseline records, read live
        spec = request.baseline or request.config_baseline
        if not spec:
            raise InputError("compare needs --baseline NAME (or a unit named in an inventory that names its baseline)")
        base = named_baseline(spec, directory, collect.files)
        if not base.host or not base.unit:
            raise InputError(f"baseline {base.name} records no host/unit to read; give --unit-file, --snapshot "
                             "or --host/--unit")
        target = with_unit(one_of(replace(request, hosts=(base.host,), unit=base.unit)), base.unit)  # type: ignore[arg-type]
    else:
        if not target.baseline:
            raise InputError(f"compare needs --baseline NAME: nothing names one for {target.label}"
                             + (" (the inventory opts it out)" if target.baseline_from == "none"
                                and target.address is not None and target.address.baseline_choice(target.unit)[1]
                                == "none" else ""))
        base = named_baseline(target.baseline, directory, collect.files)
        if target.kind == "ssh" and not target.unit:
            target = with_unit(target, base.unit) if base.unit else target
    note = baseline_override_note([target])
    if note:
        voice.aside(note)
    current = read_target(target, replace(collect, engine_version=None))
    _apply_facts(base, current, facts.model_config, facts.baseline_model_config, facts.gpu)
    result = rules.compare(base, current, b_metrics, c_metrics)
    _check_measured(result, {**base.metrics, **b_metrics}, c_metrics)
    _warn_unused_ignores(result, rules, voice)
    return result


def _apply_facts(base: Baseline, current: Snapshot, model_config: str | None, baseline_model_config: str | None,
                 gpu: str | None) -> None:
    """Record --model-config / --baseline-model-config / --gpu in the snapshots' runtime."""
    from ..facts import load_model_config, parse_gpu_option
    if model_config:
        current.runtime["model_facts"] = load_model_config(model_config).to_dict()
    if baseline_model_config:
        base.snapshot.runtime["model_facts"] = load_model_config(baseline_model_config).to_dict()
    if gpu:
        current.runtime["gpus"] = parse_gpu_option(gpu)
        current.runtime.pop("interconnect", None)  # the host's link matrix belongs to the host's GPUs
    if model_config or baseline_model_config:  # with the model's facts, a draft head's own (impact/speculative.py)
        _apply_draft_facts(base.snapshot, current)


def _apply_draft_facts(*snapshots: Snapshot) -> None:
    """A draft model path (--speculative-draft-model-path, a speculative config's model) that is a local
    directory holding config.json: its facts recorded as ``draft_model_facts``. A hub name or a path not
    on this machine stays unread (the drafter's cost then falls back to one layer of the target's shape)."""
    import os

    from ..errors import InputError
    from ..facts import load_draft_config
    for snap in snapshots:
        try:
            values, _ = snap.engine.concept_values()
        except Exception:  # noqa: BLE001 - a side without a readable engine config has no draft to read
            continue
        path = values.get("speculative.draft_model")
        if not isinstance(path, str) or not os.path.isabs(path) or not os.path.isdir(path):
            continue
        try:
            snap.runtime["draft_model_facts"] = load_draft_config(path).to_dict()
        except InputError:
            continue


def _check_measured(result: Comparison, baseline_given: dict, current_given: dict) -> None:
    """An accept length the user gave (or the baseline file records) that no step of that side can
    reach is refused, never clamped into an estimate. Figures read from the journal are not checked
    here: they belong to the running process, which may run other flags than the unit."""
    from ..findings.metrics import check_accept_length
    check_accept_length(baseline_given, result.pair.baseline, f"baseline {result.baseline.name} metrics")
    check_accept_length(current_given, result.pair.current, "--current-metric")


def _warn_unused_ignores(result: Comparison, judging: Judging, voice: Voice) -> None:
    """An ignore that matched no difference is a warning naming it (said, and JSON `warnings`)."""
    from ..findings.ignore import unused, unused_warning
    pairs = [(f.rule, f.difference) for f in result.findings + result.ignored]
    for entry in unused(list(judging.ignore), pairs):
        message = unused_warning(entry)
        result.warnings.append(message)
        voice.warn(message)
