"""Collect many (host, unit) pairs in parallel: one thread and one SSH connection per host.

Every pair ends as one RawUnit, in input order, with a status (see ``interface.STATUSES``); one
host's failure never raises and never holds the others past its own timeouts. A watchdog closes a
host's connection if it overruns ``connect_timeout * (1 + jumps) + command_timeout * units`` (plus
a little grace), which unblocks its thread whatever it is waiting on.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import queue
import threading
import time
from collections.abc import Callable

from driftwatch.collect.interface import ERROR
from driftwatch.collect.inventory import HostTarget
from driftwatch.collect.unitname import validate_unit_name
from driftwatch.errors import InputError
from driftwatch.redact import visible
from driftwatch.collect.raw import RawUnit
from driftwatch.collect.reader import UnitReader
from driftwatch.collect.sshoptions import SSHOptions

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
GLOBAL_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"
WATCHDOG_GRACE = 2.0
WATCHDOG_EVERY = 0.25  # seconds between two looks for overdue hosts


ProgressFn = Callable[[int, int, RawUnit], None]


def collect_fleet(targets: list[tuple[HostTarget, str]], options: SSHOptions, reader: UnitReader,
                  progress: ProgressFn | None = None,
                  on_result: Callable[[int, RawUnit], None] | None = None) -> list[RawUnit]:
    """One RawUnit per (host, unit) in input order. Raises InputError only for bad input
    (an invalid unit name, an unreadable ssh config) — before any connection is made. `reader`
    reads the units' command lines where collecting needs them (see reader.py).

    `on_result(i, raw)` runs in the calling thread as each answer arrives, while the other hosts
    are still being read: parsing and saving overlap with collection instead of following it."""
    pairs = [(t, validate_unit_name(u)) for t, u in targets]
    if not pairs:
        return []
    if options.parallel < 1:
        raise InputError(f"--parallel must be at least 1, not {options.parallel}")

    from driftwatch.collect.hostkeys import KnownHosts
    from driftwatch.collect.sshconfig import default_ssh_config, load_ssh_config

    cfg_path = options.ssh_config
    if cfg_path is None:
        cfg_path = default_ssh_config()
    elif cfg_path.lower() in ("", "none"):
        cfg_path = None
    config = load_ssh_config(cfg_path)
    if options.known_hosts:
        known = KnownHosts(options.known_hosts, options.accept_new)
    else:
        extra = (GLOBAL_KNOWN_HOSTS,) if os.path.exists(GLOBAL_KNOWN_HOSTS) else ()
        known = KnownHosts(DEFAULT_KNOWN_HOSTS, options.accept_new, extra)

    groups: dict[tuple, list[int]] = {}
    for i, (t, _) in enumerate(pairs):
        key = (t.name, t.address, t.user, t.port, t.identity)
        groups.setdefault(key, []).append(i)

    results: list[RawUnit | None] = [None] * len(pairs)
    runner = _Runner(pairs, options, config, known, reader)
    total, done = len(pairs), 0
    workers = min(options.parallel, len(groups))
    pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="driftwatch-ssh")
    # Woken by completions: each future puts itself on `finished` when done (a done-callback), so
    # an answer costs O(1) however many hosts are pending (cf.wait scans every pending future, which
    # at 10^4 hosts is seconds of CPU); the watchdog runs at most every WATCHDOG_EVERY seconds.
    finished: queue.SimpleQueue = queue.SimpleQueue()
    try:
        futures = {}
        for idx in groups.values():
            fut = pool.submit(runner.host, idx)
            futures[fut] = idx
            fut.add_done_callback(finished.put)
        remaining, next_watch = len(futures), time.monotonic() + WATCHDOG_EVERY
        while remaining:
            try:
                fut = finished.get(timeout=WATCHDOG_EVERY)
            except queue.Empty:
                fut = None
            if fut is not None:
                remaining -= 1
                idx = futures.pop(fut)
                try:
                    raws = fut.result()
                except Exception as exc:  # noqa: BLE001 - a bug must not cost the other hosts
                    raws = [_failed(pairs[i], ERROR, f"internal error: {type(exc).__name__}: {exc}")
                            for i in idx]
                for i, raw in zip(idx, raws):
                    if raw.error:  # remote text (stderr, banners): never a raw control character
                        raw.error = visible(raw.error)
                    results[i] = raw
                    done += 1
                    if on_result is not None:
                        try:
                            on_result(i, raw)
                        except Exception as exc:  # noqa: BLE001 - one host's answer must not cost the others
                            raw.status = ERROR
                            raw.error = f"internal error handling the answer: {type(exc).__name__}"
                    if progress is not None:
                        progress(done, total, raw)
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
    return [r for r in results if r is not None]



def _failed(pair: tuple[HostTarget, str], status: str, error: str) -> RawUnit:
    target, unit = pair
    return RawUnit(host=target.name, unit=unit, source="", status=status, error=error)


class _Runner:
    def __init__(self, pairs, options: SSHOptions, config, known, reader: UnitReader):
        self.pairs = pairs
        self.reader = reader
        self.options = options
        self.config = config
        self.known = known
        self._lock = threading.Lock()
        self._running: dict[int, tuple[float, object]] = {}  # thread id -> (deadline, collector)
        self._aborted = threading.Event()

    def abort(self) -> None:
        """Close every connection now (from the main thread: Ctrl-C)."""
        self._aborted.set()
        with self._lock:
            running = [c for _, c in self._running.values()]
        for c in running:
            c.close()

    def host(self, idx: list[int]) -> list[RawUnit]:
        from driftwatch.collect.ssh import SSHCollector
        from driftwatch.collect.sshconfig import resolve

        target = self.pairs[idx[0]][0]
        o = self.options
        if self._aborted.is_set():
            return [_failed(self.pairs[i], ERROR, "aborted before this host was read") for i in idx]
        try:
            endpoint = resolve(target, self.config, o.identity)
        except InputError as exc:
            return [_failed(self.pairs[i], ERROR, str(exc)) for i in idx]
        collector = SSHCollector(endpoint, self.known, reader=self.reader, connect_timeout=o.connect_timeout,
                                 command_timeout=o.command_timeout, password=o.password,
                                 allow_agent=o.allow_agent, look_for_keys=o.look_for_keys, probe=o.probe,
                                 probe_timeout=o.probe_timeout)
        budget = (o.connect_timeout * (1 + len(endpoint.jumps)) + o.command_timeout * len(idx)
                  + (3 * o.probe_timeout * len(idx) if o.probe else 0) + WATCHDOG_GRACE)
        me = threading.get_ident()
        with self._lock:
            self._running[me] = (time.monotonic() + budget, collector)
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
