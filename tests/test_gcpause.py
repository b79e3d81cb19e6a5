"""gc_paused() (hierviz/gcpause.py) across threads: pauses are counted, so however the blocks of
several threads begin and end, the collector is off while any is open and ends enabled (and
stays disabled when the user had disabled it)."""

from __future__ import annotations

import gc
import itertools
import threading

import pytest

from hierviz.gcpause import gc_paused, pauses


class Step:
    """A thread holding gc_paused() from `enter` until `leave` is set."""

    def __init__(self) -> None:
        self.inside, self.leave, self.left = threading.Event(), threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        with gc_paused():
            self.inside.set()
            self.leave.wait(30)
        self.left.set()


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("start_order", [(0, 1, 2), (2, 0, 1)])
def test_threads_interleaving_pauses_leave_the_collector_enabled(order, start_order) -> None:
    assert gc.isenabled()
    steps = [Step() for _ in range(3)]
    for k in start_order:
        steps[k].thread.start()
        assert steps[k].inside.wait(30)
        assert not gc.isenabled()
    for n, k in enumerate(order, 1):
        steps[k].leave.set()
        assert steps[k].left.wait(30)
        assert gc.isenabled() == (n == 3), (order, n)  # off while any block is open
    assert gc.isenabled() and pauses() == 0


def test_the_issues_interleaving_a_background_pause_then_a_foreground_one() -> None:
    """A background pause, then one in the foreground, the background one ends first: the
    collector comes back on when the foreground one ends (it stayed off for good before)."""
    background = Step()
    background.thread.start()
    background.inside.wait(30)
    with gc_paused():
        background.leave.set()
        background.left.wait(30)
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_user_disabled_stays_disabled() -> None:
    gc.disable()
    try:
        with gc_paused():
            with gc_paused():
                pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ValueError):
        with gc_paused():
            raise ValueError("the block raised")
    assert gc.isenabled() and pauses() == 0
