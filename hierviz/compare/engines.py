"""hv.compare_engines: "your compile today" beside the hierarchical partitions.

Most Torch-TensorRT users never call the hierarchical partitioner: `torch_tensorrt.compile`
partitions with its fast (adjacency) partitioner, or the global one. This module puts the
partition each engine makes of the same graph side by side (one DataFrame row per engine),
and gives the explorer, the HTML report and `hv.tune` the fast partition's counts: what
`torch_tensorrt.compile` would run with the same settings.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from hierviz import trt
from hierviz.config import COMPILE_ENGINES, DEFAULT_ENGINE, ENGINE_TABLE, Config, compile_config, derive
from hierviz.errors import ConfigError, HiervizError
from hierviz.compare import columns
from hierviz.compare.partition_cache import BoundedCache, cached_partition
from hierviz.compare.today_counts import TodayCounts, counts_of
from hierviz.compare.today_worker import TodayWorker
from hierviz.partitioner import Partition, graph_of, make_config
from hierviz.partitioner.compiled import compile_today

# (engine, what it is), in the order compare_engines lists them: the engines of hierviz.config's
# ENGINE_TABLE, hierviz's own last, beside those it is compared with.
ENGINE_ROWS = tuple((e.name, e.what) for e in sorted(ENGINE_TABLE, key=lambda e: e.name == DEFAULT_ENGINE))


def compile_partition(gm: Any, config: Config) -> tuple[Partition | None, str]:
    """hierviz.partitioner.compiled.compile_today through the partition cache."""
    return compile_today(gm, config, cached_partition)


class CompileToday:
    """The explorer's "torch_tensorrt.compile today" line for one graph: the fast partition's
    counts (`TodayCounts`) per setting that matters to compile (`compile_config`), in a bounded
    cache. Upstream's partitioner runs in a child process (today_worker.py), so it never holds
    the GIL while the explorer updates (`worker`: the process's shared TodayWorker by default,
    another one, or False); without one, or when it fails (its message in `worker_error`),
    it runs here instead. Where nothing needs partitioning (no torch_tensorrt
    here, the shown engine is "fast" itself, a setting compile refuses) it is answered here."""

    def __init__(self, graph: Any, cache_size: int, *, worker: TodayWorker | None | bool = True) -> None:
        self.graph = graph
        self._made = BoundedCache(cache_size)
        self.worker = TodayWorker.shared() if worker is True else worker or None
        self.worker_error: str | None = None

    def get(self, part: Partition) -> tuple[TodayCounts | None, str] | None:
        """The fast partition's counts for `part`'s settings (or why there are none), if already made."""
        return self._made.get(compile_config(part.config))

    def compute(self, part: Partition, wanted: Callable[[], bool] = lambda: True
                ) -> tuple[TodayCounts | None, str] | None:
        """Make it (once per setting); it takes as long as upstream's partitioner, so the
        widget calls this from a thread, which waits on the worker. None when `wanted()`
        says no by the time the worker is free (the widget shows another setting by then)."""
        got = self.get(part)
        if got is None:
            made = self._make(part.config, wanted)
            got = None if made is None else self._made.put(compile_config(part.config), made)
        return got

    def _make(self, config: Config, wanted: Callable[[], bool] = lambda: True) -> tuple[TodayCounts | None, str] | None:
        # torch_tensorrt asked after without importing it here (5 s): the worker imports it
        if self.worker is not None and config.engine != "fast" and trt.present():
            try:
                compile_config(config)
            except HiervizError:  # compile refuses the setting: said at once, here
                return self._here(config)
            try:
                return self.worker.run(self.graph, config, wanted)
            except Exception as exc:  # noqa: BLE001 - the line is made here instead
                self.worker_error = f"{type(exc).__name__}: {exc}"
                self.worker = None
        return self._here(config)

    def _here(self, config: Config) -> tuple[TodayCounts | None, str]:
        fast, why = compile_partition(self.graph, config)
        return (None if fast is None else counts_of(fast)), why


def compile_baseline(gm: Any, config: Config, example_inputs: Any, device: Any, options: Mapping[str, Any],
                     compilers: Mapping[str, Any] | None = None) -> tuple[float | None, str]:
    """(median ms of the fast partition torch_tensorrt.compile would run with `config`'s
    settings, '') for hv.tune's `compile_ms` baseline; (None, why it was left out) where
    TensorRT cannot be timed here or the measurement failed."""
    from hierviz.compare.rows import run_measure
    from hierviz.compare.tune_space import why_unmeasurable

    why = why_unmeasurable("tensorrt", device, compilers)
    if why is not None:
        return None, f"compile_ms (what torch_tensorrt.compile runs) left out: {why}"
    fast, why = compile_partition(gm, config)
    if fast is None:
        return None, f"compile_ms (what torch_tensorrt.compile runs) left out: {why}"
    try:
        m = run_measure(fast, example_inputs, {**dict(options), "device": device})
    except HiervizError as exc:
        return None, f"compile_ms (what torch_tensorrt.compile runs) could not be measured: {exc}"
    return m.median_ms, ""


def compare_engines(model_or_graph: Any, example_inputs: Any = None, config: Config | dict | None = None, *,
                    measure: bool | Mapping[str, Any] = False, **overrides: Any) -> "Any":
    """One row per engine — fast (what torch_tensorrt.compile runs today), global, upstream's
    hierarchical partitioner, hierviz — partitioning the same captured graph: subgraphs per
    backend, accelerated ops, boundary tensors, and latency when `measure` (True, or a dict of
    hv.measure options; TensorRT needs a GPU). fast and global run with `compile_config`
    (TensorRT only); the hierarchical ones with `config` as given. A row that cannot be made
    here has its reason in `error`; `note` says what the engine did besides partitioning
    (compile's fallback to the global partitioner, its early return)."""
    from hierviz.compare.rows import measure_kwargs, run_measure

    cfg = make_config(config, overrides)
    mkw = measure_kwargs(measure)
    gm = graph_of(model_or_graph, example_inputs)
    if mkw is not None and example_inputs is None:
        raise ConfigError("compare_engines(measure=True) needs the example inputs to time each partition.")
    rows = []
    for engine, what in ENGINE_ROWS:
        used = compile_config(cfg, engine) if engine in COMPILE_ENGINES else derive(cfg, {"engine": engine})
        row: dict[str, Any] = {**columns.config_columns(used), "what": what}
        try:
            part = cached_partition(gm, used)
            row.update(columns.stat_columns(part))
            row["accelerated_ops"] = part.stats["accelerated_ops"]
            row["note"] = "; ".join(getattr(part, "notes", ())) or None
            row["error"] = None
        except HiervizError as exc:
            row["error"] = str(exc)
            part = None
        if mkw is not None and part is not None:
            try:
                row.update(columns.latency_columns(run_measure(part, example_inputs, mkw)))
            except HiervizError as exc:
                row["error"] = str(exc)
        rows.append(row)
    df = columns.frame(rows, latency=mkw is not None, extra_head=("engine", "what"),
                       extra_tail=("accelerated_ops", "note"))
    cols = list(df.columns)
    if "accelerated_ops" in cols:  # beside the subgraph counts
        cols.remove("accelerated_ops")
        cols.insert(cols.index("coverage"), "accelerated_ops")
    return df[cols]


__all__ = ["CompileToday", "compare_engines", "compile_baseline", "compile_config", "compile_partition", "ENGINE_ROWS"]
