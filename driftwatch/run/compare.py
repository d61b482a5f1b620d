"""One unit against a known-good baseline (`driftwatch compare`): `compare_unit`.

The current side is what the user named (a unit file, a snapshot, a live host) or, when nothing
is named, the host and unit the baseline records, read live. Model and GPU facts given on the
command line are recorded in the snapshots before they are judged.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InputError
from .voice import Voice

if TYPE_CHECKING:
    from ..collect.sshoptions import SSHOptions
    from ..engines.files import EngineFiles
    from ..findings.compare import Comparison


def compare_unit(baseline_spec: str, *, unit_file: str | None, host: str | None, unit: str | None,
                 snapshot_file: str | None, inventory: str | None, baselines_dir: str | None,
                 baseline_metric: tuple[str, ...], current_metric: tuple[str, ...], rules_dir: str | None,
                 ignores: tuple[str, ...], ignore_file: str | None, concurrency: int | None,
                 engine_version: str | None, model_config: str | None, baseline_model_config: str | None,
                 gpu: str | None, ssh: SSHOptions, files: EngineFiles, voice: Voice) -> Comparison:
    """The ranked Comparison; an ignore that matched nothing is a warning (`voice.warn` and the
    comparison's `warnings`). `files`: the engine configuration files the user gave."""
    from ..findings.judging import load_judging
    from ..snapshots.baseline import baselines_dir as resolve_dir
    from ..snapshots.metrics import parse_metrics
    from .targets import collect_one, named_baseline, one_target
    b_metrics = parse_metrics(baseline_metric, "--baseline-metric")
    c_metrics = parse_metrics(current_metric, "--current-metric")
    judging = load_judging(rules_dir, ignores, ignore_file, concurrency, engine_version)
    base = named_baseline(baseline_spec, resolve_dir(baselines_dir), files)
    current = one_target(unit_file, host, unit or (base.unit if host else None), snapshot_file, None, inventory,
                         ssh, required=False, files=files)
    if current is None:
        if not base.host or not base.unit:
            raise InputError(f"baseline {base.name} records no host/unit to read; give --unit-file, --snapshot "
                             "or --host/--unit")
        current = collect_one(base.host, base.unit, ssh, inventory, files=files)
    _apply_facts(base, current, model_config, baseline_model_config, gpu)
    result = judging.compare(base, current, b_metrics, c_metrics)
    _check_measured(result, {**base.metrics, **b_metrics}, c_metrics)
    _warn_unused_ignores(result, judging, voice)
    return result


def _apply_facts(base, current, model_config: str | None, baseline_model_config: str | None,
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


def _apply_draft_facts(*snapshots) -> None:
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


def _check_measured(result, baseline_given: dict, current_given: dict) -> None:
    """An accept length the user gave (or the baseline file records) that no step of that side can
    reach is refused, never clamped into an estimate. Figures read from the journal are not checked
    here: they belong to the running process, which may run other flags than the unit."""
    from ..findings.metrics import check_accept_length
    check_accept_length(baseline_given, result.pair.baseline, f"baseline {result.baseline.name} metrics")
    check_accept_length(current_given, result.pair.current, "--current-metric")


def _warn_unused_ignores(result, judging, voice: Voice) -> None:
    """An ignore that matched no difference is a warning naming it (said, and JSON `warnings`)."""
    from ..findings.ignore import unused, unused_warning
    pairs = [(f.rule, f.difference) for f in result.findings + result.ignored]
    for entry in unused(list(judging.ignore), pairs):
        message = unused_warning(entry)
        result.warnings.append(message)
        voice.warn(message)
