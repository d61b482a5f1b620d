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
from types import TracebackType
from typing import Generic, TypeVar

from ..collect.raw import RawUnit

_DONE = object()
T = TypeVar("T")  # an answer: a RawUnit, or a tuple that holds one (with the target it answers)


def _unit_in(item: object) -> RawUnit | None:
    """The RawUnit an answer is or holds (where a failed handler's error is written)."""
    if isinstance(item, RawUnit):
        return item
    return next((x for x in item if isinstance(x, RawUnit)), None) if isinstance(item, tuple) else None


class AnswerWorker(Generic[T]):
    """`put(raw)` from the collector's loop; `handle(raw)` runs on the worker's thread. `finish()`
    waits until every answer put is handled; `abandon()` (Ctrl-C) drops those not yet begun."""

    def __init__(self, handle: Callable[[T], None], name: str = "driftwatch-answers"):
        self._handle = handle
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._dropped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, raw: T, *_ignored: object) -> None:
        self._queue.put(raw)

    def _run(self) -> None:
        while True:
            raw = self._queue.get()
            if raw is _DONE or self._dropped.is_set():
                return
            try:
                self._handle(raw)
            except Exception as exc:  # noqa: BLE001 - one host's answer must not cost the others
                unit = _unit_in(raw)  # an answer with its target (a tuple) too: never the thread's end
                if unit is not None:
                    unit.status = "error"
                    unit.error = f"internal error handling the answer: {type(exc).__name__}"

    def finish(self) -> None:
        self._queue.put(_DONE)
        self._thread.join()

    def abandon(self) -> None:
        self._dropped.set()
        self._queue.put(_DONE)

    def __enter__(self) -> AnswerWorker[T]:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            self.finish()
        else:
            self.abandon()


__all__ = ["AnswerWorker"]
