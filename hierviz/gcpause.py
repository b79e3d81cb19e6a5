"""`gc_paused()`: pause Python's cyclic garbage collector around work that allocates a few
objects per graph node (indexing, partitioning, drawing, generating graphs, timing loops).

On a graph of 10^5 nodes the collector's repeated scans of the live graph cost more than the
pass itself; while timing, a collection in the middle of a run adds noise. The one definition
every module uses.

The collector is one flag for the whole process, and pauses overlap across threads (a sweep's
rows, the explorer's worker jobs), so pauses are counted under a lock: the first one to begin
disables the collector (if it was enabled), the last one to end enables it again. However the
blocks of several threads interleave, the collector ends as it was before the first began.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

_lock = threading.Lock()
_paused = 0  # gc_paused() blocks open now, in every thread
_was_enabled = False  # the collector's state when the first of them began


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block; the last overlapping block to end
    enables it again if it was enabled when the first began."""
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()


def pauses() -> int:
    """How many gc_paused() blocks are open now (all threads)."""
    return _paused


__all__ = ["gc_paused", "pauses"]
