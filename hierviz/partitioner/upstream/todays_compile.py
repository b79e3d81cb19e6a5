"""What torch_tensorrt.compile runs today with a partition's settings: the one "compile today".

`compile_today(gm, config)` runs Torch-TensorRT's fast partitioner (engine "fast", with
compile's own settings, `hierviz.settings.compile_rules.compile_config`) on `gm` and answers a
`TodaysCompile`; the answers are kept in one process-wide cache keyed by the graph and the
compile settings, so `Partition.compile_today()`, the explorer's line (computed in its worker
process, whose answer is `remember`ed here) and `hv.compare_engines` partition each setting
once. Settings that differ only where compile ignores them (skip_fusion, demote_to, the
support of other backends) share one entry; converters a what-if adds to TensorRT's
(support['tensorrt'] = any_chain(tensorrt(), ops([...]))) are settings compile runs with
(`compile_config` keeps them), so they key an answer of their own.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from torch.fx import GraphModule

from hierviz import trt
from hierviz.settings.compile_rules import compile_config
from hierviz.settings.config import Config
from hierviz.errors import HiervizError
from hierviz.partitioner.partition_result import Partition

MAXSIZE = 128  # (graph, compile settings) answers kept; each holds its graph alive, so ids stay unique
NO_TRT = 'left out: torch_tensorrt is not available here; pip install "hierviz[tensorrt-rtx]" to see it'


@dataclass(frozen=True)
class TodaysCompile:
    """What torch_tensorrt.compile runs with some settings: its fast partition's `stats` and
    `notes` (as a Partition has them), or `stats` None and `why` it is left out; the `seconds`
    computing it took. `partition` is the fast Partition itself where it was computed in this
    process (None where it came from the explorer's worker: only the counts cross)."""

    partition: Partition | None
    why: str
    seconds: float
    stats: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    engine: str = "fast"

    @classmethod
    def of(cls, fast: Partition | None, why: str, seconds: float) -> "TodaysCompile":
        if fast is None:
            return cls(None, why, seconds)
        return cls(fast, why, seconds, dict(fast.stats), tuple(fast.notes), fast.engine)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the Partition (its graph is the receiver's already)."""
        return {**self.__dict__, "partition": None}


_lock = threading.Lock()
_answers: "OrderedDict[tuple[int, Any], tuple[GraphModule, TodaysCompile]]" = OrderedDict()


def today_key(config: Config) -> Any:
    """What an answer is cached under: the settings compile runs with, or (for a setting
    compile refuses) the setting itself."""
    try:
        return compile_config(config)
    except HiervizError:
        return ("refused", config)


def cached_compile_today(gm: GraphModule, config: Config) -> TodaysCompile | None:
    """The answer for `gm` with `config`'s settings when already made (in this process or
    remembered from the explorer's worker), else None; never partitions."""
    key = (id(gm), today_key(config))
    with _lock:
        got = _answers.get(key)
        if got is None or got[0] is not gm:
            return None
        _answers.move_to_end(key)
        return got[1]


def remember(gm: GraphModule, config: Config, today: TodaysCompile) -> TodaysCompile:
    """Keep `today` as the answer for `gm` with `config`'s settings; returns it."""
    with _lock:
        _answers[(id(gm), today_key(config))] = (gm, today)
        while len(_answers) > MAXSIZE:
            _answers.popitem(last=False)
    return today


def compile_today(gm: GraphModule, config: Config, *, need_partition: bool = False) -> TodaysCompile:
    """The partition torch_tensorrt.compile makes of `gm` with `config`'s settings, from the
    cache when made before; `partition` None and `why` when it is left out (no torch_tensorrt
    here, or compile's partitioner refuses the setting). `need_partition`: an answer
    remembered from the explorer's worker (counts only) is made again here, Partition included."""
    got = cached_compile_today(gm, config)
    if got is not None and not (need_partition and got.partition is None and got.stats is not None):
        return got
    if not trt.available():
        return remember(gm, config, TodaysCompile(None, NO_TRT, 0.0))
    from hierviz.partitioner.upstream.compile_partitioners import partition_compiled

    start = time.perf_counter()
    try:
        fast, why = partition_compiled(gm, compile_config(config)), ""
    except HiervizError as exc:
        fast, why = None, str(exc)
    return remember(gm, config, TodaysCompile.of(fast, why, time.perf_counter() - start))


def compile_today_of(p: Partition, *, compute: bool = True) -> TodaysCompile | None:
    """`Partition.compile_today()`: `p` itself when it is the fast partition, nothing for a
    saved partition (no graph to partition), else `compile_today(p.graph, p.config)`, which
    `compute=False` only reads from the cache (None when not made)."""
    if p.engine == "fast":
        return TodaysCompile.of(p, "", 0.0)
    if p.graph is None:
        return TodaysCompile(None, f"left out: a partition saved to {p.saved_from}", 0.0)
    return compile_today(p.graph, p.config) if compute else cached_compile_today(p.graph, p.config)


def clear_cache() -> None:
    with _lock:
        _answers.clear()


__all__ = ["TodaysCompile", "compile_today", "compile_today_of", "cached_compile_today", "remember", "today_key",
           "clear_cache"]
