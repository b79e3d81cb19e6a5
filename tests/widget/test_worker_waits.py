"""The tests' waits on the worker (tests/widget/worker_waits.py) end on what the worker could
have done, not on wall time: a starved worker is waited for however long it is starved; one
that could run and did not finish fails the wait. Clock and run-queue readings are the test's."""

from __future__ import annotations

import pytest

from hierviz.widget import silence_watch

from tests.clock import ManualClock, use_clock
from tests.widget import worker_waits
from tests.widget.worker_waits import COULD_RUN_S, wait_on_worker


@pytest.fixture
def clock(monkeypatch):
    clock = ManualClock()
    use_clock(monkeypatch, worker_waits, clock)
    return clock


def test_a_starved_worker_is_waited_for(clock, monkeypatch) -> None:
    waited = [0.0]
    monkeypatch.setattr(silence_watch, "runqueue_wait_s", lambda pid: waited[0])
    looks = []

    def done() -> bool:  # each look: 30 s pass, all of it waiting for a CPU; done at the 20th (600 s)
        looks.append(1)
        clock.advance(30.0)
        waited[0] += 30.0
        return len(looks) == 20

    wait_on_worker(done, "never fails", pid=lambda: 4242)
    assert len(looks) == 20


def test_a_worker_that_could_run_and_did_not_finish_fails_the_wait(clock, monkeypatch) -> None:
    monkeypatch.setattr(silence_watch, "runqueue_wait_s", lambda pid: 0.0)
    looks = []

    def done() -> bool:
        looks.append(1)
        clock.advance(30.0)
        return False

    with pytest.raises(AssertionError, match="the build never ended"):
        wait_on_worker(done, "the build never ended", pid=lambda: 4242)
    assert len(looks) == int(COULD_RUN_S // 30.0) + 1  # the first look starts the watch
