"""Runs that shard: ``--shard I/N`` picks the hosts whose stable hash lands in slice I of N.

The hash is SHA-256 of the host's inventory name (the name as written, not its address), so a host
always lands in the same shard whatever the inventory's order, whichever runner asks, and on every
release; the N slices partition the fleet (every host in exactly one). I counts from 0, as
Kubernetes' ``JOB_COMPLETION_INDEX`` does (``--shard "$JOB_COMPLETION_INDEX/4"``); AWX's 1-based
slice is ``--shard "$(( SLICE - 1 ))/N"``.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InputError

_SHARD = re.compile(r"^\s*(\d{1,6})\s*/\s*(\d{1,6})\s*$")


@dataclass(frozen=True)
class Shard:
    """Slice `index` of a fleet cut in `count` (a dataclass: a tuple's own `index` and `count`
    methods would be shadowed by fields of those names)."""

    index: int  # 0 .. count-1
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, name: str) -> bool:
        return shard_of(name, self.count) == self.index


def parse_shard(text: str | None) -> Shard | None:
    """``I/N`` (0 ≤ I < N) -> Shard; None or empty -> None (the whole fleet)."""
    if text is None or not str(text).strip():
        return None
    m = _SHARD.match(str(text))
    if not m:
        raise InputError(f"--shard {text!r}: say I/N, the slice I (from 0) of N (e.g. 0/4)")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or index >= count:
        raise InputError(f"--shard {text!r}: the slice must be 0 to {max(count - 1, 0)} of N ≥ 1")
    return Shard(index, count)


def shard_of(name: str, count: int) -> int:
    """The slice (0..count-1) a host name lands in: stable across runs, runners and releases."""
    digest = hashlib.sha256(str(name).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count


def pick(targets: Iterable[tuple[str, str]], shard: Shard | None) -> list[tuple[str, str]]:
    """The (host, unit) targets of this shard (all of them without one); a host's units stay together."""
    return [t for t in targets if shard is None or shard.holds(t[0])]


__all__ = ["Shard", "parse_shard", "pick", "shard_of"]
