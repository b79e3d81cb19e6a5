"""hv.explore, the entry: one graph (hierviz.widget.explorer.Explorer), or a model graph by
graph (`ir="torch_compile"`, a MultiGraphPartition or a DynamoCapture:
hierviz.widget.graphs_explorer.GraphsExplorer)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from hierviz.settings.config import Config, field_names
from hierviz.errors import checked_arguments
from hierviz.partitioner import MultiGraphPartition, partition, runs_by_graph
from hierviz.widget.explorer import Explorer

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.widget.graphs_explorer import GraphsExplorer


@checked_arguments
def explore(model: Any, example_inputs: Any = None, config: Config | dict | None = None, *,
            measure: bool = False, ir: str = "dynamo", **overrides: Any) -> "Explorer | GraphsExplorer":
    """An interactive Explorer of `model`'s partition: change the settings with widgets and see
    the diagram, stats, tables, report, history and diff update. `overrides` are Config fields
    (`hv.explore(m, x, min_block_size=2)`, as in hv.partition; `engine`, "hierviz", "fast" —
    what torch_tensorrt.compile runs —, "global" or "torch_tensorrt", is one of them) and
    Explorer options (view, focus, debounce, output_dir, max_nodes, measure_options, name).

    `ir="torch_compile"` (or a MultiGraphPartition / DynamoCapture given): the model graph by
    graph, as torch.compile(backend="torch_tensorrt") runs it, in a GraphsExplorer
    (hierviz.widget.graphs_explorer): a graph picker, the picked graph's Explorer, and every graph
    re-partitioned at the same settings in the background (a change redraws only the shown graph)."""
    if runs_by_graph(model, ir):
        from hierviz.widget.graphs_explorer import GraphsExplorer

        fields = set(field_names())
        settings = {k: v for k, v in overrides.items() if k in fields}
        options = {k: v for k, v in overrides.items() if k not in fields}
        if config is None and isinstance(model, MultiGraphPartition):
            config = model.config  # its engine too
        multi = cast(MultiGraphPartition, partition(model, example_inputs, config, ir="torch_compile", **settings))
        return GraphsExplorer(multi, measure=measure, **options)
    return Explorer(model, example_inputs, config, measure=measure, **overrides)


__all__ = ["explore"]
