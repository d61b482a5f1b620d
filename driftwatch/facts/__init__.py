"""Facts about what a unit runs: the model (from its Hugging Face `config.json`) and the GPUs (from
`nvidia-smi` names and a shipped table). Impact models read them through `ImpactContext`; unknown
stays unknown (None), never guessed.
"""
from __future__ import annotations

from .gpu import GPUFacts, gpu_facts, lookup_gpu, parse_gpu_option, parse_topology
from .model import ModelFacts, load_draft_config, load_model_config, model_facts

__all__ = ["ModelFacts", "model_facts", "load_model_config", "load_draft_config", "GPUFacts", "gpu_facts",
           "lookup_gpu", "parse_gpu_option", "parse_topology", "facts_context"]


def facts_context(baseline_snapshot: object, current_snapshot: object) -> dict:
    """The facts fields of an ImpactContext for a comparison: each side's model facts (recorded in
    the snapshot's runtime as ``model_facts``; a side without its own uses the other side's, since a
    model change withholds any prediction anyway) and the current host's GPU facts."""
    def facts_of(snap: object) -> ModelFacts | None:
        runtime = getattr(snap, "runtime", None) or {}
        return ModelFacts.from_dict(runtime.get("model_facts"))

    def draft_of(snap: object) -> ModelFacts | None:
        runtime = getattr(snap, "runtime", None) or {}
        return ModelFacts.from_dict(runtime.get("draft_model_facts"))

    base, cur = facts_of(baseline_snapshot), facts_of(current_snapshot)
    runtime = getattr(current_snapshot, "runtime", None) or {}
    gpus = gpu_facts(runtime.get("gpus"), runtime.get("interconnect"))
    return {"model_facts": cur or base, "baseline_model_facts": base or cur, "gpu_facts": gpus,
            # a draft head's own config.json, per side (recorded as ``draft_model_facts``); no fallback to
            # the other side's: a draft model changed with the unit is another head
            "draft_model_facts": draft_of(current_snapshot), "baseline_draft_model_facts": draft_of(baseline_snapshot)}
