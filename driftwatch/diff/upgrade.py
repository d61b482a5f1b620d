"""An engine upgrade, explained: the release defaults it changed, priced one by one, and the public
regressions reported against the releases it crosses.

A release change used to be one finding, "not quantified; re-measure", with every differing default
dumped in its details. Here each default that changed between the two releases *and* maps to a concept
an impact model prices (CUDA graphs, async scheduling, batched tokens, chunked prefill, prefix caching,
the KV memory fraction, the attention backend, …) becomes a finding of its own (`engine.version.FIELD`,
"--async-scheduling off → on by default in vLLM 0.15.0"), ranked with every other finding; the rest stay
listed on the engine.version finding. The table of known regressions (driftwatch/data/known_regressions.yaml,
cited threads) is matched against the upgrade's release range, the unit's model and its GPUs, the way
pip-audit names a known vulnerability.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

from ..engines.config import DEFAULT, RUNTIME, EngineConfig
from ..engines.registry import get_engine
from ..engines.versions import version_key
from ..errors import DriftwatchError
from ..fileio import read_yaml
from .difference import Difference, EnginePair
from .flags import default_changes

DEFAULT_PREFIX = "engine.version."  # key of a release-default finding: engine.version.<native field>
_TABLE = os.path.join(os.path.dirname(__file__), os.pardir, "data", "known_regressions.yaml")
_ABSENT = object()  # the field does not exist in that release
_REQUIRED = ("id", "engine", "title", "repo", "number", "url", "first_bad", "measured")


@dataclass(frozen=True)
class KnownRegression:
    """One publicly reported regression: where, between which releases, on what."""

    id: str
    engine: str
    title: str
    repo: str
    number: int
    url: str
    first_bad: str
    measured: str
    last_good: str | None = None
    fixed_in: str | None = None
    models: tuple[str, ...] = ()
    hardware: tuple[str, ...] = ()
    ratio: float | None = None

    def crossed_by(self, baseline: str, current: str) -> str | None:
        """'crossed' when an upgrade baseline → current certainly crosses the regression's release range,
        'maybe' when the baseline sits inside the range (the reporter's fast release is newer), else None."""
        b, c, bad = version_key(baseline), version_key(current), version_key(self.first_bad)
        if not (b < bad <= c):
            return None
        if self.fixed_in is not None and version_key(self.fixed_in) <= c:
            return None  # fixed by the release the unit now runs
        if self.last_good is not None and b > version_key(self.last_good):
            return "maybe"
        return "crossed"

    def to_dict(self) -> dict:
        return {"id": self.id, "engine": self.engine, "title": self.title, "repo": self.repo, "number": self.number,
                "url": self.url, "last_good": self.last_good, "first_bad": self.first_bad, "fixed_in": self.fixed_in,
                "models": list(self.models), "hardware": list(self.hardware), "ratio": self.ratio,
                "measured": self.measured}


@dataclass(frozen=True)
class UpgradeSubject:
    """What a regression entry is matched against: the engine, both releases, the model, the GPUs."""

    engine: str
    baseline_version: str
    current_version: str
    label: str = ""  # how people write the engine ("vLLM"), for the sentence
    model: str | None = None  # the model path/name (and architecture) in lower case; None = unknown
    gpus: tuple[str, ...] = ()  # the current host's GPU names; empty = unknown


@dataclass(frozen=True)
class RegressionMatch:
    entry: KnownRegression
    certainty: str  # "matches" (release, model and GPU all fit) or "may apply" (something is unknown)
    why: str  # what fit and what is unknown, in words

    def to_dict(self) -> dict:
        return {**self.entry.to_dict(), "certainty": self.certainty, "why": self.why}

    def sentence(self) -> str:
        size = f" (measured ×{self.entry.ratio:.2f})" if self.entry.ratio is not None else ""
        return (f"Known regression {self.entry.repo}#{self.entry.number} {self.certainty}: "
                f"\"{self.entry.title}\"{size} — {self.why}; {self.entry.url}.")


def _entry(raw: Any, where: str) -> KnownRegression:
    if not isinstance(raw, dict) or any(raw.get(k) in (None, "") for k in _REQUIRED):
        raise DriftwatchError(f"{where}: an entry needs {', '.join(_REQUIRED)}")
    models, hardware = (tuple(str(w).lower() for w in raw.get(k) or ()) for k in ("models", "hardware"))
    ratio = raw.get("ratio")
    if ratio is not None and (isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio):
        raise DriftwatchError(f"{where}: {raw['id']}: ratio must be a positive number or null")
    last_good, fixed_in = (None if raw.get(k) is None else str(raw[k]) for k in ("last_good", "fixed_in"))
    entry = KnownRegression(id=str(raw["id"]), engine=str(raw["engine"]).lower(), title=str(raw["title"]),
                            repo=str(raw["repo"]), number=int(raw["number"]), url=str(raw["url"]),
                            first_bad=str(raw["first_bad"]), measured=str(raw["measured"]),
                            ratio=None if ratio is None else float(ratio), last_good=last_good,
                            fixed_in=fixed_in, models=models, hardware=hardware)
    if entry.last_good is not None and version_key(entry.last_good) >= version_key(entry.first_bad):
        raise DriftwatchError(f"{where}: {entry.id}: last_good {entry.last_good} is not older than first_bad")
    if not entry.url.startswith("https://github.com/" + entry.repo + "/"):
        raise DriftwatchError(f"{where}: {entry.id}: the url is not a thread of {entry.repo}")
    return entry


@functools.lru_cache(maxsize=4)
def load_regressions(path: str = _TABLE) -> tuple[KnownRegression, ...]:
    """The table of known regressions, checked entry by entry (a broken entry is one clear error)."""
    data = read_yaml(path, "known regressions table")
    entries = data.get("regressions") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise DriftwatchError(f"{path}: expected a `regressions:` list")
    table = tuple(_entry(raw, path) for raw in entries)
    ids = [e.id for e in table]
    if len(set(ids)) != len(ids):
        raise DriftwatchError(f"{path}: duplicate ids")
    return table


def matching_regressions(subject: UpgradeSubject, table: tuple[KnownRegression, ...] | None = None
                         ) -> list[RegressionMatch]:
    """The entries an upgrade crosses whose model and hardware do not rule them out, certain ones first."""
    found = []
    for entry in load_regressions() if table is None else table:
        if entry.engine != subject.engine.lower():
            continue
        crossed = entry.crossed_by(subject.baseline_version, subject.current_version)
        if crossed is None:
            continue
        engine = subject.label or subject.engine
        fits = [f"{engine} {subject.baseline_version} → {subject.current_version} crosses "
                f"{entry.last_good or 'an earlier release'} → {entry.first_bad}"]
        unknown: list[str] = []
        if crossed == "maybe":
            unknown.append(f"{subject.baseline_version} is newer than the last fast release {entry.last_good}")
        for what, words, seen in (("model", entry.models, [subject.model] if subject.model else []),
                                  ("GPU", entry.hardware, [g.lower() for g in subject.gpus])):
            if not words:
                continue
            if not seen:
                unknown.append(f"the {what} is unknown here (reported on {', '.join(words)})")
            elif any(w in s for w in words for s in seen):
                fits.append(f"same {what} family ({', '.join(words)})")
            else:
                break  # reported on another model or GPU: not this unit's problem
        else:
            certainty = "may apply" if unknown else "matches"
            found.append(RegressionMatch(entry, certainty, "; ".join(fits + unknown)))
    found.sort(key=lambda m: (m.certainty != "matches", version_key(m.entry.first_bad)))
    return found


# --- release defaults --------------------------------------------------------------------------------------

def _concept_fields(config: EngineConfig) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, binding in config.bindings.items():
        out.setdefault(binding.concept, []).append(key)
    return out


def _left_to_release(config: EngineConfig, keys: list[str], concept: str) -> bool:
    """Nothing on this side sets the concept: every field bound to it holds its release default, and the
    server reported no value of its own."""
    if concept in config.reported:
        return False
    return all(config.flags[k].source in (DEFAULT, RUNTIME) for k in keys if k in config.flags)


def _label(config: EngineConfig, keys: list[str]) -> tuple[str, str]:
    """(native field, its option string) of a concept on one side: the field that exists in the release."""
    engine = get_engine(config.engine)
    for key in keys:
        if key in config.flags:
            return key, engine.primary_flag(key, config.version) or key
    return keys[0], keys[0]


@dataclass
class ReleaseDefault:
    """One concept whose release default differs: what both releases run when the unit says nothing."""

    concept: str
    key: str
    label: str
    baseline: Any
    current: Any
    baseline_concept: Any
    current_concept: Any


def changed_defaults(pair: EnginePair) -> list[ReleaseDefault]:
    """Concepts neither unit sets whose value differs between the two releases (a setting absent from the
    older release counts as off for an on/off feature it did not have; otherwise it is not compared)."""
    b, c = pair.baseline, pair.current
    b_values, b_runtime = b.concept_values()
    c_values, c_runtime = c.concept_values()
    b_fields, c_fields = _concept_fields(b), _concept_fields(c)
    out = []
    for concept in sorted(set(b_fields) | set(c_fields)):
        bk, ck = b_fields.get(concept, []), c_fields.get(concept, [])
        if not _left_to_release(b, bk, concept) or not _left_to_release(c, ck, concept):
            continue
        bv = b_values.get(concept, _ABSENT) if bk else _ABSENT
        cv = c_values.get(concept, _ABSENT) if ck else _ABSENT
        b_rt, c_rt = concept in b_runtime, concept in c_runtime
        if b_rt and c_rt:
            continue  # computed at start-up on both sides: only the servers' word compares them (--probe)
        if b_rt or c_rt:  # a release that now fixes what the older one computed (or the reverse)
            bv, cv = (RUNTIME if b_rt else bv), (RUNTIME if c_rt else cv)
        if bv is _ABSENT and isinstance(cv, bool):
            bv = False  # a feature the older release did not have was off
        elif cv is _ABSENT and isinstance(bv, bool):
            cv = False
        if bv is _ABSENT or cv is _ABSENT or bv is None or cv is None or bv == cv:
            continue
        key, label = _label(c, ck) if ck else _label(b, bk)
        native_b = b.flags[key].value if key in b.flags else None
        native_c = c.flags[key].value if key in c.flags else None
        out.append(ReleaseDefault(concept, key, label, native_b if native_b is not None else bv,
                                  native_c if native_c is not None else cv, bv, cv))
    return out


def _words(value: Any) -> str:
    if value == RUNTIME:
        return "computed at start-up"
    if isinstance(value, bool):
        return "on" if value else "off"
    return "unset" if value is None else str(value)


def default_differences(pair: EnginePair) -> list[Difference]:
    """One finding per changed release default with a concept (priced by that concept's model)."""
    b, c = pair.baseline, pair.current
    diffs = []
    for d in changed_defaults(pair):
        note = (f"{d.label}: {_words(d.baseline_concept)} → {_words(d.current_concept)} by default in "
                f"{c.label or c.engine} {c.version} (was {_words(d.baseline_concept)} in {b.version}); neither unit "
                f"sets it, so the upgrade alone changed it")
        diffs.append(Difference(key=DEFAULT_PREFIX + d.key, label=f"{d.label} (release default)", baseline=d.baseline,
                                current=d.current, baseline_source=DEFAULT, current_source=DEFAULT, kind="changed",
                                notes=[note], concept=d.concept, concept_baseline=d.baseline_concept,
                                concept_current=d.current_concept, details={"release_default": True,
                                                                             "field": d.key}))
    return diffs


def model_words(snapshot: Any, config: EngineConfig) -> str | None:
    """The unit's model in lower case: its path or name, and its architecture when the config.json was read."""
    values, _ = config.concept_values()
    said = [str(values.get("model.path") or "")]
    facts = (getattr(snapshot, "runtime", None) or {}).get("model_facts")
    if isinstance(facts, dict):
        said += [str(facts.get("architecture") or ""), str(facts.get("model_type") or "")]
    text = " ".join(s for s in said if s).strip().lower()
    return text or None


def gpu_names(snapshot: Any) -> tuple[str, ...]:
    gpus = (getattr(snapshot, "runtime", None) or {}).get("gpus")
    if not isinstance(gpus, list):
        return ()
    return tuple(str(g.get("name")) for g in gpus if isinstance(g, dict) and g.get("name"))


def upgrade_subject(current: Any, pair: EnginePair, baseline_version: str, current_version: str) -> UpgradeSubject:
    return UpgradeSubject(engine=pair.current.engine, label=pair.current.label or pair.current.engine,
                          baseline_version=baseline_version,
                          current_version=current_version, model=model_words(current, pair.current),
                          gpus=gpu_names(current))


def upgrade_differences(baseline: Any, current: Any, pair: EnginePair) -> list[Difference]:
    """The engine.version finding (the defaults left unpriced listed, the known regressions named) after
    one finding per changed default a model prices."""
    priced = default_differences(pair)
    priced_fields = {d.details["field"] for d in priced}
    rest = {k: v for k, v in default_changes(pair.baseline, pair.current).items() if k not in priced_fields}
    label = f"{pair.current.label} release" if pair.same_engine else "engine release"
    notes = []
    if priced:
        names = ", ".join(d.label.removesuffix(" (release default)") for d in priced)
        notes.append(f"1 changed default with a throughput model is ranked as a finding of its own: {names}."
                     if len(priced) == 1 else
                     f"{len(priced)} changed defaults with a throughput model are ranked as findings of their own: "
                     f"{names}.")
    if rest:
        notes.append(f"{len(rest)} other default{'s' if len(rest) != 1 else ''} differ between the releases for "
                     "settings neither unit sets (listed in the details; no model prices them).")
    details: dict[str, Any] = {"defaults_changed": rest, "defaults_priced": sorted(priced_fields)}
    if pair.same_engine:
        subject = upgrade_subject(current, pair, str(baseline.engine_version), str(current.engine_version))
        matches = matching_regressions(subject)
        details["known_regressions"] = [m.to_dict() for m in matches]
        notes += [m.sentence() for m in matches]
    version = Difference(key="engine.version", label=label, baseline=baseline.engine_version,
                         current=current.engine_version, details=details, notes=notes)
    return priced + [version]
