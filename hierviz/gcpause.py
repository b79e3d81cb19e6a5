"""`gc_paused()`: pause Python's cyclic garbage collector around work that allocates a few
objects per graph node (indexing, partitioning, drawing, generating graphs, timing loops, an
Explorer change); `gc_resumed()`: let it run again inside such a stretch for long work whose
garbage must not pile up (a measurement's compiles inside an Explorer change).

On a graph of 10^5 nodes the collector's repeated scans of the live graph cost more than the
pass itself; while timing, a collection in the middle of a run adds noise. The one definition
every module uses.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block; re-enable it after if it was enabled."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def gc_resumed() -> Iterator[None]:
    """Enable the cyclic collector inside the block; pause it again after if it was paused."""
    paused = not gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if paused:
            gc.disable()


__all__ = ["gc_paused", "gc_resumed"]
