"""One row of hv.sweep: a configuration partitioned (and optionally measured), in this
process or as a Ray task; `hv.compare_engines` makes its rows with the same functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from torch.fx import GraphModule

from hierviz.compare import columns
from hierviz.compare.partition_cache import cached_partition
from hierviz.compare.ray_executor import RayRunner, WorkerDied
from hierviz.settings.config import Config
from hierviz.capturing.by_graph.dynamo_capture import DynamoCapture
from hierviz.errors import ConfigError, HiervizError
from hierviz.capturing.graph_codec import unpack_graph
from hierviz.latency.measure_options import MeasureOptions
from hierviz.partitioner import partition_graphs

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.partition_result import Partition
    from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition


def measure_kwargs(measure: Any) -> dict[str, Any] | None:
    """hv.sweep's `measure=` as a dict of hv.measure options (None: not measured), as the user
    wrote it (a sweep file's rows are keyed by it)."""
    if measure is None or measure is False:
        return None
    if measure is True:
        return {}
    if isinstance(measure, Mapping):
        return dict(measure)
    raise ConfigError(f"measure must be True/False or a dict of hv.measure options, e.g. {{'iters': 20}}, "
                      f"not {type(measure).__name__}.")


def measure_options(measure: Any, who: str = "hv.sweep(measure=...)") -> MeasureOptions | None:
    """`measure=` (False/None, True, or a dict of hv.measure options) as the one checked record
    every row is measured with; None when nothing is measured. A bad option is refused here,
    before any row runs."""
    given = measure_kwargs(measure)
    return None if given is None else MeasureOptions.of(given, who)


def partition_of(source: Any, cfg: Config) -> Any:
    """The partition of an aten graph (from the partition cache), or of a graph-by-graph capture
    (ir="torch_compile": a MultiGraphPartition, each graph from the cache)."""
    if isinstance(source, DynamoCapture):
        return partition_graphs(source, cfg, run=cached_partition)
    return cached_partition(source, cfg)


def partition_row(gm: Any, cfg: Config) -> tuple[Any, dict[str, Any]]:
    """(partition or None, row) for one configuration (checked by the grid: used as it is) of
    an aten graph or a graph-by-graph capture; its engine runs once per graph; HiervizErrors
    become the row's `error`."""
    row: dict[str, Any] = columns.config_columns(cfg)
    try:
        part = partition_of(gm, cfg)
        row.update(columns.stat_columns(part))
    except HiervizError as exc:
        row["error"] = str(exc)
        return None, row
    row["error"] = None
    return part, row


def run_measure(part: Partition | MultiGraphPartition, example_inputs: Any, options: MeasureOptions) -> Any:
    """hv.measure with `options`; when the outputs differ, `mismatch_at` names the subgraph where
    the error starts (hv.numerics on the same compiled subgraphs)."""
    from hierviz.latency import measure_with
    from hierviz.latency.numerics import with_mismatch

    return with_mismatch(part, example_inputs, measure_with(part, example_inputs, options), options)


def _sweep_task(gm: GraphModule, example_inputs: Any, cfg: Config,
                options: MeasureOptions | None) -> dict[str, Any]:
    """One sweep row, on a worker: the same row a local sweep makes."""
    part, row = partition_row(gm, cfg)
    if options is not None and part is not None:
        try:
            row.update(columns.latency_columns(run_measure(part, example_inputs, options)))
        except HiervizError as exc:
            row["error"] = str(exc)
    return row


def sweep_on_ray(executor: Any, gm: GraphModule, example_inputs: Any, configs: list[Config],
                 options: MeasureOptions | None, bar: Any = None,
                 stopped: dict[str, bool] | None = None) -> list[tuple[None, dict[str, Any]]]:
    """hv.sweep's rows, each a Ray task, in grid order: [(None, row), ...]. A row whose worker
    died has the configuration's fields and the message in `error`. Ctrl-C (with `stopped`)
    ends the wait: the rows finished so far, in grid order, and `stopped["interrupted"]`."""
    runner = RayRunner(executor, gm, example_inputs)
    refs = [runner.submit(_sweep_task, cfg, options) for cfg in configs]
    index = {ref: i for i, ref in enumerate(refs)}
    rows: list[dict[str, Any] | None] = [None] * len(refs)
    try:
        for ref, row, error in runner.wait(refs):
            i = index[ref]
            if error is not None:
                row = columns.config_columns(configs[i])
                text = str(error) if isinstance(error, WorkerDied) else f"{type(error).__name__}: {error}"
                row["error"] = text
            rows[i] = row
            if bar is not None:
                bar.update(1)
    except KeyboardInterrupt:
        if stopped is None:
            raise
        stopped["interrupted"] = True
    finished = rows[:rows.index(None)] if None in rows else rows  # grid order: up to the first unfinished
    return [(None, row) for row in finished if row is not None]  # (every row before the first None is one)


def process_row(packed: dict[str, Any], cfg: Config) -> tuple[None, dict[str, Any]]:
    """One sweep row in a worker process (hv.sweep with a ProcessPoolExecutor): the graph
    unpacked from its plain data (graphdata.pack_graph), partitioned; (None, row), since a
    Partition stays in the process that made it."""
    _, row = partition_row(unpack_graph(packed), cfg)
    return None, row


__all__ = ["measure_kwargs", "measure_options", "partition_of", "partition_row", "process_row", "run_measure",
           "sweep_on_ray"]
