"""The "UI first" gate (hierviz/foreground.py): background work pauses at its safe points
while a change is being applied and goes on after; the gate always opens again."""

from __future__ import annotations

import threading

import pytest

from hierviz import foreground as fg


def test_a_background_loop_pauses_while_the_foreground_is_held_and_resumes_after():
    steps: list[int] = []
    at_safe_point, held, stop = threading.Event(), threading.Event(), threading.Event()

    def background() -> None:
        while not stop.is_set():
            if held.is_set():
                at_safe_point.set()  # the next safe point is reached while the change applies
            waited = fg.wait_for_foreground(timeout=60)
            steps.append(waited)

    with fg.foreground():
        held.set()
        thread = threading.Thread(target=background, daemon=True)
        thread.start()
        assert at_safe_point.wait(60)
        assert fg.busy() and steps == []  # it waits at the safe point: no step taken
    stop.set()
    thread.join(60)
    assert not thread.is_alive() and steps and steps[0] is True  # resumed once the gate opened
    assert not fg.busy()


def test_the_foreground_thread_never_waits_for_itself_and_nesting_keeps_the_gate_held():
    with fg.foreground():
        with fg.foreground():
            assert fg.wait_for_foreground(timeout=60) is False
        assert fg.busy()
    assert not fg.busy() and fg.wait_for_foreground() is False


def test_an_exception_inside_the_foreground_still_opens_the_gate():
    with pytest.raises(RuntimeError, match="boom"):
        with fg.foreground():
            raise RuntimeError("boom")
    assert not fg.busy()
    got: list[bool] = []
    t = threading.Thread(target=lambda: got.append(fg.wait_for_foreground(timeout=60)))
    t.start()
    t.join(60)
    assert got == [False]


def test_a_wait_is_bounded_when_the_foreground_never_ends():
    release = threading.Event()
    entered = threading.Event()

    def hold() -> None:
        with fg.foreground():
            entered.set()
            release.wait(60)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert entered.wait(60)
    try:
        assert fg.wait_for_foreground(timeout=0.01) is True  # returns although the gate stays held
    finally:
        release.set()
        holder.join(60)
    assert not fg.busy()


def test_undisturbed_takes_once_without_changes_and_again_after_one_overlapped():
    takes: list[int] = []
    assert fg.undisturbed(lambda: takes.append(1) or len(takes)) == 1 and takes == [1]

    takes.clear()
    change = threading.Event()
    applied = threading.Event()

    def apply_change() -> None:  # a change applied (entered and left) by another thread
        change.wait(60)
        with fg.foreground():
            pass
        applied.set()

    t = threading.Thread(target=apply_change, daemon=True)
    t.start()

    def take() -> int:
        takes.append(1)
        if len(takes) == 1:  # the first batch overlaps the change
            change.set()
            assert applied.wait(60)
        return len(takes)

    assert fg.undisturbed(take) == 2 and takes == [1, 1]
    t.join(60)


def test_undisturbed_gives_up_redoing_after_redo_tries():
    def take() -> str:
        with fg.foreground():  # a change on every batch (here the same thread, from outside it)
            pass
        return "kept"

    calls: list[int] = []
    assert fg.undisturbed(lambda: calls.append(1) or take(), redo=2) == "kept" and len(calls) == 3


def test_when_disabled_the_foreground_holds_nothing(monkeypatch):
    monkeypatch.setattr(fg, "ENABLED", False)
    with fg.foreground():
        assert not fg.busy()


def test_the_collector_is_paused_while_a_change_applies_and_restored_after():
    import gc

    assert gc.isenabled()
    with fg.foreground():
        assert not gc.isenabled()  # no collection starts in any thread meanwhile
        with fg.foreground():
            pass
        assert not gc.isenabled()  # still held by the outer change
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with fg.foreground():
            raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()  # paused by someone else before the change: left paused after it
    try:
        with fg.foreground():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
