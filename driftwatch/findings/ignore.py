"""Silencing findings on purpose: --ignore NAME and an ignore list in .driftwatch.yaml.

A name may be any of the ways a person knows a finding (globs allowed, rule ids case-insensitive):

- a rule id or rule name: `DW101`, `speculative-num-steps`;
- a key: `speculative_num_steps`, `env.NCCL_DEBUG`, `unit.Service.User`;
- a concept: `speculative.steps`, `speculative.*`;
- a flag spelling, any alias or unambiguous prefix the engine accepts: `--speculative-num-steps`,
  `--tp` (SGLang's `--tp-size`).

Each entry of the file names one of them (`rule:`, `key:`, `concept:` or `flag:`; all four accept
any kind of name) and must say why, so accepted drift stays explained in review:

    ignore:
      - rule: DW901
        reason: port and log level differ by design between staging and prod
      - key: env.NCCL_DEBUG
        reason: debugging on ct200 this week
      - flag: --speculative-num-steps
        reason: trying 1 step on ct200 this week

An ignore that matches no difference of a comparison is a warning naming it (`unused`): a typo
must not silently ignore nothing.
"""
from __future__ import annotations

import fnmatch
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..fileio import read_yaml

DEFAULT_IGNORE_FILE = ".driftwatch.yaml"
_FIELDS = ("rule", "key", "concept", "flag")


@functools.lru_cache(maxsize=256)
def flag_fields(spelling: str) -> frozenset[str]:
    """The native fields a flag spelling names in any registered engine's catalogs (an alias or an
    unambiguous prefix resolves as the engine's own parser would): `--tp` -> {"tp_size"}."""
    from ..engines.registry import ENGINES
    fields: set[str] = set()
    name = spelling.split("=", 1)[0]
    for engine in ENGINES.values():
        catalogs = getattr(engine, "catalogs", None)
        if catalogs is None:
            continue
        try:
            versions = catalogs.versions
        except Exception:  # noqa: BLE001 - an engine without catalogs names no flags
            continue
        for version in versions:
            try:
                catalog = catalogs.load(version)
            except Exception:  # noqa: BLE001
                continue
            kind, matches = catalog.resolve(name)
            if kind in ("exact", "prefix"):
                fields.add(catalog.by_option[matches[0]].field)
    return frozenset(fields)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


@dataclass
class IgnoreEntry:
    pattern: str
    reason: str
    origin: str

    def matches(self, rule, diff) -> bool:
        """Whether this entry silences the finding of `diff` under `rule`. Either may also be given
        as a plain string (a rule id, a key), as older callers do."""
        p = self.pattern
        rule_id = rule if isinstance(rule, str) else _text(getattr(rule, "id", ""))
        rule_name = "" if isinstance(rule, str) else _text(getattr(rule, "name", ""))
        key = diff if isinstance(diff, str) else _text(getattr(diff, "key", ""))
        concept = None if isinstance(diff, str) else getattr(diff, "concept", None)
        label = "" if isinstance(diff, str) else _text(getattr(diff, "label", ""))
        if fnmatch.fnmatchcase(rule_id.lower(), p.lower()):
            return True
        names = [rule_name, key, concept, label]
        if any(n and fnmatch.fnmatchcase(n, p) for n in names):
            return True
        if p.startswith("-"):
            # --speculative-num-steps names the key speculative_num_steps; an alias or a prefix
            # names what the engine would read it as.
            native = p.lstrip("-").replace("-", "_")
            base = key.rsplit(".", 1)[-1]
            if fnmatch.fnmatchcase(key, native) or fnmatch.fnmatchcase(base, native):
                return True
            if not any(c in p for c in "*?["):
                return key in flag_fields(p)
        return False


def unused(entries: list[IgnoreEntry], pairs) -> list[IgnoreEntry]:
    """The entries that match none of `pairs` ((rule, difference) of every finding, ignored or not)."""
    pairs = list(pairs)
    return [e for e in entries if not any(e.matches(rule, diff) for rule, diff in pairs)]


def unused_warning(entry: IgnoreEntry) -> str:
    where = "--ignore" if entry.origin == "command line" else f"ignore entry in {entry.origin}:"
    return (f"{where} {entry.pattern} matches no difference (give a rule id or name, a key, a concept "
            f"or a flag; see `driftwatch rules list`)")


def load_ignore_file(path: str | None) -> list[IgnoreEntry]:
    """Entries from PATH, or from ./.driftwatch.yaml when present. Entries without a reason are refused."""
    target = Path(path) if path else Path(DEFAULT_IGNORE_FILE)
    if not target.exists():
        if path:
            raise InputError(f"{target}: ignore file not found")
        return []
    data = read_yaml(target, "driftwatch config")
    if data is None:
        return []
    if not isinstance(data, dict):
        raise InputError(f"{target}: expected a mapping with an 'ignore:' list")
    entries = []
    for i, raw in enumerate(data.get("ignore") or [], start=1):
        if not isinstance(raw, dict):
            raise InputError(f"{target}: ignore entry {i} must be a mapping with rule, key, concept or flag, "
                             f"and reason")
        given = [f for f in _FIELDS if raw.get(f)]
        reason = str(raw.get("reason") or "").strip()
        if not given:
            raise InputError(f"{target}: ignore entry {i} names no rule, key, concept or flag")
        if len(given) > 1:
            raise InputError(f"{target}: ignore entry {i} names both {given[0]} and {given[1]}; one per entry")
        pattern = raw[given[0]]
        if not reason:
            raise InputError(f"{target}: ignore entry {i} ({pattern}) has no reason; say why it is accepted")
        entries.append(IgnoreEntry(str(pattern), reason, str(target)))
    return entries


def from_cli(patterns: tuple[str, ...] | list[str]) -> list[IgnoreEntry]:
    return [IgnoreEntry(p, "--ignore on the command line", "command line") for p in patterns or ()]
