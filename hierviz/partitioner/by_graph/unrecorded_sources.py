"""Graph by graph (ir="torch_compile"), an hv.source_ops entry must name an op some graph's
nodes can record as their source: one torch decomposes before Torch-TensorRT's lowering traces
each graph is recorded by no node, so it is refused here rather than forcing nothing."""

from __future__ import annotations

from hierviz.capturing.provenance import decomposed_first, short_op, split_sources
from hierviz.errors import ConfigError
from hierviz.settings.config import Config


def refuse_unrecorded_sources(config: Config) -> None:
    """ConfigError for an hv.source_ops entry no graph of torch.compile's path can match: torch
    decomposes the op before Torch-TensorRT's lowering traces the graph, so no node records it
    as its source and the entry would force nothing, silently."""
    for entry in sorted(split_sources(config.torch_executed_ops)[1]):
        first = decomposed_first(entry)
        if first:
            shown = short_op(entry)
            raise ConfigError.for_setting("torch_executed_ops", (
                f"hv.source_ops({shown!r}) cannot be applied graph by graph (ir='torch_compile'): torch decomposes "
                f"{', '.join(short_op(o) for o in first)} (CompositeImplicitAutograd) before Torch-TensorRT's "
                "lowering traces each graph, so no node records it as its source and the entry would force nothing. "
                "Name the ops it becomes instead (each graph's part.ops() lists them), or capture with "
                f"ir='dynamo', where hv.source_ops({shown!r}) forces the nodes of the exported op."))


__all__ = ["refuse_unrecorded_sources"]
