"""hv.compare_engines: "your compile today" beside the hierarchical partitions.

Most Torch-TensorRT users never call the hierarchical partitioner: `torch_tensorrt.compile`
partitions with its fast (adjacency) partitioner, or the global one. This module puts the
partition each engine makes of the same graph side by side (one DataFrame row per engine),
and gives the explorer, the HTML report and `hv.tune` the fast partition's counts: what
`torch_tensorrt.compile` would run with the same settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from hierviz.settings.compile_rules import compile_config
from hierviz.settings.config import Config, derive
from hierviz.settings.engine_table import COMPILE_ENGINES, DEFAULT_ENGINE, ENGINE_TABLE
from hierviz.errors import ConfigError, HiervizError
from hierviz.compare import columns
from hierviz.compare.partition_cache import cached_partition
from hierviz.capturing.by_graph.dynamo_capture import DynamoCapture
from hierviz.capturing.target_device import DEFAULT_TARGET, check_target_device
from hierviz.partitioner import graph_of, make_config, runs_by_graph
from hierviz.partitioner.upstream.todays_compile import compile_today

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.latency.measure_options import MeasureOptions

# (engine, what it is), in the order compare_engines lists them: the engines of hierviz.settings.config's
# ENGINE_TABLE, hierviz's own last, beside those it is compared with.
ENGINE_ROWS = tuple((e.name, e.what) for e in sorted(ENGINE_TABLE, key=lambda e: e.name == DEFAULT_ENGINE))


def compile_baseline(gm: Any, config: Config, example_inputs: Any, device: Any,
                     options: MeasureOptions) -> tuple[float | None, str]:
    """(median ms of the fast partition torch_tensorrt.compile would run with `config`'s
    settings, '') for hv.tune's `compile_ms` baseline; (None, why it was left out) where
    TensorRT cannot be timed here or the measurement failed."""
    from hierviz.compare.rows import run_measure
    from hierviz.compare.tune_space import why_unmeasurable

    why = why_unmeasurable("tensorrt", device, options.compilers)
    if why is not None:
        return None, f"compile_ms (what torch_tensorrt.compile runs) left out: {why}"
    if isinstance(gm, DynamoCapture):  # graph by graph: torch.compile's backend partitions each graph ("fast")
        from hierviz.compare.rows import partition_of

        try:
            m = run_measure(partition_of(gm, compile_config(config, "fast")), example_inputs,
                            options.replace(device=device))
        except HiervizError as exc:
            return None, f"compile_ms (what torch.compile(backend='torch_tensorrt') runs) could not be measured: {exc}"
        return m.median_ms, ""
    today = compile_today(gm, config, need_partition=True)
    if today.partition is None:
        return None, f"compile_ms (what torch_tensorrt.compile runs) left out: {today.why}"
    try:
        m = run_measure(today.partition, example_inputs, options.replace(device=device))
    except HiervizError as exc:
        return None, f"compile_ms (what torch_tensorrt.compile runs) could not be measured: {exc}"
    return m.median_ms, ""


def compare_engines(model_or_graph: Any, example_inputs: Any = None, config: Config | dict | None = None, *,
                    measure: bool | Mapping[str, Any] = False, ir: str = "dynamo",
                    target_device: str = DEFAULT_TARGET, **overrides: Any) -> "Any":
    """One row per engine — fast (what torch_tensorrt.compile runs today), global, upstream's
    hierarchical partitioner, hierviz — partitioning the same captured graph: subgraphs per
    backend, accelerated ops, boundary tensors, and latency when `measure` (True, or a dict of
    hv.measure options; TensorRT needs a GPU). fast and global run with `compile_config`
    (TensorRT only); the hierarchical ones with `config` as given. A row that cannot be made
    here has its reason in `error`; `note` says what the engine did besides partitioning
    (compile's fallback to the global partitioner, its early return).

    `ir="torch_compile"` (or a DynamoCapture / MultiGraphPartition given): each engine partitions
    every graph dynamo made, as torch.compile(model, backend="torch_tensorrt") runs them (the
    fast row: that backend's own partition of each graph); the counts are summed over the
    graphs, with `graphs`, `graph_breaks` and `graphs_left_whole`. `target_device`: the device the
    model is lowered for when it is captured, as in hv.partition ("cuda", the default; "cpu")."""
    from hierviz.compare.rows import measure_options, partition_of, run_measure

    by_graph = runs_by_graph(model_or_graph, ir)
    check_target_device(target_device)
    cfg = make_config(config, overrides)
    options = measure_options(measure, "hv.compare_engines(measure=...)")
    if by_graph:
        from hierviz.compare.sweep import graphs_of  # (pandas: loaded on first use)

        gm: Any = graphs_of(model_or_graph, example_inputs, target_device)
    else:
        gm = graph_of(model_or_graph, example_inputs, target_device=target_device)
    if options is not None and example_inputs is None:
        raise ConfigError("compare_engines(measure=True) needs the example inputs to time each partition.")
    rows = []
    for engine, what in ENGINE_ROWS:
        used = compile_config(cfg, engine) if engine in COMPILE_ENGINES else derive(cfg, {"engine": engine})
        row: dict[str, Any] = {**columns.config_columns(used), "what": what}
        try:
            if by_graph:  # engine "fast" on each graph is what torch.compile's backend runs
                part = partition_of(gm, used)
            else:
                part = today_row(gm, used) if engine == "fast" else cached_partition(gm, used)
            row.update(columns.stat_columns(part))
            row["accelerated_ops"] = part.stats["accelerated_ops"]
            row["note"] = "; ".join(getattr(part, "notes", ())) or None
            row["error"] = None
        except HiervizError as exc:
            row["error"] = str(exc)
            part = None
        if options is not None and part is not None:
            try:
                row.update(columns.latency_columns(run_measure(part, example_inputs, options)))
            except HiervizError as exc:
                row["error"] = str(exc)
        rows.append(row)
    df = columns.frame(rows, latency=options is not None, extra_head=("engine", "what"),
                       extra_tail=("accelerated_ops", "note"))
    cols = list(df.columns)
    if "accelerated_ops" in cols:  # beside the subgraph counts
        cols.remove("accelerated_ops")
        cols.insert(cols.index("coverage"), "accelerated_ops")
    return df[cols]


def today_row(gm: Any, used: Config) -> Any:
    """The fast row's partition: compile today (hierviz.partitioner.upstream.todays_compile); a
    ConfigError saying why when it is left out."""
    today = compile_today(gm, used, need_partition=True)
    if today.partition is None:
        raise ConfigError(today.why)
    return today.partition


__all__ = ["compare_engines", "compile_baseline", "compile_config", "ENGINE_ROWS"]
