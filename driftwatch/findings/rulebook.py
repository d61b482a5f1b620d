"""Rules are data (rules/*.yaml): which differences they match, how bad, and how to explain them.

A rule matches a difference by its engine-neutral **concept** (`concepts:`, globs matched against
`Difference.concept`, e.g. `parallel.tensor`, so one rule serves every engine) and/or by its native
**key** (`keys:`, globs matched against `Difference.key`: an engine field with no concept such as
SGLang's `radix_eviction_policy`, or `env.NAME`, `unit.Section.Key`, `launcher.*` …). A rule needs
at least one of the two. When several rules match, the most specific wins: an exact concept or key
beats any glob, a longer glob beats a shorter one, a user rule beats a shipped one on a tie.

A user directory (--rules DIR) is merged over the shipped rules: same id replaces, new ids add.
Every difference gets a finding; when no rule matches, the built-in DW999 says "unknown impact".
"""
from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..fileio import read_yaml

SEVERITIES = ("high", "medium", "low", "info")
DIMENSIONS = ("single-stream", "aggregate", "capacity", "stability", "none")
ID_RE = re.compile(r"^DW\d{3}$|^[A-Z][A-Z0-9]{1,9}\d{3}$")
_WHEN = ("any", "changed", "added", "removed")


@dataclass
class Rule:
    id: str
    name: str
    keys: list[str]  # globs against Difference.key (native field, env.NAME, unit.*, launcher.* …)
    severity: str
    dimension: str
    model: str
    explanation: str
    when: str = "any"
    params: dict = field(default_factory=dict)
    reference: str | None = None
    version_added: str | None = None
    origin: str = "shipped"  # the file it came from (or "built-in")
    shipped: bool = True  # False for rules from the user's --rules directory: they win ties
    concepts: list[str] = field(default_factory=list)  # globs against Difference.concept (concepts.py)

    def matches(self, key: str, kind: str, concept: str | None = None) -> bool:
        if self.when != "any" and self.when != kind:
            return False
        return (any(fnmatch.fnmatchcase(key, pattern) for pattern in self.keys)
                or (concept is not None and any(fnmatch.fnmatchcase(concept, p) for p in self.concepts)))

    def specificity(self, key: str, concept: str | None = None) -> int:
        """Exact concept or key beats a glob; a longer glob beats a shorter one (0: no match)."""
        return max(_specificity(self.keys, key), _specificity(self.concepts, concept))

    def matched_by_key(self, key: str, concept: str | None = None) -> bool:
        """Whether the key, rather than the concept, gives this rule its specificity (the last
        tie-break: a rule naming the engine's own field is more specific than one naming its concept)."""
        if not any(fnmatch.fnmatchcase(key, p) for p in self.keys):
            return False
        return _specificity(self.keys, key) >= _specificity(self.concepts, concept)


def _specificity(patterns: list[str], name: str | None) -> int:
    if name is None:
        return 0
    if name in patterns:
        return 10_000
    return max((len(p.replace("*", "")) for p in patterns if fnmatch.fnmatchcase(name, p)), default=0)


UNKNOWN_RULE = Rule(id="DW999", name="unknown-setting", keys=["*"], severity="medium", dimension="none",
                    model="unknown", explanation="{label} {baseline} → {current}: no rule knows this setting, so "
                    "its effect on throughput is unknown. {detail}", origin="built-in")


def shipped_rules_dir() -> Path:
    """The shipped rules: driftwatch/data/rules, a link to the top-level rules/ in a checkout and a
    copy in a wheel (DRIFTWATCH_SHIPPED_RULES overrides, for testing a rules tree)."""
    env = os.environ.get("DRIFTWATCH_SHIPPED_RULES")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "data" / "rules"


def _patterns(raw: dict, field_name: str, where: str) -> list[str]:
    """A rule's `keys:` or `concepts:`: one string or a list of non-empty strings."""
    value = raw.get(field_name)
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(v, str) and v.strip() for v in items):
        raise InputError(f"{where}: {field_name} must be a list of names or glob patterns")
    return [v.strip() for v in items]


def _check_concepts(patterns: list[str], where: str) -> None:
    """Refuse a concept pattern that names nothing in the vocabulary: a typo would silently stop the
    rule from matching any engine."""
    from ..concepts import CONCEPTS
    unknown = [p for p in patterns if not any(fnmatch.fnmatchcase(name, p) for name in CONCEPTS)]
    if unknown:
        raise InputError(f"{where}: unknown concept(s) {', '.join(unknown)} (see `driftwatch rules list` "
                         f"or driftwatch/concepts.py)")


def _rule_from_dict(raw: dict, origin: str, models: set[str] | None) -> Rule:
    if not isinstance(raw, dict):
        raise InputError(f"{origin}: each rule must be a mapping")
    where = f"{origin}: rule {raw.get('id', '?')}"
    missing = [k for k in ("id", "name", "severity", "dimension", "model", "explanation") if k not in raw]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)}")
    if not ID_RE.match(str(raw["id"])):
        raise InputError(f"{where}: id must look like DW123")
    keys = _patterns(raw, "keys", where)
    concepts = _patterns(raw, "concepts", where)
    if not keys and not concepts:
        raise InputError(f"{where}: needs concepts: (engine-neutral names such as parallel.tensor) or keys: "
                         f"(native fields such as env.NCCL_P2P_DISABLE), or both")
    _check_concepts(concepts, where)
    if raw["severity"] not in SEVERITIES:
        raise InputError(f"{where}: severity must be one of {', '.join(SEVERITIES)}")
    if raw["dimension"] not in DIMENSIONS:
        raise InputError(f"{where}: dimension must be one of {', '.join(DIMENSIONS)}")
    if models is not None and raw["model"] not in models:
        raise InputError(f"{where}: unknown impact model {raw['model']!r} (have: {', '.join(sorted(models))})")
    when = raw.get("when", "any")
    if when not in _WHEN:
        raise InputError(f"{where}: when must be one of {', '.join(_WHEN)}")
    return Rule(id=str(raw["id"]), name=str(raw["name"]), keys=keys, severity=raw["severity"],
                dimension=raw["dimension"], model=str(raw["model"]), explanation=str(raw["explanation"]).strip(),
                when=when, params=dict(raw.get("params") or {}), reference=raw.get("reference"),
                version_added=str(raw["version_added"]) if raw.get("version_added") else None, origin=origin,
                concepts=concepts)


def load_rules_dir(directory: Path, models: set[str] | None = None) -> list[Rule]:
    if not directory.is_dir():
        raise InputError(f"{directory}: rules directory not found")
    rules: list[Rule] = []
    for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
        data = read_yaml(path, "rules file")
        if data is None:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
            raise InputError(f"{path}: a rules file holds a top-level 'rules:' list")
        rules.extend(_rule_from_dict(raw, str(path), models) for raw in data["rules"])
    return rules


def load_rules(user_dir: str | None = None) -> list[Rule]:
    from ..impact import MODELS
    models = set(MODELS)
    rules = {r.id: r for r in load_rules_dir(shipped_rules_dir(), models)}
    if user_dir:
        for rule in load_rules_dir(Path(user_dir), models):
            rule.shipped = False
            rules[rule.id] = rule
    return sorted(rules.values(), key=lambda r: r.id)


def get_rule(rules: list[Rule], rule_id: str) -> Rule:
    for rule in rules + [UNKNOWN_RULE]:
        if rule.id.lower() == rule_id.lower() or rule.name == rule_id:
            return rule
    raise InputError(f"unknown rule {rule_id!r} (see `driftwatch rules list`)")


def match_rule(rules: list[Rule], key: str, kind: str, concept: str | None = None) -> Rule:
    """The rule for one difference: the most specific match by concept or key (exact beats glob,
    longer glob beats shorter), a user rule over a shipped one on a tie, then one matched by its key
    over one matched by its concept; DW999 when nothing matches."""
    candidates = [r for r in rules if r.matches(key, kind, concept)]
    if not candidates:
        return UNKNOWN_RULE
    return max(candidates, key=lambda r: (r.specificity(key, concept), not r.shipped,
                                          r.matched_by_key(key, concept)))
