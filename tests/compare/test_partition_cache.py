"""The partition cache answers, per call, whether the partition came from it: the Explorer's
history says "cached" from that answer, never from global hit counters that another thread
(a background "find fastest") moves at the same time."""

from __future__ import annotations

import threading

import hierviz as hv
from hierviz.compare.partition_cache import cache_info, cached_partition, clear_cache, lookup


def test_lookup_says_whether_it_hit_while_another_thread_hits(small) -> None:
    _, _, gm = small
    clear_cache()
    busy = hv.Config(min_block_size=1)
    cached_partition(gm, busy)
    stop = threading.Event()

    def hit_all_the_time() -> None:
        while not stop.is_set():
            cached_partition(gm, busy)

    other = threading.Thread(target=hit_all_the_time)
    other.start()
    try:
        firsts = [lookup(gm, hv.Config(min_block_size=size)) for size in range(2, 8)]
        seconds = [lookup(gm, hv.Config(min_block_size=size)) for size in range(2, 8)]
    finally:
        stop.set()
        other.join()
    assert [hit for _, hit in firsts] == [False] * 6 and [hit for _, hit in seconds] == [True] * 6
    assert [p for p, _ in seconds] == [p for p, _ in firsts]  # the same objects, from the cache
    assert [p.config.min_block_size for p, _ in firsts] == list(range(2, 8))
    assert cache_info()["hits"] > 6  # the other thread's hits count too, and changed no answer


def test_the_explorer_history_says_cached_from_its_own_lookup(small) -> None:
    model, inputs, _ = small
    clear_cache()
    ex = hv.explore(model, inputs, debounce=0)
    ex.controls["min_block_size"].value = 2
    ex.controls["min_block_size"].value = hv.Config().min_block_size  # back: from the cache
    assert list(ex.history["cached"]) == [False, False, True]
