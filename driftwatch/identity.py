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
        """``host/unit/key``; a ``/`` or ``%`` in the host or unit escaped (``gpu%2F01``), so host
        ``gpu/01`` and host ``gpu`` with a unit ``01/…`` never read alike; other names as ever."""
        return f"{_part(self.host)}/{_part(self.unit)}/{self.key}"


def _part(name: str) -> str:
    return name.replace("%", "%25").replace("/", "%2F") if ("/" in name or "%" in name) else name


def finding_id(host: Any, unit: Any, key: Any) -> FindingId:
    """The identity of a finding of `key` on `unit` of `host`.

    A host of None is "local" (a unit file read on this machine), as in reports and in the store;
    a missing unit or key is the empty string.
    """
    return FindingId("local" if host is None else str(host), "" if unit is None else str(unit),
                     "" if key is None else str(key))


__all__ = ["FindingId", "finding_id"]
