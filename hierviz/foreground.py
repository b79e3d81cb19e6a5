"""The "UI first" gate: while the Explorer applies a setting change (`with foreground():`),
background measuring work in this process (hv.tune's trials, each subgraph's compile, timing
batches) pauses at its safe points (`wait_for_foreground()`) and goes on when the change is
shown; a timing batch that overlapped a change is timed again (`undisturbed`), since the
change polluted it. A compile already running cannot pause: when a change begins, the compiler
processes it started get the lowest CPU priority (cpu_priority.py), and Python's cyclic garbage
collector is paused until the change is shown (a full collection, which a background compile's
allocations trigger, stops every thread for up to half a second on a model's worth of objects).

Nothing waits when no change is being applied (one Event check); a wait is bounded
(MAX_WAIT_S), so background work never hangs; the gate opens in a `finally`, so a change that
raises still releases it. A thread holding the foreground never waits for itself. `ENABLED =
False` turns the gate off (benchmarks compare both)."""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator, TypeVar

from hierviz.cpu_priority import lower_compilers
from hierviz.gcpause import gc_paused

T = TypeVar("T")

MAX_WAIT_S = 5.0  # the longest one safe point waits for a change to be shown
REDO = 3  # a timing batch overlapped by changes is timed again at most this many times
ENABLED = True  # False: foreground() holds nothing (the "before" of benchmarks/explore_latency.py)
PAUSE_COLLECTOR = True  # False: the garbage collector runs during a change (the "before" of its --tuning part)

_lock = threading.Lock()
_idle = threading.Event()
_idle.set()
_holders: dict[int, int] = {}  # thread id -> nesting depth of foreground() in that thread
_entered = 0  # foreground() entries so far: a batch whose count changed overlapped a change
_collector: contextlib.AbstractContextManager[None] | None = None  # the collector's pause while a change applies


@contextlib.contextmanager
def foreground() -> Iterator[None]:
    """Hold the gate inside the block: background work waits at its next safe point."""
    global _entered, _collector
    if not ENABLED:
        yield
        return
    me = threading.get_ident()
    with _lock:
        first = not _holders
        _holders[me] = _holders.get(me, 0) + 1
        _entered += 1
        _idle.clear()
        if first and PAUSE_COLLECTOR:  # no collection starts in any thread until the change is shown
            _collector = gc_paused()
            _collector.__enter__()
    if first:
        lower_compilers()  # a background compile already running yields the cores to the change
    try:
        yield
    finally:
        with _lock:
            if _holders[me] == 1:
                del _holders[me]
            else:
                _holders[me] -= 1
            if not _holders:
                if _collector is not None:
                    _collector.__exit__(None, None, None)
                    _collector = None
                _idle.set()


def busy() -> bool:
    """A change is being applied (by any thread)."""
    return not _idle.is_set()


def _mine() -> bool:
    return threading.get_ident() in _holders


def yielding() -> bool:
    """Another thread is applying a change: background work should stop at this safe point."""
    return not _idle.is_set() and not _mine()


def wait_for_foreground(timeout: float = MAX_WAIT_S) -> bool:
    """A safe point: return at once when no change is being applied (or this thread is the one
    applying it), else wait until it is shown, at most `timeout` s. True if it waited."""
    if _idle.is_set() or _mine():
        return False
    _idle.wait(timeout)
    return True


def mark() -> int:
    """A mark to pass to `overlapped` after a timed piece of work."""
    return _entered


def overlapped(since: int) -> bool:
    """Another thread applied (or is applying) a change since `mark()` returned `since`."""
    return _entered != since or yielding()


def undisturbed(take: Callable[[], T], redo: int = REDO) -> T:
    """`take()` (one timing batch) after a safe point; taken again, at most `redo` more times,
    when a change was applied while it ran. Without changes: exactly one `take()`."""
    for _ in range(redo):
        wait_for_foreground()
        since = mark()
        got = take()
        if not overlapped(since):
            return got
    wait_for_foreground()
    return take()


__all__ = ["foreground", "wait_for_foreground", "undisturbed", "busy", "yielding", "mark", "overlapped", "MAX_WAIT_S", "REDO",
           "ENABLED", "PAUSE_COLLECTOR"]
