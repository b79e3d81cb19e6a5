"""A process-wide LRU cache of partitions keyed by (graph identity, Config): the Config holds
every setting, the engine included, so it is the whole key.

`hv.sweep` and `hv.explore` both go through it, so re-running a sweep, or going back to an
earlier setting in the Explorer, does not partition again. Entries hold the graph alive, so
its id cannot be reused while the entry exists; the size bound keeps memory in check.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from torch.fx import GraphModule

from hierviz.settings.config import Config
from hierviz.settings.setting_values import whole_number
from hierviz.partitioner import Partition, partition_graph

MAXSIZE = 512

_lock = threading.RLock()
_entries: "OrderedDict[tuple[int, Config], Partition]" = OrderedDict()
_counters = {"hits": 0, "misses": 0}


def cached_partition(gm: GraphModule, config: Config) -> Partition:
    """`hv.partition(gm, config)` (its engine is `config.engine`), from the cache when this
    graph and config were seen."""
    return lookup(gm, config)[0]


def lookup(gm: GraphModule, config: Config) -> tuple[Partition, bool]:
    """(`cached_partition(gm, config)`, whether it came from the cache): the answer of this
    call, which global hit counters read before and after cannot give while other threads
    partition too."""
    key = (id(gm), config)
    with _lock:
        part = _entries.get(key)
        if part is not None and part.graph is gm:
            _entries.move_to_end(key)
            _counters["hits"] += 1
            return part, True
    part = partition_graph(gm, config)  # outside the lock: threads partition in parallel
    with _lock:
        _counters["misses"] += 1
        _entries[key] = part
        _entries.move_to_end(key)
        while len(_entries) > MAXSIZE:
            _entries.popitem(last=False)
    return part, False


def cache_info() -> dict[str, Any]:
    """hits, misses, size and maxsize of the partition cache."""
    with _lock:
        return {**_counters, "size": len(_entries), "maxsize": MAXSIZE}


def clear_cache() -> None:
    with _lock:
        _entries.clear()
        _counters["hits"] = _counters["misses"] = 0


class BoundedCache:
    """A small thread-safe LRU mapping with a size bound, for the Explorer's per-setting
    results (diagrams, panel HTML, measurements, diffs): going back to a setting is instant,
    and a long session cannot grow memory without limit."""

    def __init__(self, maxsize: int) -> None:
        if not whole_number(maxsize, 1):
            raise ValueError(f"maxsize must be a positive int, not {maxsize!r}")
        self.maxsize = maxsize
        self._lock = threading.RLock()
        self._items: "OrderedDict[Any, Any]" = OrderedDict()

    def get(self, key: Any, default: Any = None) -> Any:
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: Any, value: Any) -> Any:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
        return value

    def __contains__(self, key: Any) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
