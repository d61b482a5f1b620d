"""Rules are data (rules/*.yaml): which differences they match, how bad, and how to explain them.

A user directory (--rules DIR) is merged over the shipped rules: same id replaces, new ids add.
Every difference gets a finding; when no rule matches, the built-in DW999 says "unknown impact".
"""
from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError
from .store import read_yaml

SEVERITIES = ("high", "medium", "low", "info")
DIMENSIONS = ("single-stream", "aggregate", "capacity", "stability", "none")
ID_RE = re.compile(r"^DW\d{3}$|^[A-Z][A-Z0-9]{1,9}\d{3}$")
_WHEN = ("any", "changed", "added", "removed")


@dataclass
class Rule:
    id: str
    name: str
    keys: list[str]
    severity: str
    dimension: str
    model: str
    explanation: str
    when: str = "any"
    params: dict = field(default_factory=dict)
    reference: str | None = None
    version_added: str | None = None
    origin: str = "shipped"

    def matches(self, key: str, kind: str) -> bool:
        if self.when != "any" and self.when != kind:
            return False
        return any(fnmatch.fnmatchcase(key, pattern) for pattern in self.keys)

    def specificity(self, key: str) -> int:
        """Exact key beats a glob; a longer glob beats a shorter one."""
        if key in self.keys:
            return 10_000
        return max((len(p.replace("*", "")) for p in self.keys if fnmatch.fnmatchcase(key, p)), default=0)


UNKNOWN_RULE = Rule(id="DW999", name="unknown-setting", keys=["*"], severity="medium", dimension="none",
                    model="unknown", explanation="{label} {baseline} → {current}: no rule knows this setting, so "
                    "its effect on throughput is unknown. {detail}", origin="built-in")


def shipped_rules_dir() -> Path:
    """The shipped rules: driftwatch/data/rules, a link to the top-level rules/ in a checkout and a
    copy in a wheel (DRIFTWATCH_SHIPPED_RULES overrides, for testing a rules tree)."""
    env = os.environ.get("DRIFTWATCH_SHIPPED_RULES")
    return Path(env) if env else Path(__file__).resolve().parent / "data" / "rules"


def _rule_from_dict(raw: dict, origin: str, models: set[str] | None) -> Rule:
    where = f"{origin}: rule {raw.get('id', '?')}"
    if not isinstance(raw, dict):
        raise InputError(f"{origin}: each rule must be a mapping")
    missing = [k for k in ("id", "name", "keys", "severity", "dimension", "model", "explanation") if k not in raw]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)}")
    if not ID_RE.match(str(raw["id"])):
        raise InputError(f"{where}: id must look like DW123")
    if raw["severity"] not in SEVERITIES:
        raise InputError(f"{where}: severity must be one of {', '.join(SEVERITIES)}")
    if raw["dimension"] not in DIMENSIONS:
        raise InputError(f"{where}: dimension must be one of {', '.join(DIMENSIONS)}")
    if models is not None and raw["model"] not in models:
        raise InputError(f"{where}: unknown impact model {raw['model']!r} (have: {', '.join(sorted(models))})")
    keys = raw["keys"] if isinstance(raw["keys"], list) else [raw["keys"]]
    when = raw.get("when", "any")
    if when not in _WHEN:
        raise InputError(f"{where}: when must be one of {', '.join(_WHEN)}")
    return Rule(id=str(raw["id"]), name=str(raw["name"]), keys=[str(k) for k in keys], severity=raw["severity"],
                dimension=raw["dimension"], model=str(raw["model"]), explanation=str(raw["explanation"]).strip(),
                when=when, params=dict(raw.get("params") or {}), reference=raw.get("reference"),
                version_added=str(raw["version_added"]) if raw.get("version_added") else None, origin=origin)


def load_rules_dir(directory: Path, models: set[str] | None = None) -> list[Rule]:
    if not directory.is_dir():
        raise InputError(f"{directory}: rules directory not found")
    rules = []
    for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
        data = read_yaml(path, "rules file")
        if data is None:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
            raise InputError(f"{path}: a rules file holds a top-level 'rules:' list")
        rules.extend(_rule_from_dict(raw, str(path), models) for raw in data["rules"])
    return rules


def load_rules(user_dir: str | None = None) -> list[Rule]:
    from .impact import MODELS
    models = set(MODELS)
    rules = {r.id: r for r in load_rules_dir(shipped_rules_dir(), models)}
    if user_dir:
        for rule in load_rules_dir(Path(user_dir), models):
            rules[rule.id] = rule
    return sorted(rules.values(), key=lambda r: r.id)


def get_rule(rules: list[Rule], rule_id: str) -> Rule:
    for rule in rules + [UNKNOWN_RULE]:
        if rule.id.lower() == rule_id.lower() or rule.name == rule_id:
            return rule
    raise InputError(f"unknown rule {rule_id!r} (see `driftwatch rules list`)")


def match_rule(rules: list[Rule], key: str, kind: str) -> Rule:
    candidates = [r for r in rules if r.matches(key, kind)]
    if not candidates:
        return UNKNOWN_RULE
    return max(candidates, key=lambda r: (r.specificity(key), r.origin != "shipped"))
