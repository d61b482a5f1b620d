"""Collect many (target, unit) pairs: one RawUnit each, in input order, whatever the targets' kinds.

Each target's collector comes from the registry by kind (``interface.collector_for``): prepared once
per kind and run, opened once per target (a host's units share one SSH connection). Local kinds (a
unit file, a stored snapshot) are read first, in the calling thread; their bad input raises as it
would for one file. Remote kinds (hosts over SSH) are read in parallel, one thread and one
connection per host: every pair ends as one RawUnit with a status (see ``interface.STATUSES``); one
host's failure never raises and never holds the others past its own timeouts. A watchdog closes a
host's collector if it overruns its ``budget`` (for SSH ``connect_timeout * (1 + jumps) +
command_timeout * units``) plus a little grace, which unblocks its thread whatever it is waiting on.
"""
from __future__ import annotations

import concurrent.futures as cf
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from driftwatch.collect.hostkeys import DEFAULT_KNOWN_HOSTS, GLOBAL_KNOWN_HOSTS  # noqa: F401 - install.py reads them here
from driftwatch.collect.interface import (
    ERROR,
    CollectOptions,
    Collector,
    CollectTarget,
    Where,
    collector_for,
    target_name,
)
from driftwatch.collect.inventory import HostTarget
from driftwatch.collect.raw import RawUnit
from driftwatch.collect.reader import UnitReader
from driftwatch.collect.sshoptions import SSHOptions
from driftwatch.collect.unitname import validate_unit_name
from driftwatch.errors import InputError
from driftwatch.redact import visible

WATCHDOG_GRACE = 2.0
WATCHDOG_EVERY = 0.25  # seconds between two looks for overdue hosts


ProgressFn = Callable[[int, int, RawUnit], None]
Pair = tuple[CollectTarget, str]


def collect_fleet(targets: list[tuple[HostTarget, str]], options: SSHOptions, reader: UnitReader,
                  progress: ProgressFn | None = None,
                  on_result: Callable[[int, RawUnit], None] | None = None) -> list[RawUnit]:
    """One RawUnit per (host, unit) in input order, read over SSH. Raises InputError only for bad
    input (an invalid unit name, an unreadable ssh config) — before any connection is made. `reader`
    reads the units' command lines where collecting needs them and gives the engines' markers (see
    reader.py).

    `on_result(i, raw)` runs in the calling thread as each answer arrives, while the other hosts
    are still being read: parsing and saving overlap with collection instead of following it."""
    pairs: list[Pair] = [(Where("ssh", host=t.name, address=t), u) for t, u in targets]
    return collect_targets(pairs, CollectOptions(ssh=options, reader=reader), progress, on_result)


def collect_targets(targets: Sequence[Pair], options: CollectOptions, progress: ProgressFn | None = None,
                    on_result: Callable[[int, RawUnit], None] | None = None) -> list[RawUnit]:
    """One RawUnit per (target, unit) in input order, each read by its kind's collector. Raises
    InputError for bad input: an invalid unit name, an unknown kind or an unreadable ssh config
    before anything is read; a unit file that cannot be read when it is. `on_result` and `progress`
    as for collect_fleet."""
    kinds = {t.kind: collector_for(t.kind) for t, _ in targets}
    pairs = [(t, _unit(kinds[t.kind], u)) for t, u in targets]
    if not pairs:
        return []
    if options.ssh.parallel < 1 and any(c.remote for c in kinds.values()):
        raise InputError(f"--parallel must be at least 1, not {options.ssh.parallel}")
    prepared = {kind: collector.prepare(options) for kind, collector in kinds.items()}
    groups: dict[tuple, list[int]] = {}
    for i, (t, _) in enumerate(pairs):
        groups.setdefault(kinds[t.kind].group_key(t), []).append(i)
    results: list[RawUnit | None] = [None] * len(pairs)
    runner = _Runner(pairs, options, kinds, prepared)
    delivery = _Delivery(results, len(pairs), progress, on_result)
    remote = []
    for idx in groups.values():
        if kinds[pairs[idx[0]][0].kind].remote:
            remote.append(idx)
        else:
            delivery.deliver(idx, runner.local(idx))
    if remote:
        _run_remote(runner, remote, delivery)
    return [r for r in results if r is not None]


def _unit(collector: type[Collector], unit: str) -> str:
    """The unit name validated; a local kind may name none (a unit file's own name is the parser's)."""
    return unit if not unit and not collector.remote else validate_unit_name(unit)


class _Delivery:
    """Puts each answer in its place and tells the caller, in the calling thread."""

    def __init__(self, results: list[RawUnit | None], total: int, progress: ProgressFn | None,
                 on_result: Callable[[int, RawUnit], None] | None):
        self.results, self.total, self.done = results, total, 0
        self.progress, self.on_result = progress, on_result

    def deliver(self, idx: list[int], raws: list[RawUnit]) -> None:
        for i, raw in zip(idx, raws, strict=False):
            if raw.error:  # remote text (stderr, banners): never a raw control character
                raw.error = visible(raw.error)
            self.results[i] = raw
            self.done += 1
            if self.on_result is not None:
                try:
                    self.on_result(i, raw)
                except Exception as exc:  # noqa: BLE001 - one host's answer must not cost the others
                    raw.status = ERROR
                    raw.error = f"internal error handling the answer: {type(exc).__name__}"
            if self.progress is not None:
                self.progress(self.done, self.total, raw)


def _run_remote(runner: _Runner, groups: list[list[int]], delivery: _Delivery) -> None:
    """The remote groups in parallel, answers delivered as they arrive, the watchdog between."""
    pairs = runner.pairs
    workers = min(runner.options.ssh.parallel, len(groups))
    pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="driftwatch-ssh")
    # Woken by completions: each future puts itself on `finished` when done (a done-callback), so
    # an answer costs O(1) however many hosts are pending (cf.wait scans every pending future, which
    # at 10^4 hosts is seconds of CPU); the watchdog runs at most every WATCHDOG_EVERY seconds.
    finished: queue.SimpleQueue = queue.SimpleQueue()
    try:
        futures = {}
        for idx in groups:
            fut = pool.submit(runner.host, idx)
            futures[fut] = idx
            fut.add_done_callback(finished.put)
        remaining, next_watch = len(futures), time.monotonic() + WATCHDOG_EVERY
        while remaining:
            done: cf.Future | None
            try:
                done = finished.get(timeout=WATCHDOG_EVERY)
            except queue.Empty:
                done = None
            if done is not None:
                remaining -= 1
                idx = futures.pop(done)
                try:
                    raws = done.result()
                except Exception as exc:  # noqa: BLE001 - a bug must not cost the other hosts
                    raws = [_failed(pairs[i], ERROR, f"internal error: {type(exc).__name__}: {exc}")
                            for i in idx]
                delivery.deliver(idx, raws)
            now = time.monotonic()
            if now >= next_watch:
                runner.watchdog()
                next_watch = now + WATCHDOG_EVERY
    except BaseException:
        # Ctrl-C (or any error here): abandon every host at once. Closing a connection unblocks its
        # thread wherever it waits; hosts not started yet are never contacted.
        runner.abort()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _failed(pair: Pair, status: str, error: str) -> RawUnit:
    target, unit = pair
    return RawUnit(host=target_name(target), unit=unit, source="", status=status, error=error)


class _Runner:
    def __init__(self, pairs: list[Pair], options: CollectOptions, kinds: dict[str, type[Collector]],
                 prepared: dict[str, Any]):
        self.pairs = pairs
        self.options = options
        self.kinds = kinds
        self.prepared = prepared
        self._lock = threading.Lock()
        self._running: dict[int, tuple[float, Collector]] = {}  # thread id -> (deadline, collector)
        self._aborted = threading.Event()

    def abort(self) -> None:
        """Close every connection now (from the main thread: Ctrl-C)."""
        self._aborted.set()
        with self._lock:
            running = [c for _, c in self._running.values()]
        for c in running:
            c.close()

    def _open(self, idx: list[int]) -> Collector:
        target = self.pairs[idx[0]][0]
        return self.kinds[target.kind].open(target, self.options, self.prepared[target.kind])

    def local(self, idx: list[int]) -> list[RawUnit]:
        """A local target's units, in the calling thread (its InputError is the caller's)."""
        collector = self._open(idx)
        try:
            return [collector.collect(self.pairs[i][1]) for i in idx]
        finally:
            collector.close()

    def host(self, idx: list[int]) -> list[RawUnit]:
        if self._aborted.is_set():
            return [_failed(self.pairs[i], ERROR, "aborted before this host was read") for i in idx]
        try:
            collector = self._open(idx)
        except InputError as exc:
            return [_failed(self.pairs[i], ERROR, str(exc)) for i in idx]
        budget = collector.budget(len(idx))
        me = threading.get_ident()
        if budget is not None:
            with self._lock:
                self._running[me] = (time.monotonic() + budget + WATCHDOG_GRACE, collector)
        if self._aborted.is_set():  # aborted between the check above and registering: close it ourselves
            collector.close()
        try:
            out = [collector.collect(self.pairs[i][1]) for i in idx]
        finally:
            with self._lock:
                self._running.pop(me, None)
            collector.close()
        return out

    def watchdog(self) -> None:
        now = time.monotonic()
        with self._lock:
            overdue = [c for deadline, c in self._running.values() if now > deadline]
        for c in overdue:
            c.close()
