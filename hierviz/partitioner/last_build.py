"""The last `build()` of each partition: what its report and blockers show when no `builds=` is given.

A partition never changes after it is returned, so what its last `build()` found is not kept on it: it is
kept here, keyed by the partition's identity (held weakly, so it goes when the partition goes), the one place
that says whose build it is. `Partition.build()` / `MultiGraphPartition.build()` record it; `report()` and
`Partition.blockers()` read it only when called without `builds=`. Builds made another way
(`hierviz.building.build_partition.build`, as the explorer's worker runs them) are recorded nowhere: their
caller passes them as `builds=` where it wants them shown.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, TypeVar

T = TypeVar("T")

_LAST: weakref.WeakKeyDictionary[object, Any] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def remember(part: object, builds: T) -> T:
    """Record `builds` (hv.Builds) as `part`'s last build() and return it."""
    with _LOCK:
        _LAST[part] = builds
    return builds


def last_build(part: object) -> Any:
    """`part`'s last build() (hv.Builds), or None when it was never built through its own build()."""
    with _LOCK:
        return _LAST.get(part)


__all__ = ["remember", "last_build"]
