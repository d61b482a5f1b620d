"""What an engine plug-in returns: its argv typed under one release (EngineConfig), each value
with where it came from (FlagValue), and what would stop or worry the server (Issue)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

# Where a typed value came from.
EXPLICIT = "explicit"  # written in the unit's command line
DEFAULT = "default"  # the engine's constant default for that release
RUNTIME = "runtime"  # a default the engine computes at start-up (GPU memory, model config)
STARTUP = "startup"  # what the server printed at start-up that it computed (journal): measured
EFFECTIVE = "effective"  # what the server answered to --probe: measured
REPORTED = (STARTUP, EFFECTIVE)  # the server's own word, which beats anything assumed
# How a value of each source reads after it: "8 (default)", "19456 (computed at start-up)".
SOURCE_WORDS = {DEFAULT: "default", STARTUP: "computed at start-up", EFFECTIVE: "reported by the server"}


@dataclass
class FlagValue:
    """One engine setting, keyed elsewhere by its ServerArgs field name."""

    value: Any
    source: str  # EXPLICIT | DEFAULT | RUNTIME | STARTUP | EFFECTIVE
    flag: str | None = None  # the spelling used on the command line (explicit), else the primary option
    note: str | None = None  # e.g. "NEXTN is read as EAGLE", "draft tokens forced to steps + 1"
    follows: str | None = None  # the concept whose value the engine derived this one from at start-up


@dataclass
class Issue:
    """Something the parser or model noticed: unknown flag, start-up crash, deprecated flag..."""

    # unknown-flag | removed-flag | ambiguous-flag | deprecated-flag | startup-crash | bad-value
    # | systemd-refuses | note
    kind: str
    message: str
    key: str | None = None
    flag: str | None = None
    releases: list[str] = field(default_factory=list)  # releases that accept the flag
    severity: str = "warning"  # info | warning | error
    # The words that followed a flag no catalog types (`--x=1`, `--x 1 2`: "1", "1 2"; "" bare), as
    # spelled, so that a change of it is still drift (diff/flags.py); not part of the issue's text.
    value: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, []) and k != "value"}


ISSUES_IN_FULL = 32  # issues that name a flag or key, one entry each; the rest one entry per kind names them
UNTYPED_KINDS = ("unknown-flag", "removed-flag", "ambiguous-flag")  # flags no catalog of the release types


def folded_issues(issues: list[Issue], in_full: int = ISSUES_IN_FULL) -> list[dict]:
    """The public form of a list of issues (saved snapshots, `show`, a finding's details): the first
    `in_full` that name a flag or key one entry each, every later one named in one entry per kind.
    A hostile unit has thousands (4 000 unknown flags, a 1 000-key `--speculative-config`): one entry
    each made a 66 KB unit a 1.5 MB JSON report and most of its cost, while saying nothing more.
    Nothing is hidden: every flag (or key) is still named, and untyped flags are still compared by
    their spelled values (diff/flags.py reads them from the argv, not from here)."""
    out: list[dict] = []
    rest: dict[tuple[str, str], list[str]] = {}
    named = 0
    for issue in issues:
        name = issue.key or issue.flag
        if name:
            named += 1
            if named > in_full:
                rest.setdefault((issue.kind, issue.severity), []).append(name)
                continue
        out.append(issue.to_dict())
    for (kind, severity), names in rest.items():
        how = f"{kind}; each compared as written" if kind in UNTYPED_KINDS else kind
        out.append({"kind": kind, "message": f"{len(names)} more ({how}): " + " ".join(names), "severity": severity})
    return out


KEYS_IN_FULL = 32  # keys of one JSON-valued flag without a concept, one entry each where they are listed


@dataclass
class FoldedKeys:
    """The keys of one JSON-valued flag past the first KEYS_IN_FULL without a concept, as one entry."""

    field: str  # "speculative_config"
    flag: str  # "--speculative-config"
    count: int = 0
    sources: set = dataclasses.field(default_factory=set)  # `field` is a field name here


def folded_keys(items, concept_of, in_full: int = KEYS_IN_FULL) -> list:
    """`items` ((field, FlagValue) pairs, sorted) with the keys of each JSON-valued flag
    (`speculative_config.k0`) that have no concept, past the first `in_full`, as one FoldedKeys where
    the first of them stood. For `show`'s table and the derived `engine` section of a saved snapshot (a
    hostile 20 000-key value made 20 000 rows, and 120 000 YAML nodes, each read and written again);
    keys with a concept are always listed, `show --format json` lists every key, and flags are
    compared from the argv, never from these lists."""
    out: list = []
    listed: dict[tuple[str, str], int] = {}
    folded: dict[tuple[str, str], FoldedKeys] = {}
    for key, value in items:
        if "." in key and value.flag and not concept_of(key):
            group = (key.split(".", 1)[0], value.flag)
            listed[group] = listed.get(group, 0) + 1
            if listed[group] > in_full:
                fold = folded.get(group)
                if fold is None:
                    fold = folded[group] = FoldedKeys(*group)
                    out.append(fold)
                fold.count += 1
                fold.sources.add(value.source)
                continue
        out.append((key, value))
    return out


@dataclass
class EngineConfig:
    """Engine argv read against one release's flag catalog, with the engine's concept map."""

    engine: str  # registry name, "none" when no engine was recognised
    version: str  # catalog release used ("" for engine none)
    version_reason: str  # why that release was chosen
    flags: dict[str, FlagValue]  # native field -> value, explicit and defaults
    issues: list[Issue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    label: str = ""  # "SGLang"; "" for engine none
    bindings: dict = field(default_factory=dict)  # native field -> concepts.Binding
    reported: dict = field(default_factory=dict)  # concept -> value the server reported (beats the unit's)
    # The unit's environment as the engine process gets it (start-up rewrites that an engine variable
    # decides read it, e.g. SGLANG_ENABLE_SPEC_V2); never saved: the snapshot keeps its own, redacted.
    environment: dict[str, str] = field(default_factory=dict, repr=False)

    def explicit(self) -> dict[str, FlagValue]:
        return {k: v for k, v in self.flags.items() if v.source == EXPLICIT}

    def explicit_value(self, key: str) -> FlagValue | None:
        """The field's value when the command line sets it (start-up rewrites key on that)."""
        value = self.flags.get(key)
        return value if value is not None and value.source == EXPLICIT else None

    @property
    def title(self) -> str:
        """`SGLang 0.5.12`, or `no known engine`."""
        return f"{self.label} {self.version}".strip() if self.label else "no known engine"

    def concept_of(self, key: str) -> str | None:
        binding = self.bindings.get(key)
        return binding.concept if binding is not None else None

    def concept_values(self) -> tuple[dict, set]:
        """(concept -> engine-neutral value, concepts computed at start-up). Where two native
        fields bind one concept, the explicit one wins."""
        values: dict = {}
        runtime: set = set()
        chosen: dict[str, FlagValue] = {}
        for key, binding in self.bindings.items():
            value = self.flags.get(key)
            if value is None:
                continue
            held = chosen.get(binding.concept)
            if held is not None and not (value.source == EXPLICIT and held.source != EXPLICIT):
                continue
            chosen[binding.concept] = value
            values[binding.concept] = binding.to_concept_value(value.value)
            runtime.discard(binding.concept)
            if value.source == RUNTIME and value.value is None:
                runtime.add(binding.concept)
        for concept, value in self.reported.items():  # measured beats assumed, and beats the unit's ask
            values[concept] = value
            runtime.discard(concept)
        return values, runtime
