"""hv.sweep: partition (and optionally measure) every configuration of a grid, as a DataFrame."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import warnings
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, cast

import pandas as pd

from hierviz.settings.config import Config
from hierviz.errors import ConfigError, HiervizError, checked_arguments, user_stacklevel
from hierviz.compare import columns
from hierviz.compare.partition_cache import cache_info
from hierviz.compare.grid import check_grid, expand_grid  # noqa: F401 - also from here
from hierviz.compare.ray_executor import check_executor as check_ray
from hierviz.compare.ray_executor import is_ray
from hierviz.compare.rows import (measure_kwargs, measure_options, partition_of, partition_row, process_row,
                                  run_measure, sweep_on_ray)
from hierviz.compare.sweep_file import KEYS, SweepFile, captures_key, model_key, settings_key
from hierviz.capturing.aten_capture import capture
from hierviz.capturing.by_graph.dynamo_capture import DynamoCapture
from hierviz.capturing.graph_codec import pack_graph
from hierviz.capturing.target_device import DEFAULT_TARGET, check_target_device
from hierviz.partitioner import MultiGraphPartition, graph_of, make_config, runs_by_graph

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.latency.measure_options import MeasureOptions
    from hierviz.partitioner import Partition

logger = logging.getLogger(__name__)
# the longest a Ctrl-C waits to be seen while the sweep waits for a row (see _row_of)
CTRL_C_POLL_S = 0.2


@checked_arguments
def sweep(model: Any, example_inputs: Any, grid: Mapping[str, Any], *, base: Config | dict | None = None,
          measure: bool | Mapping[str, Any] = False, executor: Executor | str | None = None,
          progress: bool = True, out: str | Path | None = None, ir: str = "dynamo",
          target_device: str = DEFAULT_TARGET, build: bool = False) -> pd.DataFrame:
    """Partition `model` with every configuration in `grid` (the cartesian product of its
    values, applied on top of `base`); one row per configuration, in grid order.

    `grid` may also vary `engine` (a setting like the others: "hierviz", "fast", "global",
    "torch_tensorrt"); then, or when `base` names another engine than hierviz, the first
    column is the engine. Each row runs its engine once.
    Columns: the Config fields, then stats (subgraphs, acc_subgraphs, subgraphs_<backend>,
    coverage, accelerated_coverage, boundary_tensors, nothing_accelerated: no subgraph is
    accelerated, or, measured, every one fell back), then latency columns when `measure` (True,
    or a dict of `hv.measure` options; `verdict` leads with "nothing accelerated" for such a
    row), then `error`; the min_block_size to try is `Partition.recommend()`'s, asked for on
    the partition that interests you (it re-partitions once per size). A
    configuration that fails when partitioned or measured gives a row with its message instead
    of stopping the sweep. The grid itself is checked first: a value the settings parser
    refuses (`min_block_size="x"`, an unknown backend or op) stops the sweep before anything
    runs, with one ConfigError listing every bad value.

    Partitions are cached per (graph, Config; the engine is a setting), so running a sweep again does not re-partition;
    `hv.measure` reuses compiled subgraphs. `executor` (a `concurrent.futures.Executor`: a
    ThreadPoolExecutor, or a ProcessPoolExecutor, to which the graph is sent once per row as
    plain data, hierviz.capturing.graph_codec) runs the partitioning of configurations in parallel;
    measuring always runs here, one configuration at a time, so timings do not disturb
    each other. `executor="ray"` (or a Ray address, or the initialised `ray` module) runs
    each row, measuring included, as a Ray task (see hierviz/compare/ray_executor.py).
    `out="sweep.csv"` (or `.parquet`) writes each row to that file as it finishes (with
    `model_key` and `settings_key` columns); run the same sweep again and the rows already
    there for the same model and settings are skipped (`df.attrs["skipped"]`, and a note).
    Ctrl-C (KeyboardInterrupt) stops the sweep and returns the rows finished so far, with a
    note. `df.attrs` holds the run time, cache counters and `notes`.

    `ir="torch_compile"` (or `model` a DynamoCapture or MultiGraphPartition, captured once,
    never again): what torch.compile(model, backend="torch_tensorrt") runs, graph by graph
    (hv.partition(..., ir="torch_compile") per row, each graph from the partition cache); the
    stats columns are summed over the graphs, then `graphs`, `graph_breaks` and
    `graphs_left_whole`. Threads and `out=` work as above; Ray and processes do not take a
    graph-by-graph capture (a ConfigError).

    `target_device`: the device the model is lowered for when it is captured, as in hv.partition
    ("cuda", the default: as Torch-TensorRT lowers it on a CUDA GPU, on any machine; "cpu"); a
    graph or capture given is kept as it was lowered.

    `build=True`: every row's TensorRT engines are converted and built here (`part.build()`,
    no GPU needed with TensorRT-RTX; built engines are cached on disk), adding `engines_built`
    (how many built), `engines` (how many there are), `engine_mb` (their size together) and
    `build_failed` (the first failure: subgraph, stage and error; "" when all built).
    """
    if not isinstance(build, bool):
        raise ConfigError(f"hv.sweep(build=...) is True (build every row's TensorRT engines here) or False, not "
                          f"{build!r:.40}.")
    by_graph = runs_by_graph(model, ir)
    check_target_device(target_device)
    if by_graph and executor is not None and is_ray(executor):
        raise ConfigError("hv.sweep(ir='torch_compile') runs in this process (threads: pass a ThreadPoolExecutor, "
                          "or none); Ray tasks take one captured graph, not a model's graphs.")
    check_executor(executor)
    options = measure_options(measure)  # checked once, before anything runs; every row is measured with it
    start = time.perf_counter()
    before = cache_info()
    base_cfg = make_config(base)
    _, configs = check_grid(grid, base_cfg)  # every bad value, in one ConfigError, before anything runs
    gm = graphs_of(model, example_inputs, target_device) if by_graph else \
        graph_of(model, example_inputs, target_device=target_device)
    store = SweepFile(out, captures_key(gm) if by_graph else model_key(gm)) if out is not None else None
    keys = [settings_key(cfg, measure_kwargs(measure)) for cfg in configs] if store is not None else []
    todo = [i for i in range(len(configs)) if store is None or keys[i] not in store.done]
    notes: list[str] = []
    if store is not None and len(todo) < len(configs):
        notes.append(f"{len(configs) - len(todo)} of {len(configs)} row(s) already in {store.path} for this model "
                     "and settings: skipped")

    from tqdm.auto import tqdm

    bar = tqdm(total=len(todo), desc="hv.sweep", unit="config", disable=not progress, leave=False)
    on_ray = executor is not None and is_ray(executor)
    stopped = {"interrupted": False}  # Ctrl-C: the rows finished before it are kept
    kept = (lambda j, row: store.add(row, keys[todo[j]])) if store is not None else None
    try:
        try:
            if on_ray:
                assert not isinstance(gm, DynamoCapture), "graph by graph never runs on Ray (refused above)"
                results = sweep_on_ray(executor, gm, example_inputs, [configs[i] for i in todo], options, bar,
                                       stopped)
            else:
                assert not isinstance(executor, str), "an executor text is a Ray address (check_executor)"
                results = partition_rows(executor, gm, [configs[i] for i in todo], bar, stopped)
                if options is not None and isinstance(executor, ProcessPoolExecutor):
                    # partitioned in other processes; measured here, one at a time, on this process's copy
                    results = [(partition_of(gm, configs[i]) if part is None and not row.get("error") else part,
                                row) for i, (part, row) in zip(todo, results)]
            if build:
                results = [(built_row(gm, cfg, part, row)) for cfg, (part, row) in zip((configs[i] for i in todo),
                                                                                       results)]
            rows, measure_stats = measure_rows(results, example_inputs, options, bar, on_ray, kept, stopped)
        except KeyboardInterrupt:
            stopped["interrupted"], rows, measure_stats = True, [], {"hits": 0, "misses": 0}
    finally:
        bar.close()
    if stopped["interrupted"]:
        notes.append(f"interrupted (Ctrl-C): {len(rows)} of {len(todo)} row(s) finished"
                     + ("; run again with the same out= to finish the rest" if store is not None else ""))
    if store is not None:  # the whole grid in grid order: rows from the file and rows run now
        new = dict(zip((keys[i] for i in todo), rows))
        rows = [new[k] if k in new else store.done[k] for k in keys if k in new or k in store.done]
        rows = [{c: v for c, v in r.items() if c not in KEYS} for r in rows]

    df = columns.frame(rows, latency=options is not None, extra_head=columns.head_columns(grid, base_cfg),
                       extra_tail=BUILD_COLUMNS if build else ())
    df.attrs["notes"] = notes
    df.attrs["skipped"] = len(configs) - len(todo)
    for note in notes:
        warnings.warn(f"hv.sweep: {note}.", UserWarning, stacklevel=user_stacklevel())
    after = cache_info()
    df.attrs["seconds"] = round(time.perf_counter() - start, 4)
    df.attrs["partition_cache_hits"] = after["hits"] - before["hits"]
    df.attrs["partition_cache_misses"] = after["misses"] - before["misses"]
    if options is not None:
        df.attrs["compile_cache_hits"] = measure_stats["hits"]
        df.attrs["compile_cache_misses"] = measure_stats["misses"]
    return df


BUILD_COLUMNS = ("engines_built", "engines", "engine_mb", "build_failed")


def built_row(gm: Any, cfg: Config, part: "Partition | None", row: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(part, row) with the build columns: its TensorRT engines built here (part.build())."""
    if row.get("error"):
        return part, row
    if part is None:  # partitioned elsewhere (processes, Ray): again here, from the partition cache
        part = partition_of(gm, cfg)
    try:
        builds = part.build(fix=False)
    except KeyboardInterrupt:  # hv.BuildError's interrupt too: the user stops the sweep, not this row
        raise
    except HiervizError as exc:
        return part, {**row, "build_failed": str(exc).splitlines()[0]}
    first = builds.failed[0] if builds.failed else None
    failed = "" if first is None else f"{first.name} at {first.stage}: {first.error}"
    return part, {**row, "engines_built": builds.built, "engines": len(builds.rows),
                  "engine_mb": round(builds.engine_bytes / 1e6, 3), "build_failed": failed}


def graphs_of(model: Any, example_inputs: Any, target_device: str = DEFAULT_TARGET) -> DynamoCapture:
    """The graph-by-graph capture a sweep partitions: a MultiGraphPartition's, a DynamoCapture
    as given, or the model captured with ir="torch_compile" for `target_device`."""
    if isinstance(model, MultiGraphPartition):
        return model.capture
    if isinstance(model, DynamoCapture):
        return model
    return cast(DynamoCapture, capture(model, example_inputs, ir="torch_compile",  # what ir="torch_compile" gives
                                       target_device=target_device))


def check_executor(executor: Any) -> None:
    """ConfigError unless `executor` is None, a concurrent.futures Executor (threads, or a
    ProcessPoolExecutor: the graph is sent as plain data), or Ray (as text: an address the Ray
    check understands)."""
    if executor is not None and not isinstance(executor, Executor) and not is_ray(executor):
        raise ConfigError(f"executor must be a concurrent.futures.Executor (e.g. ThreadPoolExecutor()), 'ray' "
                          f"or a Ray address, not {type(executor).__name__}.")
    if executor is not None and is_ray(executor):
        check_ray(executor)


@contextlib.contextmanager
def _until_ctrl_c(stopped: dict[str, bool] | None) -> Iterator[None]:
    """Ctrl-C (KeyboardInterrupt) inside the block ends it and sets `stopped["interrupted"]`,
    so the rows finished so far are kept; without `stopped` it goes on up."""
    try:
        yield
    except KeyboardInterrupt:
        if stopped is None:
            raise
        stopped["interrupted"] = True


def partition_rows(executor: Executor | None, gm: Any, configs: list[Config], bar: Any,
                   stopped: dict[str, bool] | None = None) -> list[tuple[Any, dict[str, Any]]]:
    """(Partition or None, row) per configuration, in grid order: here, or on `executor`'s threads."""
    results: list[tuple[Any, dict[str, Any]]] = []
    if executor is None:
        with _until_ctrl_c(stopped):
            for cfg in configs:
                results.append(partition_row(gm, cfg))
                bar.update(1)
        return results
    if isinstance(executor, ProcessPoolExecutor):  # the graph travels as plain data, as to Ray
        if isinstance(gm, DynamoCapture):
            raise ConfigError("hv.sweep sends an aten graph to a ProcessPoolExecutor's workers as plain data; "
                              "a graph-by-graph capture (ir='torch_compile') is not one: pass a ThreadPoolExecutor.")
        packed = pack_graph(gm)
        futures: list[Future] = [executor.submit(process_row, packed, cfg) for cfg in configs]
    else:
        futures = [executor.submit(partition_row, gm, cfg) for cfg in configs]
    for fut in futures:
        fut.add_done_callback(lambda _f: bar.update(1))
    with _until_ctrl_c(stopped):
        for cfg, fut in zip(configs, futures):  # grid order, whatever order they finish in
            results.append(_row_of(fut, cfg))
    if len(results) < len(futures):  # Ctrl-C: the rows finished so far in grid order are kept, the rest cancelled
        for fut in futures[len(results):]:
            fut.cancel()
        for cfg, fut in zip(configs[len(results):], futures[len(results):]):
            if not fut.done() or fut.cancelled():
                break
            results.append(_row_of(fut, cfg))
    return results


def _row_of(fut: Future, cfg: Config) -> tuple[Any, dict[str, Any]]:
    """A future's (partition or None, row), once it is finished; an exception that is not a
    HiervizError (a setting that cannot be sent to another process, a worker that died) is the
    row's error. It waits in short waits: Python raises Ctrl-C's KeyboardInterrupt only when the
    main thread runs, and a SIGINT that reached another thread, or reached this one just before
    its wait began, wakes no wait without an end (the sweep then ran to its last row)."""
    finished = threading.Event()
    fut.add_done_callback(lambda _f: finished.set())  # (an executor's own future type has it too)
    while not finished.wait(CTRL_C_POLL_S):
        pass
    try:
        return fut.result()
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        # a row's boundary: whatever its worker raised (the user's predicates and models run there, a
        # pool breaks, Ray wraps) is said in its row, and logged, and the other rows go on
        logger.error("hv.sweep: the row %s failed", cfg.label(), exc_info=True)
        row = columns.config_columns(cfg)
        row["error"] = f"{type(exc).__name__}: {exc}"
        return None, row


def measure_rows(results: list[tuple[Any, dict[str, Any]]], example_inputs: Any, options: MeasureOptions | None,
                 bar: Any, on_ray: bool, kept: Callable[[int, dict[str, Any]], None] | None = None,
                 stopped: dict[str, bool] | None = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The rows, each measured with the same `options`, one at a time (on Ray they were measured on the workers),
    and the compile-cache counts of those measurements; `kept(i, row)` is called as each row
    finishes; Ctrl-C (with `stopped`) ends the loop with the rows finished so far."""
    rows: list[dict[str, Any]] = []
    measure_stats = {"hits": 0, "misses": 0}
    if options is not None and not on_ray:
        bar.reset(total=len(results))
        bar.set_description("hv.sweep: measuring")
    with _until_ctrl_c(stopped):
        for part, row in results:
            if options is not None and part is not None:
                try:
                    m = run_measure(part, example_inputs, options)
                    row.update(columns.latency_columns(m))
                    measure_stats["hits"] += getattr(m, "cache_hits", 0) or 0
                    measure_stats["misses"] += getattr(m, "cache_misses", 0) or 0
                except HiervizError as exc:
                    row["error"] = str(exc)
                bar.update(1)
            if kept is not None:
                kept(len(rows), row)
            rows.append(row)
    if on_ray and options is not None:  # measured on the workers
        for row in rows:
            measure_stats["hits"] += int(row.get("cache_hits") or 0)
            measure_stats["misses"] += int(row.get("cache_misses") or 0)
    return rows, measure_stats
