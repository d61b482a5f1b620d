"""The collector of a stored snapshot (`--snapshot FILE`, or a store's listing of one).

A stored snapshot is already a record: reading it (a YAML file, or a row of a database store named
by its listing path) is the store's job, in snapshots/, a floor above collect/. So this collector
names it and reads nothing: a RawUnit with source "snapshot", the path, and no text, which
`snapshots/reader.snapshot_from_raw` hands to the store. It never parses and never fails: a
missing or unreadable snapshot is the store's error, said once where it is read.
"""
from __future__ import annotations

from driftwatch.collect.interface import OK, SOURCE_SNAPSHOT, CollectOptions, Collector, CollectTarget
from driftwatch.collect.raw import RawUnit


class SnapshotCollector(Collector):
    """Names one stored snapshot for the store to read."""

    kind = "snapshot"

    def __init__(self, path: str, host: str | None = None):
        self.path = path
        self.host = host

    @classmethod
    def open(cls, target: CollectTarget, options: CollectOptions | None = None, prepared: object = None
             ) -> SnapshotCollector:
        return cls(target.path or "", target.host)

    def collect(self, unit: str = "") -> RawUnit:
        return RawUnit(host=self.host or "", unit=unit, source=SOURCE_SNAPSHOT, status=OK, paths=[self.path])
