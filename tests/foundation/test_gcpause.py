"""gc_paused() (hierviz/foundation/gcpause.py) across threads: pauses are counted, so however the blocks of
several threads begin and end, the collector is off while any is open and ends enabled (and
stays disabled when the user had disabled it)."""

from __future__ import annotations

import gc
import itertools
import threading

import pytest

from hierviz.foundation.gcpause import collecting, gc_paused, pauses


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
        assert not collecting()
    for n, k in enumerate(order, 1):
        steps[k].leave.set()
        assert steps[k].left.wait(30)
        assert collecting() == (n == 3), (order, n)  # off while any block is open
    assert collecting() and pauses() == 0


def test_the_issues_interleaving_a_background_pause_then_a_foreground_one() -> None:
    """A background pause, then one in the foreground, the background one ends first: the
    collector comes back on when the foreground one ends (it stayed off for good before)."""
    background = Step()
    background.thread.start()
    background.inside.wait(30)
    with gc_paused():
        background.leave.set()
        background.left.wait(30)
        assert not collecting()
    assert collecting()


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
    assert collecting() and pauses() == 0


def test_a_gc_disable_called_while_another_thread_pauses_survives_the_pause() -> None:
    """The issue's case: a background pause is open, the user calls gc.disable(), the pause
    ends: the collector stays disabled, as the user left it; gc.enable() then turns it on."""
    background = Step()
    background.thread.start()
    background.inside.wait(30)
    try:
        gc.disable()
        background.leave.set()
        background.left.wait(30)
        assert not gc.isenabled() and pauses() == 0
        gc.enable()
        assert collecting()  # the thresholds are the user's again
    finally:
        gc.enable()


def test_thresholds_the_user_sets_during_a_pause_are_kept() -> None:
    before = gc.get_threshold()
    try:
        with gc_paused():
            gc.set_threshold(1234, 11, 12)
        assert gc.get_threshold() == (1234, 11, 12)
    finally:
        gc.set_threshold(*before)


def test_many_threads_pausing_while_the_user_toggles_the_collector_end_as_the_user_left_it() -> None:
    """Threads pause and resume at random while this thread flips gc.enable()/gc.disable():
    the collector ends collecting when the user's last call was enable, and not when it was
    disable."""
    import random

    rng = random.Random(0)
    stop = threading.Event()

    def churn(seed: int) -> None:
        r = random.Random(seed)
        while not stop.is_set():
            with gc_paused():
                threading.Event().wait(r.random() / 1000)

    for last in (gc.disable, gc.enable):
        threads = [threading.Thread(target=churn, args=(k,), daemon=True) for k in range(4)]
        for t in threads:
            t.start()
        try:
            for _ in range(200):
                rng.choice((gc.enable, gc.disable))()
            last()
        finally:
            stop.set()
            for t in threads:
                t.join(30)
            stop.clear()
        assert pauses() == 0 and gc.isenabled() == (last is gc.enable) and gc.get_threshold()[0] > 0
        gc.enable()


def test_a_users_gc_disable_survives_a_measurement() -> None:
    """hv.measure times with the collector paused; a collector the user disabled is still
    disabled after it, and one that was on is on."""
    import torch

    import hierviz as hv

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
    inputs = (torch.randn(2, 4),)
    same = hv.Config(priority=("same",), min_block_size=1,
                     support={"same": hv.support.where(lambda n: n.op == "call_function", name="every op")})
    part = hv.partition(model, inputs, same)
    quick = {"warmup": 0, "iters": 2, "compilers": {"same": lambda gm, ex: gm}}
    gc.disable()
    try:
        hv.measure(part, inputs, **quick)
        assert not gc.isenabled()
    finally:
        gc.enable()
    hv.measure(part, inputs, **quick)
    assert collecting() and pauses() == 0
