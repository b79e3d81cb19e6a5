"""The default blockers table of each partition once made: kept beside the partition, never in it.

`Partition.blockers()` with its defaults is a function of the partition alone (the same table
whoever makes it: this process, or the explorer's worker), and making it re-partitions once per
cause. Torch-TensorRT's partitioners take seconds for that, so a report of such a partition shows
the table only once made (`blockers(compute=False)`). The table is kept here, keyed weakly by the
partition: it goes when the partition goes, a copy of a partition is another key, and the
partition itself is never changed.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition
    from hierviz.partitioner.partition_result import Partition

_lock = threading.Lock()
_tables: "weakref.WeakKeyDictionary[Partition | MultiGraphPartition, pd.DataFrame]" = weakref.WeakKeyDictionary()


def known_table(p: Partition | MultiGraphPartition) -> pd.DataFrame | None:
    """`p`'s default blockers table when made before (not a copy: callers copy it), else None."""
    with _lock:
        return _tables.get(p)


def keep_table(p: Partition | MultiGraphPartition, table: pd.DataFrame) -> pd.DataFrame:
    """Keep `table` as `p`'s default blockers table unless one is kept already; returns the kept one."""
    with _lock:
        kept = _tables.get(p)
        if kept is None:
            kept = _tables[p] = table.copy()
        return kept


__all__ = ["known_table", "keep_table"]
