"""DynamoGraph: one graph dynamo captured from a model, lowered as Torch-TensorRT lowers it.

`hv.capture(model, inputs, ir="torch_compile")` records one per graph, in execution order: the
aten graph Torch-TensorRT's torch.compile backend partitions, the dynamo graph's inputs and
outputs, its ops, how often the model's run called it, the values of its first call, and the
graph break that ended it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

import torch
from torch.fx import GraphModule

from hierviz.capturing.by_graph.graph_source import GraphSource

# How a graph after the first starts: dynamo resumes a frame after a graph break, or a new frame
# is called from Python that dynamo ran eagerly; '' for the first graph (the forward's own frame).
StartKind = Literal["", "resumed", "new-frame"]
RESUMED: StartKind = "resumed"
NEW_FRAME: StartKind = "new-frame"


@dataclass(frozen=True, eq=False)
class DynamoGraph(GraphSource):
    """One captured graph: its source (GraphSource: `index`, `function` / `file` / `line`,
    `calls`, `ops`, `inputs` / `outputs` as dynamo's graph has them, the user's tensors, the
    weights dynamo lifted, SymInts; `ended_by`), plus `graph`: the aten GraphModule
    Torch-TensorRT's backend partitions (`ops` are its calls); `example_inputs`: the values of
    its first call, one per placeholder of `graph`; `sources`: one per placeholder of `graph`,
    `(j, position)` when its first call's value was the very tensor graph `j` returned at that
    output position (dynamo's outputs in order), None otherwise (a weight, the user's input, a
    value the eager Python between graphs made); `starts`: why a new graph starts here, in words
    (empty for the first: the forward's own frame); `start_kind`: the same as a kind (StartKind:
    RESUMED, NEW_FRAME, '' for the first); `fell_back`: for a graph Torch-TensorRT's
    backend runs eagerly after its lowering failed with an exception it catches, "runs eagerly:
    Torch-TensorRT's backend failed on it (RuntimeError: ...)", and `graph` is then dynamo's own
    graph (not lowered: nothing of it is accelerated); empty otherwise."""

    graph: GraphModule
    example_inputs: tuple
    sources: tuple = ()
    starts: str = ""  # why this graph starts where it does (after a break, a resumed frame, a new frame)
    fell_back: str = ""  # why Torch-TensorRT's backend runs it eagerly (its lowering failed); empty when it does not
    # the source files dynamo traced it from (a kept capture is stale when one changes)
    traced_files: tuple[str, ...] = ()
    start_kind: StartKind = ""

    def __repr__(self) -> str:
        where = f" {self.function} ({self.file}:{self.line})" if self.file else ""
        eager = f"; {self.fell_back}" if self.fell_back else ""
        return f"<DynamoGraph {self.name}{where}: {len(self.ops)} ops, {len(self.inputs)} inputs{eager}>"


def graph_args(call_args: Sequence[Any], placeholders: int) -> tuple:
    """The values for the aten graph's `placeholders` from one call of dynamo's graph: all of
    them, or the tensors alone where Torch-TensorRT's lowering (remove_sym_nodes) dropped the
    SymInt inputs."""
    args = tuple(call_args)
    return args if len(args) == placeholders else tuple(a for a in args if isinstance(a, torch.Tensor))


__all__ = ["DynamoGraph", "graph_args", "StartKind", "RESUMED", "NEW_FRAME"]
