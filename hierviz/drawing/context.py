"""What one render call draws from: the partition's public record plus the options and what
the drawing has used so far (for the legend).

Views read nodes and subgraphs through `Ctx.t` (the Partition's `NodeTable`) and the
Partition's public methods only.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hierviz.partitioner import GRAPH, NodeTable

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition


@dataclass
class Ctx:
    p: "Partition"
    max_nodes: int
    weights: bool
    overlay: Any = None  # drawing.overlay.Overlay (measurement=)
    difference: Any = None  # drawing.difference.Difference (against=)
    numerics: Any = None  # drawing.accuracy.NumericsMarks (numerics=)
    t: NodeTable = field(init=False)
    reasons: Counter = field(default_factory=Counter)  # reason codes drawn, for the legend
    backends_seen: set = field(default_factory=set)
    full_work: int | None = None  # layout work of the full view, once auto has measured it
    auto_note: str | None = None  # why auto did not draw the full view (said in the title)

    def __post_init__(self) -> None:
        self.t = self.p.records

    def drawable(self, i: int) -> bool:
        return self.weights or self.t.kind[i] != "get_attr"

    def backend(self, i: int) -> str:
        return self.t.backend[i]

    def cluster(self, i: int) -> int | None:
        """The subgraph index of node i, None when it is not partitioned."""
        k = self.t.subgraph[i]
        return None if k < 0 else k

    def compute_ops(self, k: int) -> int:
        """Subgraph k's compute ops (Subgraph.compute_ops, without describing every subgraph)."""
        flags = self.t.compute
        return sum(1 for i in self.t.subgraph_members[k] if flags[i])

    def drawn_count(self) -> int:
        if self.weights:
            return len(self.t)
        return sum(1 for kind in self.t.kind if kind != "get_attr")

    def all_drawn(self) -> list[int]:
        return [i for i in range(len(self.t)) if self.drawable(i)]

    def decorate_subgraph(self, k: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        """Overlay (measured time) and diff marks of subgraph k, into label lines, tooltip, attributes."""
        if self.overlay is not None:
            self.overlay.decorate_subgraph(self.t.subgraph_tag[k], lines, tip, attrs)
        if self.numerics is not None:
            self.numerics.decorate_subgraph(self.t.subgraph_tag[k], lines, tip, attrs)
        if self.difference is not None:
            self.difference.decorate_subgraph(self.t.subgraph_members[k], lines, tip, attrs)

    def decorate_group(self, ks: range, lines: list[str], tip: list[str], attrs: dict) -> None:
        """The same for a box of consecutive subgraphs (the collapsed view of many subgraphs)."""
        members = [i for k in ks for i in self.t.subgraph_members[k]]
        if self.overlay is not None:
            self.overlay.decorate_ops(members, lines, tip, attrs, bar=False)
        if self.numerics is not None:
            self.numerics.decorate_ops(members, lines, tip, attrs)
        if self.difference is not None:
            self.difference.decorate_ops(members, lines, tip, attrs)


__all__ = ["Ctx", "GRAPH"]
