"""Engine flags of both sides -> differences, under one release, grouped under their cause.

Both sides are typed under one catalog first, so aliases, prefixes, `=` vs space, NEXTN vs EAGLE and
an explicit value equal to the default compare equal. Switching speculative decoding on/off/to another
algorithm is one difference that carries its steps/topk/draft settings; values the engine derives from
the steps belong to the steps difference. Two different engines are compared by concept.
"""
from __future__ import annotations

from ..engines.config import EXPLICIT, REPORTED, RUNTIME, UNTYPED_KINDS, EngineConfig
from ..engines.registry import get_engine
from ..engines.values import _changed, _flag_state
from ..parse.wrappers import NO_ENGINE
from ..redact import is_redacted, is_secret_field
from ..snapshots.snapshot import Snapshot
from .difference import Difference, EnginePair
from .reported import overlay_reported

SPECULATIVE_DETAILS = ("speculative.steps", "speculative.topk", "speculative.draft_tokens",
                       "speculative.draft_model")


def read_pair(baseline: Snapshot, current: Snapshot, engine_version: str | None = None) -> EnginePair:
    """Type both sides under one release of their engine unless each side records its own, then lay
    what each server reported over what its unit leaves to the engine (diff/reported.py)."""
    pair = _typed_pair(baseline, current, engine_version)
    overlay_reported(pair.baseline, baseline)
    overlay_reported(pair.current, current)
    return pair


def _typed_pair(baseline: Snapshot, current: Snapshot, engine_version: str | None = None) -> EnginePair:
    b_engine, c_engine = get_engine(baseline.launcher.engine), get_engine(current.launcher.engine)
    if b_engine is not c_engine or b_engine.name == NO_ENGINE:
        # Different engines (or none): each side is read by itself; flags are not compared.
        b = b_engine.read_config(baseline.engine_argv, engine_version=engine_version if b_engine is c_engine else None,
                                 recorded_version=baseline.engine_version,
                                 recorded_from=baseline.engine_version_from)
        c = c_engine.read_config(current.engine_argv, engine_version=engine_version if b_engine is c_engine else None,
                                 recorded_version=current.engine_version, recorded_from=current.engine_version_from)
        return EnginePair(b, c, b_engine is c_engine)
    engine = b_engine
    if engine_version:
        b = engine.read_config(baseline.engine_argv, engine_version=engine_version)
        c = engine.read_config(current.engine_argv, engine_version=engine_version)
        return EnginePair(b, c, True)
    if baseline.engine_version or current.engine_version:
        if baseline.engine_version:
            b = engine.read_config(baseline.engine_argv, recorded_version=baseline.engine_version,
                                   recorded_from=baseline.engine_version_from)
        else:
            b = engine.read_config(baseline.engine_argv, engine_version=current.engine_version)
            b.version_reason = (f"the current unit's {engine.label} {current.engine_version} "
                                "(the baseline records none)")
        if current.engine_version:
            c = engine.read_config(current.engine_argv, recorded_version=current.engine_version,
                                   recorded_from=current.engine_version_from)
        else:
            c = engine.read_config(current.engine_argv, engine_version=b.version)
            c.version_reason = f"the baseline's {engine.label} {b.version} (the current unit records none)"
        return EnginePair(b, c, b.version == c.version)
    version, why = engine.choose_release([baseline.engine_argv, current.engine_argv])
    b = engine.read_config(baseline.engine_argv, engine_version=version)
    c = engine.read_config(current.engine_argv, engine_version=version)
    for config in (b, c):
        config.version_reason = f"inferred: {why}"
    return EnginePair(b, c, True)


def default_changes(b: EngineConfig, c: EngineConfig) -> dict[str, dict]:
    """Settings neither unit sets whose release default differs (or exists on one side only)."""
    changes = {}
    for key in sorted(set(b.flags) | set(c.flags)):
        bv, bs = _flag_state(b.flags.get(key))
        cv, cs = _flag_state(c.flags.get(key))
        if EXPLICIT in (bs, cs) or RUNTIME in (bs, cs):
            continue
        if bs == "absent" or cs == "absent" or _changed(bv, cv):
            changes[key] = {"baseline": bv if bs != "absent" else "not in this release",
                            "current": cv if cs != "absent" else "not in this release"}
    return changes


def diff_flags(b: EngineConfig, c: EngineConfig) -> list[Difference]:
    """Differences in what the units ask for. Defaults both sides leave alone are not drift here:
    when releases differ they belong to the engine.version finding (default_changes)."""
    diffs: list[Difference] = []
    for key in sorted(set(b.flags) | set(c.flags)):
        bv, bs = _flag_state(b.flags.get(key))
        cv, cs = _flag_state(c.flags.get(key))
        if EXPLICIT not in (bs, cs) and not (bs in REPORTED and cs in REPORTED and _bound(key, b, c)):
            continue  # (two values both servers computed differ: seed 004's 26 → 21 running requests;
            # only settings with a concept: a random seed or a port the engine picked is not drift)
        if not _changed(bv, cv) and not (RUNTIME in (bs, cs) and (bv is None or cv is None)):
            continue  # an explicit value equal to the other side's default is spelling, not drift
        kind = "changed"
        if bs != EXPLICIT and cs == EXPLICIT:
            kind = "added"
        elif bs == EXPLICIT and cs != EXPLICIT:
            kind = "removed"
        b_flag, c_flag = b.flags.get(key), c.flags.get(key)
        flag_obj = c_flag or b_flag
        label = ((c_flag.flag if c_flag is not None and cs == EXPLICIT else None)
                 or (b_flag.flag if b_flag is not None and bs == EXPLICIT else None)
                 or (flag_obj.flag if flag_obj is not None else None) or key)
        notes = [v.note for v in (b_flag, c_flag) if v is not None and v.note]
        diffs.append(_with_concept(Difference(
            key=key, label=_primary_label(key, b, c, label), baseline=bv, current=cv,
            baseline_source=bs, current_source=cs, kind=kind, notes=notes,
            secret=is_secret_field(key) or is_redacted(bv) or is_redacted(cv)), b, c))
    return _group_speculative(diffs, b, c) + diff_untyped(b, c)


UNTYPED_PREFIX = "untyped."  # the key of a flag no catalog of the release types: untyped.--name


def untyped_flags(config: EngineConfig) -> dict[str, str]:
    """Flags this release does not type (unknown, removed, ambiguous; stray words as one entry),
    each with the words that followed it as spelled; a repeated one keeps every occurrence."""
    found: dict[str, list[str]] = {}
    for issue in config.issues:
        if issue.kind not in UNTYPED_KINDS or issue.value is None or not issue.flag:
            continue
        name = issue.flag if issue.flag.startswith("-") else "(positional)"
        found.setdefault(name, []).append(issue.value)
    return {name: " ".join(values) for name, values in found.items()}


def diff_untyped(b: EngineConfig, c: EngineConfig) -> list[Difference]:
    """A flag the catalog cannot type is still compared by its spelled value (added, removed,
    changed): a patched build's `--speculative-ddtree-budget 16 → 916` is drift like any other."""
    bu, cu = untyped_flags(b), untyped_flags(c)
    rows = [(name, bu.get(name), cu.get(name)) for name in sorted(set(bu) | set(cu)) if bu.get(name) != cu.get(name)]
    if len(rows) <= MAX_UNTYPED_FINDINGS:
        return [_untyped_difference(row, b, c) for row in rows]
    return _fold(rows, b, c)


def _untyped_difference(row: tuple[str, str | None, str | None], b: EngineConfig, c: EngineConfig) -> Difference:
    name, bv, cv = row
    return Difference(
        key=UNTYPED_PREFIX + name, label=name, baseline=_bare(bv), current=_bare(cv),
        baseline_source=EXPLICIT if bv is not None else "absent",
        current_source=EXPLICIT if cv is not None else "absent", kind=_untyped_kind(bv, cv),
        notes=[f"{name} is not a flag of {(c if cv is not None else b).title}: compared as written"],
        secret=_untyped_secret(row))


def _untyped_kind(bv: str | None, cv: str | None) -> str:
    return "added" if bv is None else "removed" if cv is None else "changed"


def _untyped_secret(row: tuple[str, str | None, str | None]) -> bool:
    name, bv, cv = row
    return is_secret_field(name.lstrip("-").replace("-", "_")) or is_redacted(bv) or is_redacted(cv)


MAX_UNTYPED_FINDINGS = 32  # each its own finding; the rest told as one (thousands made a report take 20 s)


def _fold(rows: list[tuple[str, str | None, str | None]], b: EngineConfig, c: EngineConfig) -> list[Difference]:
    """The first untyped flags one finding each, the rest one finding that names how many and carries
    every one of them in its details: nothing is dropped, and a unit of 8 000 unknown flags still
    reads (and renders) in well under a second. The folded ones never become findings of their own
    (no Difference, no note each: thousands of them)."""
    kept, rest = rows[:MAX_UNTYPED_FINDINGS - 1], rows[MAX_UNTYPED_FINDINGS - 1:]
    names = [name for name, _, _ in rest]
    shown = ", ".join(names[:8]) + (f", … ({len(names) - 8} more)" if len(names) > 8 else "")
    return [_untyped_difference(row, b, c) for row in kept] + [Difference(
        key=UNTYPED_PREFIX + "*", label=f"{len(rest)} more flags no catalog knows",
        baseline=f"{sum(bv is not None for _, bv, _ in rest)} set",  # changed or removed
        current=f"{sum(cv is not None for _, _, cv in rest)} set",  # changed or added
        kind="changed", notes=[f"added, removed or changed, compared as written: {shown}"],
        details={name: {"baseline": _bare(bv), "current": _bare(cv)} for name, bv, cv in rest},
        secret=any(_untyped_secret(row) for row in rest))]


def _bare(value: str | None) -> str | bool | None:
    """A flag given without words is on (True), as a typed boolean flag reads."""
    return True if value == "" else value


def _bound(key: str, b: EngineConfig, c: EngineConfig) -> bool:
    return key in b.bindings or key in c.bindings


def _with_concept(diff: Difference, b: EngineConfig, c: EngineConfig) -> Difference:
    """Name the difference's concept and give both sides as concept values."""
    binding = c.bindings.get(diff.key) or b.bindings.get(diff.key)
    if binding is not None:
        diff.concept = binding.concept
        diff.concept_baseline = binding.to_concept_value(diff.baseline)
        diff.concept_current = binding.to_concept_value(diff.current)
    return diff


def _primary_label(key: str, b: EngineConfig, c: EngineConfig, fallback: str) -> str:
    """The long, canonical spelling (--speculative-num-steps), not an abbreviation someone typed."""
    for config in (c, b):
        primary = get_engine(config.engine).primary_flag(key, config.version)
        if primary is not None:
            return primary
    return fallback


def _key_of(config: EngineConfig, concept: str) -> str | None:
    """The native field that expresses `concept` in this config (explicit binding first)."""
    keys = [k for k, binding in config.bindings.items() if binding.concept == concept]
    keys.sort(key=lambda k: config.flags[k].source != EXPLICIT if k in config.flags else True)
    return keys[0] if keys else None


def _concept_state(b: EngineConfig, c: EngineConfig, concept: str) -> dict:
    """{"baseline": value, "current": value} of a concept, by each side's native field."""
    out = {}
    for side, config in (("baseline", b), ("current", c)):
        key = _key_of(config, concept)
        out[side] = _flag_state(config.flags.get(key))[0] if key else None
    return out


def _group_speculative(diffs: list[Difference], b: EngineConfig, c: EngineConfig) -> list[Difference]:
    """Report speculative settings under their cause, by concept: an algorithm change carries the
    steps/topk/draft settings of both sides; values the engine derives from the steps (draft tokens
    forced to steps + 1) belong to the steps finding."""
    by_concept = {d.concept: d for d in diffs if d.concept}
    order = [d for d in diffs]

    def drop(diff: Difference) -> None:
        order.remove(diff)

    algo = by_concept.get("speculative.algorithm")
    if algo is not None:
        for concept in SPECULATIVE_DETAILS:
            detail = by_concept.get(concept)
            key = _key_of(c, concept) or _key_of(b, concept)
            if key is not None:
                algo.details[key] = _concept_state(b, c, concept)
            if detail is not None:
                drop(detail)
                algo.notes.extend(detail.notes)
        return order
    steps = by_concept.get("speculative.steps")
    draft = by_concept.get("speculative.draft_tokens")
    if draft is not None:
        derived = any(v is not None and v.follows == "speculative.steps"
                      for v in (b.flags.get(draft.key), c.flags.get(draft.key)))
        if derived or (draft.current_source != EXPLICIT and draft.baseline_source != EXPLICIT):
            drop(draft)
            if steps is None:
                key = _key_of(c, "speculative.steps") or _key_of(b, "speculative.steps") or "speculative_num_steps"
                state = _concept_state(b, c, "speculative.steps")
                steps = _with_concept(Difference(key=key, label=_primary_label(key, b, c, key),
                                                 baseline=state["baseline"], current=state["current"]), b, c)
                order.append(steps)
            steps.details[draft.key] = {"baseline": draft.baseline, "current": draft.current}
            steps.notes.append(f"draft tokens {draft.baseline} → {draft.current} follow (steps + 1 with topk 1)")
    if steps is not None:
        for concept in ("speculative.topk", "speculative.algorithm"):
            key = _key_of(c, concept) or _key_of(b, concept)
            if key is not None:
                steps.details.setdefault(key, _concept_state(b, c, concept))
    return order


def diff_concepts(b: EngineConfig, c: EngineConfig) -> list[Difference]:
    """Settings of two different engines compared by concept (SGLang --max-running-requests 16 vs
    vLLM --max-num-seqs 256). Only concepts one side sets; keyed by the current side's field."""
    diffs = []
    for concept in sorted({bd.concept for bd in b.bindings.values()} & {bd.concept for bd in c.bindings.values()}):
        b_key, c_key = _key_of(b, concept), _key_of(c, concept)
        if b_key is None or c_key is None:  # not reached: the concept is bound on both sides
            continue
        bv, bs = _flag_state(b.flags.get(b_key))
        cv, cs = _flag_state(c.flags.get(c_key))
        if EXPLICIT not in (bs, cs):
            continue
        b_concept, c_concept = b.bindings[b_key].to_concept_value(bv), c.bindings[c_key].to_concept_value(cv)
        if not _changed(b_concept, c_concept) and RUNTIME not in (bs, cs):
            continue
        b_flag = get_engine(b.engine).primary_flag(b_key, b.version) or b_key
        c_flag = get_engine(c.engine).primary_flag(c_key, c.version) or c_key
        label = f"{concept} ({b_flag} → {c_flag})" if b_flag != c_flag else f"{concept} ({c_flag})"
        diffs.append(Difference(key=c_key, label=label, baseline=b_concept, current=c_concept,
                                baseline_source=bs, current_source=cs, concept=concept,
                                concept_baseline=b_concept, concept_current=c_concept,
                                secret=is_secret_field(b_key) or is_secret_field(c_key)
                                or is_redacted(bv) or is_redacted(cv)))
    return diffs
