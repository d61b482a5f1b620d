"""run/answers.py: hosts' answers handled on a thread of their own, in arrival order."""
from __future__ import annotations

import threading

import pytest

from driftwatch.collect.raw import RawUnit
from driftwatch.run.answers import AnswerWorker


def _raw(i: int) -> RawUnit:
    return RawUnit(host=f"h{i}", unit="u.service", source="", status="ok")


def test_answers_are_handled_off_the_callers_thread_in_arrival_order():
    seen, threads = [], set()

    def handle(raw):
        threads.add(threading.get_ident())
        seen.append(raw.host)

    raws = [_raw(i) for i in range(200)]
    with AnswerWorker(handle) as worker:
        for raw in raws:
            worker.put(raw)
    assert seen == [r.host for r in raws]  # finish() waited for every one
    assert threads and threading.get_ident() not in threads


def test_a_handler_that_fails_makes_that_answer_an_error_and_goes_on():
    def handle(raw):
        if raw.host == "h1":
            raise KeyError("bug")

    raws = [_raw(i) for i in range(3)]
    with AnswerWorker(handle) as worker:
        for raw in raws:
            worker.put(raw)
    assert [r.status for r in raws] == ["ok", "error", "ok"]
    assert raws[1].error == "internal error handling the answer: KeyError"


def test_an_interrupted_run_drops_the_answers_not_begun():
    started, release, seen = threading.Event(), threading.Event(), []

    def handle(raw):
        started.set()
        release.wait(10)
        seen.append(raw.host)

    with pytest.raises(KeyboardInterrupt):
        with AnswerWorker(handle) as worker:
            for i in range(5):
                worker.put(_raw(i))
            started.wait(10)
            raise KeyboardInterrupt
    release.set()
    worker._thread.join(10)
    assert seen == ["h0"]  # the one under way finishes; the rest are never handled


def test_a_failed_answer_with_its_target_is_that_units_error_and_the_others_go_on():
    """fleet.py puts (raw, target) pairs: a handler that fails on one marks the RawUnit it holds
    (the worker's thread does not die with an AttributeError on the tuple)."""
    handled = []

    def handle(item):
        raw, target = item
        if raw.host == "h1":
            raise KeyError("bug")
        handled.append((raw.host, target))

    raws = [_raw(i) for i in range(3)]
    with AnswerWorker(handle) as worker:
        for i, raw in enumerate(raws):
            worker.put((raw, f"target{i}"))
    assert [r.status for r in raws] == ["ok", "error", "ok"]
    assert raws[1].error == "internal error handling the answer: KeyError"
    assert handled == [("h0", "target0"), ("h2", "target2")]
