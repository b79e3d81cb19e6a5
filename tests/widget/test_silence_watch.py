"""The worker's silence (hierviz/widget/silence_watch.py): the time since its last word that it
could have run. Time its threads waited for a CPU (a nice-19 process on a busy machine) is not
silence; time it was blocked or ran without a word is. The clock and the run-queue readings are
the test's, never this machine's load."""

from __future__ import annotations

import os
import pytest

from hierviz.widget import silence_watch
from hierviz.widget.silence_watch import LOOK_S, SilenceWatch, runqueue_wait_s

from tests.clock import ManualClock


class FakeQueues:
    """runqueue_wait_s as the test says: `wait(s)` adds s seconds of waiting for a CPU; None
    (no /proc) when `readable` is False."""

    def __init__(self) -> None:
        self.waited = 0.0
        self.readable = True
        self.pids: list[int] = []

    def __call__(self, pid: int) -> float | None:
        self.pids.append(pid)
        return self.waited if self.readable else None

    def wait(self, seconds: float) -> None:
        self.waited += seconds


@pytest.fixture
def watched(monkeypatch):
    clock, queues = ManualClock(), FakeQueues()
    monkeypatch.setattr(silence_watch, "runqueue_wait_s", queues)
    watch = SilenceWatch(clock)
    watch.watch(4242)
    return watch, clock, queues


def test_time_spent_waiting_for_a_cpu_is_not_silence(watched) -> None:
    watch, clock, queues = watched
    for _ in range(100):  # 1000 s, every second of it waiting for a CPU
        clock.advance(10.0)
        queues.wait(10.0)
        assert watch.silent_s() == 0.0
    assert set(queues.pids) == {4242}


def test_a_process_that_could_run_is_silent_for_the_wall_time(watched) -> None:
    watch, clock, _ = watched
    clock.advance(10.0)
    assert watch.silent_s() == 10.0
    clock.advance(150.0)
    assert watch.silent_s() == 160.0


def test_starved_half_the_time_is_silent_half_the_time(watched) -> None:
    watch, clock, queues = watched
    for _ in range(10):
        clock.advance(10.0)
        queues.wait(5.0)
        watch.silent_s()
    assert watch.silent_s() == 50.0


def test_several_threads_waiting_at_once_count_as_the_time_that_passed(watched) -> None:
    """Three threads each waiting 10 s of the same 10 s: 10 s starved, and the silence after
    it (the process blocked, waiting for no CPU) counts in full."""
    watch, clock, queues = watched
    clock.advance(10.0)
    queues.wait(30.0)
    assert watch.silent_s() == 0.0
    clock.advance(20.0)
    assert watch.silent_s() == 20.0


def test_a_word_starts_the_silence_again(watched) -> None:
    watch, clock, queues = watched
    clock.advance(100.0)
    queues.wait(40.0)
    assert watch.silent_s() == 60.0
    clock.advance(5.0)
    watch.heard()
    assert watch.silent_s() == 0.0
    clock.advance(7.0)
    queues.wait(10.0)  # the wait read now is counted only for the 7 s since the word
    assert watch.silent_s() == 0.0
    clock.advance(3.0)
    assert watch.silent_s() == 3.0


def test_the_allowance_lasts_until_the_first_word(watched) -> None:
    watch, clock, queues = watched
    watch.watch(4242, allowance=60.0)
    clock.advance(100.0)
    queues.wait(50.0)  # starved for half of it: 50 s silent, 60 s allowed
    assert watch.silent_s() == -10.0
    watch.heard()
    clock.advance(2.0)
    assert watch.silent_s() == 2.0


def test_without_readings_silence_is_the_wall_time(watched) -> None:
    watch, clock, queues = watched
    queues.readable = False
    clock.advance(30.0)
    queues.wait(30.0)
    assert watch.silent_s() == 30.0


def test_the_run_queues_are_read_at_most_every_look_s(watched) -> None:
    watch, clock, queues = watched
    read = len(queues.pids)
    clock.advance(LOOK_S / 2)
    watch.silent_s()
    watch.silent_s()
    assert len(queues.pids) == read
    clock.advance(LOOK_S)
    watch.silent_s()
    assert len(queues.pids) == read + 1


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads Linux's /proc")
def test_the_wait_of_a_real_process_is_read_and_no_process_is_none() -> None:
    here = runqueue_wait_s(os.getpid())
    assert here is not None and here >= 0.0
    with open("/proc/sys/kernel/pid_max", encoding="ascii") as f:
        beyond = int(f.read()) + 1  # no process can have it
    assert runqueue_wait_s(beyond) is None
