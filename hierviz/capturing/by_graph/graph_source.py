"""GraphSource: what one graph captured by graph break says of itself, graph or no graph.

The common part of a live capture's `DynamoGraph` (dynamo_graph.py, which adds the aten graph
and its first call's values) and a loaded partition's `SavedGraph` (partitioner/saved/saved_graphs.py,
which has no graph): its place in execution order, the user's function it was traced from, how
often the model's run called it, its ops, its inputs and outputs, and the break that ended it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hierviz.capturing.by_graph.graph_break import GraphBreak
from hierviz.capturing.by_graph.graph_value import GraphValue


@dataclass(frozen=True, eq=False)
class GraphSource:
    """`index`: the graph's place in execution order (0 first); `inputs` / `outputs`: dynamo's
    graph's; `ops`: its aten graph's calls in graph order (qualified names); `function` /
    `file` / `line`: the user's function it was traced from; `calls`: how many times the
    capture's run called it; `ended_by`: the break that ended it (None for a graph that ran to
    its frame's return). The fields keep DynamoGraph's order (the graph itself and its first
    call's values, DynamoGraph's own, follow them)."""

    index: int
    inputs: tuple[GraphValue, ...]
    outputs: tuple[GraphValue, ...]
    ops: tuple[str, ...]
    function: str
    file: str
    line: int
    calls: int
    ended_by: GraphBreak | None

    @property
    def has_compute(self) -> bool:
        """False for a graph with nothing to partition (no op, e.g. only views or constants)."""
        return bool(self.ops)

    @property
    def name(self) -> str:
        """'g<index>', the prefix of its nodes' qualified names ('g2/add_3')."""
        return f"g{self.index}"


__all__ = ["GraphSource"]
