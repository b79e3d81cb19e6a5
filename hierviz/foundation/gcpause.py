"""`gc_paused()`: pause Python's cyclic garbage collector around work that allocates a few
objects per graph node (indexing, partitioning, drawing, generating graphs, timing loops).

On a graph of 10^5 nodes the collector's repeated scans of the live graph cost more than the
pass itself; while timing, a collection in the middle of a run adds noise. The one definition
every module uses.

A pause never touches the user's switch (`gc.enable()` / `gc.disable()`): it sets the
generation-0 threshold to 0, which stops automatic collections, and puts the user's thresholds
back when the last overlapping pause ends. So a `gc.disable()` (or `gc.enable()`) the user calls
during a pause, in any thread, is still in force after it, and a `gc.set_threshold()` called
meanwhile is kept (the pause then leaves the thresholds alone). Pauses overlap across threads (a
sweep's rows, the explorer's background work), so they are counted under a lock: however the
blocks of several threads interleave, automatic collection comes back when the last one ends.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

_lock = threading.Lock()
_paused = 0  # gc_paused() blocks open now, in every thread
_saved: tuple[int, ...] = ()  # the thresholds when the first of them began
_set: tuple[int, ...] = ()  # the thresholds the pause set


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic collection inside the block; the last overlapping block to end restores
    the thresholds (unless they were changed meanwhile). `gc.isenabled()` is never changed."""
    global _paused, _saved, _set
    with _lock:
        if _paused == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(0, *_saved[1:])
            _set = gc.get_threshold()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and gc.get_threshold() == _set:  # else the user set thresholds meanwhile: theirs stay
                gc.set_threshold(*_saved)


def pauses() -> int:
    """How many gc_paused() blocks are open now (all threads)."""
    return _paused


def collecting() -> bool:
    """Whether the collector runs automatically now: enabled, with a generation-0 threshold."""
    return gc.isenabled() and gc.get_threshold()[0] > 0


__all__ = ["gc_paused", "pauses", "collecting"]
