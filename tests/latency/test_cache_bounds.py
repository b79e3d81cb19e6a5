"""The compile cache's bound (entries and engine bytes, least recently used out), clear()
releasing what it held, and compile_s stated cold / warm / cached."""

from __future__ import annotations

import gc
import weakref

import pytest

import hierviz as hv
from hierviz.latency import CompileCache
from hierviz.latency.compiling.compile_cache import Entry
from hierviz.latency.compiling.backend_compilers import INDUCTOR


class _Engine:
    """Stands in for a TensorRT engine module: a serialized engine, and a reference cycle (as
    engine modules have) so only a garbage collection frees it."""

    def __init__(self, nbytes: int) -> None:
        self.serialized_engine = b"x" * nbytes
        self.me = self

    def __call__(self, *args):
        return args


def _entry(key: str, nbytes: int = 0) -> Entry:
    return Entry(key, "tensorrt", _Engine(nbytes), 0.1, False)


def test_least_recently_used_entries_go_first() -> None:
    cache = CompileCache(max_entries=2)
    cache.put(_entry("a"))
    cache.put(_entry("b"))
    assert cache.get("a", INDUCTOR) is not None  # "a" is now the most recent
    cache.put(_entry("c"))
    assert cache.keys() == ["a", "c"] and cache.evictions == 1
    assert "evicted" in repr(cache)


def test_engine_bytes_are_bounded() -> None:
    cache = CompileCache(max_entries=None, max_bytes=1000)
    cache.put(_entry("a", 600))
    cache.put(_entry("b", 300))
    assert cache.nbytes == 900 and len(cache) == 2
    cache.put(_entry("c", 400))
    assert cache.keys() == ["b", "c"] and cache.nbytes == 700
    cache.put(_entry("huge", 5000))  # one entry over the bound is still kept: it is in use
    assert cache.keys() == ["huge"]


def test_clear_drops_the_engines_it_held() -> None:
    cache = CompileCache()
    entry = _entry("a", 10)
    ref = weakref.ref(entry.fn)
    cache.put(entry)
    del entry
    gc.collect()
    assert ref() is not None  # the cache keeps it alive
    gc.disable()  # clear() must collect the cycle itself
    try:
        cache.clear()
        assert ref() is None and len(cache) == 0 and cache.hits == cache.misses == 0
    finally:
        gc.enable()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_bad_bounds_are_refused(bad) -> None:
    with pytest.raises(hv.ConfigError, match="positive integer"):
        CompileCache(max_entries=bad)


def test_compile_state_says_cold_warm_then_cached(tiny_conv) -> None:
    _, x, gm = tiny_conv
    states = iter(["warm"])
    comp = hv.latency.Compiler(backend="quick", compile=lambda g, inputs, options, persist: g,
                               state=lambda: next(states))  # asked once, before the first compile
    part = hv.partition(gm, priority=("quick",), min_block_size=1,
                        support={"quick": hv.support.ops(["torch.ops.aten.relu.default"])})
    cache = CompileCache()
    quick = dict(compilers={"quick": comp}, cache=cache, warmup=0, iters=1, per_subgraph=False, baseline=False)
    first = hv.measure(part, x, **quick)
    assert first.cache_misses >= 2 and first.compile_state == {"quick": "warm"}
    second = hv.measure(part, x, **quick)
    assert second.compile_state == {"quick": "cached"} and second.compile_s == 0
    assert second.to_dict()["compile_state"] == "quick:cached"
    assert hv.latency.compilers()["inductor"].state() in ("cold", "warm")
