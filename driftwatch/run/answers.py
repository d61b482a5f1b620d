"""Hosts' answers handled behind the collection, on one thread of their own.

The collector's loop (collect/fleet.py) hands each answer over as it arrives and goes straight back
to the next completion and its watchdog; parsing, typing, comparing and saving happen here, in
arrival order, one answer at a time (so the handler needs no lock of its own). A save that waits on
the disk or on a database server then delays no other host's reading, and no hung host's watchdog.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable

_DONE = object()


class AnswerWorker:
    """`put(raw)` from the collector's loop; `handle(raw)` runs on the worker's thread. `finish()`
    waits until every answer put is handled; `abandon()` (Ctrl-C) drops those not yet begun."""

    def __init__(self, handle: Callable[[object], None], name: str = "driftwatch-answers"):
        self._handle = handle
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._dropped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, raw, *_ignored) -> None:
        self._queue.put(raw)

    def _run(self) -> None:
        while True:
            raw = self._queue.get()
            if raw is _DONE or self._dropped.is_set():
                return
            try:
                self._handle(raw)
            except Exception as exc:  # noqa: BLE001 - one host's answer must not cost the others
                raw.status = "error"
                raw.error = f"internal error handling the answer: {type(exc).__name__}"

    def finish(self) -> None:
        self._queue.put(_DONE)
        self._thread.join()

    def abandon(self) -> None:
        self._dropped.set()
        self._queue.put(_DONE)

    def __enter__(self) -> AnswerWorker:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            self.finish()
        else:
            self.abandon()


__all__ = ["AnswerWorker"]
