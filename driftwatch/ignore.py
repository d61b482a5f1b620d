"""Silencing findings on purpose: --ignore ID_OR_KEY and an ignore list in .driftwatch.yaml.

Each entry of the file names a rule id or a key (globs allowed) and must say why, so accepted drift
stays explained in review:

    ignore:
      - rule: DW901
        reason: port and log level differ by design between staging and prod
      - key: env.NCCL_DEBUG
        reason: debugging on ct200 this week
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError
from .fileio import read_yaml

DEFAULT_IGNORE_FILE = ".driftwatch.yaml"


@dataclass
class IgnoreEntry:
    pattern: str
    reason: str
    origin: str

    def matches(self, rule_id: str, key: str) -> bool:
        return (fnmatch.fnmatchcase(rule_id.lower(), self.pattern.lower())
                or fnmatch.fnmatchcase(key, self.pattern))


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
            raise InputError(f"{target}: ignore entry {i} must be a mapping with rule or key, and reason")
        pattern = raw.get("rule") or raw.get("key")
        reason = str(raw.get("reason") or "").strip()
        if not pattern:
            raise InputError(f"{target}: ignore entry {i} names neither a rule nor a key")
        if not reason:
            raise InputError(f"{target}: ignore entry {i} ({pattern}) has no reason; say why it is accepted")
        entries.append(IgnoreEntry(str(pattern), reason, str(target)))
    return entries


def from_cli(patterns: tuple[str, ...] | list[str]) -> list[IgnoreEntry]:
    return [IgnoreEntry(p, "--ignore on the command line", "command line") for p in patterns or ()]
