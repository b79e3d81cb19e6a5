"""Converting a subgraph leaves its nodes' module stacks as they were.

Torch-TensorRT 2.14's `get_node_name` (torch_tensorrt/dynamo/conversion/converter_utils.py) names
a node by popping the last entry of `node.meta['nn_module_stack']`, and it names a node more than
once as it converts it. A partition's subgraphs share their nodes' meta with the partition's graph (and the
capture's), so every conversion cut modules off every node: the modules view, each record's
module_path and the next failure's node name changed with each build.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch

STACK = "nn_module_stack"


@contextlib.contextmanager
def module_stacks_kept(gm: torch.fx.GraphModule) -> Iterator[None]:
    """Each node of `gm` converts with a copy of its module stack; the stacks are put back after."""
    kept = {n: n.meta[STACK] for n in gm.graph.nodes if isinstance(n.meta.get(STACK), dict)}
    for node, stack in kept.items():
        node.meta[STACK] = dict(stack)
    try:
        yield
    finally:
        for node, stack in kept.items():
            node.meta[STACK] = stack


__all__ = ["module_stacks_kept"]
