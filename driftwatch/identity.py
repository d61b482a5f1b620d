"""What makes two findings "the same finding" across runs: the host, the unit and the key.

Values, rule ids, ranks and wording may change from one run to the next; (host, unit, key) does
not. The --only-changes fingerprint (`notify/state.py`) and the history of a finding (when it was
first seen in the snapshot store) both key findings by this identity.
"""
from __future__ import annotations

from typing import Any, NamedTuple


class FindingId(NamedTuple):
    host: str
    unit: str
    key: str

    def __str__(self) -> str:
        return f"{self.host}/{self.unit}/{self.key}"


def finding_id(host: Any, unit: Any, key: Any) -> FindingId:
    """The identity of a finding of `key` on `unit` of `host`.

    A host of None is "local" (a unit file read on this machine), as in reports and in the store;
    a missing unit or key is the empty string.
    """
    return FindingId("local" if host is None else str(host), "" if unit is None else str(unit),
                     "" if key is None else str(key))


__all__ = ["FindingId", "finding_id"]
