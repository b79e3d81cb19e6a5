"""A private copy of a GraphModule's graph, sharing its weights, for the passes that write to nodes."""

from __future__ import annotations

import torch
from torch.fx import GraphModule
from torch.fx._lazy_graph_module import _LazyGraphModule


def copy_graph_module(gm: GraphModule, *, lazy: bool = False) -> GraphModule:
    """A GraphModule over a copy of gm's graph (same node names and meta, same codegen),
    sharing gm's weights. Passes that write to nodes run on this, so the user's graph is
    never touched. `lazy`: its Python code is generated on first use (never, for a copy that
    is only split), as torch.fx's _LazyGraphModule does."""
    graph = torch.fx.Graph()
    out = graph.graph_copy(gm.graph, {}, return_output_node=True)
    if isinstance(out, tuple):
        out = out[0]
    graph.output(out)
    graph._codegen = gm.graph._codegen
    return (_LazyGraphModule if lazy else GraphModule)(gm, graph)
