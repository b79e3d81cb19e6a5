"""A newer build submitted through an explorer's handle on the worker (worker.Hold) cancels that
handle's build still running: the child is told (it stops the build before its next conversion
or build, tests/widget/test_build_steps_aside.py) and the older job's caller gets JobCancelled,
not an error of the build; other jobs and other handles' builds go on. Closing the handle
cancels its jobs the same way. No child is started: what the handle sends is recorded."""

from __future__ import annotations

import pytest

from hierviz.widget.worker import SUPERSEDED, JobCancelled, Worker, WorkerError


@pytest.fixture
def worker(monkeypatch):
    w = Worker()
    w.sent = []
    monkeypatch.setattr(w, "_ensure_started", lambda: None)
    monkeypatch.setattr(w, "_packed", lambda graph, inputs: b"")
    monkeypatch.setattr(w, "_subject", lambda graph, inputs, data=None: 0)
    monkeypatch.setattr(w, "_write", w.sent.append)
    return w


def _cancels(worker) -> list[int]:
    return [payload for _, kind, payload in worker.sent if kind == "cancel"]


def test_a_newer_build_cancels_the_older_one_of_the_same_explorer(worker) -> None:
    mine, other = worker.hold(), worker.hold()
    first = mine.submit(None, None, "build", "A")
    measuring = mine.submit(None, None, "measure", "A")
    theirs = other.submit(None, None, "build", "A")
    assert _cancels(worker) == []
    second = mine.submit(None, None, "build", "B")
    assert _cancels(worker) == [first.key]
    with pytest.raises(JobCancelled, match=SUPERSEDED):
        first.result()
    assert not measuring.done.is_set() and not theirs.done.is_set() and not second.done.is_set()
    third = mine.submit(None, None, "build", "C")
    assert _cancels(worker) == [first.key, second.key]
    assert not third.done.is_set()


def test_a_build_that_answered_is_not_cancelled_by_the_next(worker) -> None:
    mine = worker.hold()
    first = mine.submit(None, None, "build", "A")
    worker._jobs.pop(first.key)  # what the reader does with an answer
    first.status, first.answer = "ok", "built"
    first.done.set()
    mine.submit(None, None, "build", "B")
    assert _cancels(worker) == [] and first.result() == "built"


def test_closing_the_explorer_cancels_its_build(worker) -> None:
    mine = worker.hold()
    building = mine.submit(None, None, "build", "A")
    mine.close()
    assert _cancels(worker) == [building.key]
    with pytest.raises(JobCancelled, match="closed") as got:
        building.result()
    assert isinstance(got.value, WorkerError)  # what callers of the worker already catch
