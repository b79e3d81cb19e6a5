"""hv.explore, the entry: one graph (hierviz.widget.explorer.Explorer), or a model graph by
graph (`ir="torch_compile"`, a MultiGraphPartition or a DynamoCapture:
hierviz.widget.graphs_explorer.GraphsExplorer)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from torch.fx import GraphModule

from hierviz.capturing.aten_capture import is_aten_graph
from hierviz.capturing.target_device import DEFAULT_TARGET, check_target_device
from hierviz.settings.config import Config, field_names
from hierviz.errors import checked_arguments
from hierviz.partitioner import MultiGraphPartition, Partition, graph_of, partition, runs_by_graph
from hierviz.widget.explorer import Explorer

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.widget.graphs_explorer import GraphsExplorer


@checked_arguments
def explore(model: Any, example_inputs: Any = None, config: Config | dict | None = None, *,
            measure: bool = False, ir: str = "dynamo", target_device: str = DEFAULT_TARGET,
            **overrides: Any) -> "Explorer | GraphsExplorer":
    """An interactive Explorer of `model`'s partition: change the settings with widgets and see
    the diagram, stats, tables, report, history and diff update. `overrides` are Config fields
    (`hv.explore(m, x, min_block_size=2)`, as in hv.partition; `engine`, "hierviz", "fast" —
    what torch_tensorrt.compile runs —, "global" or "torch_tensorrt", is one of them) and
    Explorer options (view, focus, debounce, output_dir, max_nodes, measure_options, name).

    `ir="torch_compile"` (or a MultiGraphPartition / DynamoCapture given): the model graph by
    graph, as torch.compile(backend="torch_tensorrt") runs it, in a GraphsExplorer
    (hierviz.widget.graphs_explorer): a graph picker, the picked graph's Explorer, and every graph
    re-partitioned at the same settings in the background (a change redraws only the shown graph).

    `target_device`: the device the model is lowered for when it is captured, as in hv.partition
    ("cuda", the default: as Torch-TensorRT lowers it on a CUDA GPU, on any machine; "cpu"); a
    graph or partition given is kept as it was lowered."""
    by_graph = runs_by_graph(model, ir)
    check_target_device(target_device)
    if by_graph:
        from hierviz.widget.graphs_explorer import GraphsExplorer

        fields = set(field_names())
        settings = {k: v for k, v in overrides.items() if k in fields}
        options = {k: v for k, v in overrides.items() if k not in fields}
        if config is None and isinstance(model, MultiGraphPartition):
            config = model.config  # its engine too
        multi = cast(MultiGraphPartition, partition(model, example_inputs, config, ir="torch_compile",
                                                    target_device=target_device, **settings))
        return GraphsExplorer(multi, measure=measure, **options)
    if target_device != DEFAULT_TARGET and not is_captured(model):
        # captured here for the target (the Explorer captures for the default), named for the model as it names it
        overrides.setdefault("name", type(model).__name__)
        model = graph_of(model, example_inputs, target_device=target_device)
    return Explorer(model, example_inputs, config, measure=measure, **overrides)


def is_captured(model: Any) -> bool:
    """Whether `model` is kept as it was lowered (a Partition, an aten graph): nothing is captured for a target."""
    return isinstance(model, Partition) or (isinstance(model, GraphModule) and is_aten_graph(model))


__all__ = ["explore"]
