"""The records diff produces: one semantic Difference, and the engine configs both sides were read with."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engines.config import EngineConfig


@dataclass
class Difference:
    key: str  # native field, or env.NAME / unit.Section.Key / launcher.* / engine.version / host.gpus / exec.argv
    label: str  # how a person recognises it: --flag, NAME=, User=
    baseline: Any
    current: Any
    baseline_source: str | None = None  # explicit | default | runtime | absent (flags only)
    current_source: str | None = None
    kind: str = "changed"  # changed | added | removed
    details: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    secret: bool = False
    concept: str | None = None  # engine-neutral name (speculative.steps, parallel.tensor, ...), when one applies
    concept_baseline: Any = None  # the two sides as concept values (booleans mean "on"), for impact models
    concept_current: Any = None
    origin: dict = field(default_factory=dict)  # {"baseline": file, "current": file} that set each side
    rule_by_key: bool = False  # its rule is found by key only (DW604: the server differs from its unit,
    # whatever the concept, which still picks the impact model)

    def model_inputs(self) -> tuple[str, Any, Any]:
        """(name, baseline, current) as impact models read them: by concept where one applies."""
        if self.concept:
            return self.concept, self.concept_baseline, self.concept_current
        return self.key, self.baseline, self.current


@dataclass
class EnginePair:
    """Both sides' engine configs read under the release chosen for the comparison."""

    baseline: EngineConfig
    current: EngineConfig
    shared_version: bool

    @property
    def same_engine(self) -> bool:
        return self.baseline.engine == self.current.engine
