"""DynamoGraph: one graph dynamo captured from a model, lowered as Torch-TensorRT lowers it.

`hv.capture(model, inputs, ir="torch_compile")` records one per graph, in execution order: the
aten graph Torch-TensorRT's torch.compile backend partitions, the dynamo graph's inputs and
outputs, its ops, how often the model's run called it, the values of its first call, and the
graph break that ended it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch.fx import GraphModule

from hierviz.graph_break import GraphBreak
from hierviz.graph_value import GraphValue


@dataclass(frozen=True, eq=False)
class DynamoGraph:
    """One captured graph. `index`: its place in execution order (0 first); `graph`: the aten
    GraphModule Torch-TensorRT's backend partitions; `inputs` / `outputs`: dynamo's graph's
    (the user's tensors, the weights dynamo lifted, SymInts); `ops`: the aten graph's calls in
    graph order (qualified names); `function` / `file` / `line`: the user's function the graph
    was traced from; `calls`: how many times the capture's run called it; `example_inputs`:
    the values of its first call, one per placeholder of `graph`; `ended_by`: the break that
    ended it (None for a graph that ran to its frame's return); `sources`: one per placeholder
    of `graph`, `(j, position)` when its first call's value was the very tensor graph `j`
    returned at that output position (dynamo's outputs in order), None otherwise (a weight,
    the user's input, a value the eager Python between graphs made)."""

    index: int
    graph: GraphModule
    inputs: tuple[GraphValue, ...]
    outputs: tuple[GraphValue, ...]
    ops: tuple[str, ...]
    function: str
    file: str
    line: int
    calls: int
    example_inputs: tuple
    ended_by: GraphBreak | None
    sources: tuple = ()

    @property
    def has_compute(self) -> bool:
        """False for a graph with nothing to partition (no op, e.g. only views or constants)."""
        return bool(self.ops)

    @property
    def name(self) -> str:
        """'g<index>', the prefix of its nodes' qualified names ('g2/add_3')."""
        return f"g{self.index}"

    def __repr__(self) -> str:
        where = f" {self.function} ({self.file}:{self.line})" if self.file else ""
        return f"<DynamoGraph {self.name}{where}: {len(self.ops)} ops, {len(self.inputs)} inputs>"


def graph_args(call_args: Sequence[Any], placeholders: int) -> tuple:
    """The values for the aten graph's `placeholders` from one call of dynamo's graph: all of
    them, or the tensors alone where Torch-TensorRT's lowering (remove_sym_nodes) dropped the
    SymInt inputs."""
    args = tuple(call_args)
    return args if len(args) == placeholders else tuple(a for a in args if isinstance(a, torch.Tensor))


__all__ = ["DynamoGraph", "graph_args"]
