"""GraphsAndBreaks: the graphs of a capture by graph break, in execution order, and its breaks.

The common part of a live capture (`DynamoCapture`, dynamo_capture.py: its graphs are
DynamoGraphs) and a loaded partition's capture (`SavedCapture`, partitioner/saved/saved_graphs.py:
SavedGraphs, no graph and no model): a sequence of its graphs (len, iteration, indexing), the
GraphBreaks in the order they happened and the captured model's class name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Iterator, TypeVar

from hierviz.capturing.by_graph.graph_break import GraphBreak
from hierviz.capturing.by_graph.graph_source import GraphSource

G = TypeVar("G", bound=GraphSource)


@dataclass(frozen=True, eq=False)
class GraphsAndBreaks(Generic[G]):
    """`graphs`: one per graph, in execution order; `breaks`: one GraphBreak per graph break,
    in the order they happened; `model`: the captured model's class name."""

    graphs: tuple[G, ...]
    breaks: tuple[GraphBreak, ...]
    model: str

    def __len__(self) -> int:
        return len(self.graphs)

    def __iter__(self) -> Iterator[G]:
        return iter(self.graphs)

    def __getitem__(self, k: int) -> G:
        return self.graphs[k]


__all__ = ["GraphsAndBreaks"]
