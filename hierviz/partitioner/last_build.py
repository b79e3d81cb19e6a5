"""The last `build()` of each partition: what its report and blockers show when no `builds=` is given.

A partition never changes after it is returned: what its last `build()` found is not part of what it
answers for itself. It is kept in a private slot of the partition, read and written only here, the one
place that says whose build it is, with the partition's identity (a copy of the partition was not built).
Not in a WeakKeyDictionary keyed by the partition: the builds refer back to their partition
(`Builds.partition`), so such an entry would never let the partition go, nor the model it keeps.
`Partition.build()` / `MultiGraphPartition.build()` record it; `report()` and `Partition.blockers()` read
it only when called without `builds=`. Builds made another way (`hierviz.building.build_partition.build`,
as the explorer's worker runs them) are recorded nowhere: their caller passes them as `builds=` where it
wants them shown.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

T = TypeVar("T")

_SLOT = "_hierviz_last_build"  # on the partition: (id of the partition that was built, its builds)
_LOCK = threading.Lock()


def remember(part: object, builds: T) -> T:
    """Record `builds` (hv.Builds) as `part`'s last build() and return it."""
    with _LOCK:
        setattr(part, _SLOT, (id(part), builds))
    return builds


def last_build(part: object) -> Any:
    """`part`'s last build() (hv.Builds), or None when it was never built through its own build()."""
    with _LOCK:
        built, builds = getattr(part, _SLOT, (None, None))
    return builds if built == id(part) else None


__all__ = ["remember", "last_build"]
