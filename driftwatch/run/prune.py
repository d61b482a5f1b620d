"""`driftwatch prune`: retention of the snapshot store. A module of its own so that pruning imports
neither the snapshot run's answer thread nor its shard hashing (a no-op prune is mostly start-up)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from .voice import Voice


def prune_store(store: str | None, keep: int | None, older_than: str | None, baselines_dir: str | None,
                voice: Voice, *, dry_run: bool = False, host: str | None = None, unit: str | None = None) -> list:
    """Retention: delete old snapshots, never the newest of a host/unit nor one a baseline was made
    from; the records deleted (or that would be, with `dry_run`). Each is a `voice.out` line, the
    summary `voice.aside`, a store or baseline problem `voice.warn`."""
    from ..snapshots.baseline import baselines_dir as resolve_dir
    from ..snapshots.store import baseline_protections, open_store
    from ..timestamps import parse_duration
    if keep is None and not older_than:
        raise InputError("prune needs --keep N and/or --older-than D (e.g. --keep 100, --older-than 30d)")
    age = parse_duration(older_than) if older_than else None
    directory = resolve_dir(baselines_dir)
    protected = baseline_protections(directory, voice.warn)
    st = open_store(store or None, on_problem=voice.warn)
    gone = st.prune(keep=keep, older_than=age, protected=protected, host=host, unit=unit, dry_run=dry_run)
    for record in gone:
        voice.out(f"{'would delete' if dry_run else 'deleted'}\t{record.path}")
    names = len(protected)
    voice.aside(f"{'would prune' if dry_run else 'pruned'} {len(gone)} snapshot{'s' if len(gone) != 1 else ''} in "
               f"{st.root}; kept the newest of each host/unit and every snapshot of the {names} "
               f"baseline{'s' if names != 1 else ''} in {directory}/")
    return gone
