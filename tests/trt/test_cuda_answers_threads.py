"""answer_cuda_queries entered from several threads at once (the explorer's worker runs jobs side
by side): inside, every thread gets the answers; once the last one leaves, torch.cuda's functions
are torch's own again, whichever thread leaves first."""

from __future__ import annotations

import threading

import pytest
import torch

from hierviz.trt.loading import _CUDA_ANSWERS, answer_cuda_queries

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="with a real GPU nothing is answered")
WAIT_S = 60.0  # a safety net only: every step waits on an event the other thread sets


def _torchs_own() -> dict[str, object]:
    return {name: getattr(torch.cuda, name) for name in _CUDA_ANSWERS}


def _in_threads(*targets) -> list[AssertionError]:
    """Run each target in a thread of its own; what they raised."""
    raised: list[AssertionError] = []

    def guarded(target) -> None:
        try:
            target()
        except AssertionError as exc:  # the test reports it
            raised.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert not any(t.is_alive() for t in threads), "a thread never finished"
    return raised


@pytest.mark.parametrize("first_out", ["first in", "second in"])
def test_two_overlapping_calls_leave_torchs_own_functions(first_out: str) -> None:
    own = _torchs_own()
    a_in, b_in, first_left = threading.Event(), threading.Event(), threading.Event()
    seen: list[tuple[str, object]] = []

    def first() -> None:
        with answer_cuda_queries():
            a_in.set()
            assert b_in.wait(WAIT_S)
            if first_out == "second in":
                assert first_left.wait(WAIT_S)
                seen.append(("first, after the other left", torch.cuda.get_device_capability()))
        if first_out == "first in":
            first_left.set()

    def second() -> None:
        assert a_in.wait(WAIT_S)
        with answer_cuda_queries():
            b_in.set()
            if first_out == "first in":
                assert first_left.wait(WAIT_S)
                seen.append(("second, after the other left", torch.cuda.get_device_capability()))
        if first_out == "second in":
            first_left.set()

    assert _in_threads(first, second) == []
    assert [answer for _, answer in seen] == [(8, 0)]  # the one still inside kept the answers
    assert _torchs_own() == own  # torch's own functions, not the answers


def test_many_threads_inside_at_once() -> None:
    own = _torchs_own()
    n = 6
    inside = threading.Barrier(n)
    answers: list[object] = []

    def call() -> None:
        with answer_cuda_queries():
            inside.wait(WAIT_S)  # every thread inside at once
            answers.append(torch.cuda.current_device())
            inside.wait(WAIT_S)

    assert _in_threads(*[call] * n) == []
    assert answers == [0] * n
    assert _torchs_own() == own


def test_a_nested_call_in_one_thread_restores_on_the_way_out() -> None:
    own = _torchs_own()
    with answer_cuda_queries():
        with answer_cuda_queries():
            assert torch.cuda.get_device_capability() == (8, 0)
        assert torch.cuda.get_device_capability() == (8, 0)
    assert _torchs_own() == own
