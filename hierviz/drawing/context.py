"""What one render call draws from: the partition's public record, the options, the overlays
(`make_overlays`) and what the drawing has used so far (for the legend).

Views read nodes and subgraphs through `Ctx.t` (the Partition's `NodeTable`) and the
Partition's public methods only, and overlays through the `Overlay` interface (overlays.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hierviz.drawing.accuracy import NumericsMarks
from hierviz.drawing.build_marks import BuildMarks
from hierviz.drawing.diff_overlay import Difference
from hierviz.drawing.highlight import make_highlight
from hierviz.drawing.time_overlay import TimeOverlay
from hierviz.drawing.overlays import Overlay, fell_back
from hierviz.partitioner import FALLBACK, GRAPH, NodeTable

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.building.builds import Builds
    from hierviz.partitioner import Partition


def make_overlays(p: "Partition", measurement: Any = None, against: Any = None,
                  numerics: Any = None, highlight: Any = None, builds: Builds | None = None) -> tuple[Overlay, ...]:
    """The overlays of `measurement=`, `against=`, `numerics=`, `highlight=` and `builds=` (each
    checked, in that order; None: left out), in the order they decorate: time, numerics,
    builds, diff, highlight."""
    time = None if measurement is None else TimeOverlay(p, measurement)
    difference = None if against is None else Difference(p, against)
    marks = None if numerics is None else NumericsMarks(p, numerics)
    built = None if builds is None else BuildMarks(p, builds)
    return tuple(x for x in (time, marks, built, difference, make_highlight(p, highlight)) if x is not None)


@dataclass
class Ctx:
    p: "Partition"
    max_nodes: int
    weights: bool
    overlays: tuple[Overlay, ...] = ()  # make_overlays: measurement=, numerics=, against=
    t: NodeTable = field(init=False)
    reasons: Counter = field(default_factory=Counter)  # reason codes drawn, for the legend
    backends_seen: set = field(default_factory=set)
    full_work: int | None = None  # layout work of the full view, once auto has measured it
    full_px: tuple[int, int] | None = None  # the full view's estimated size, once auto has estimated it
    auto_note: str | None = None  # why auto did not draw the full view (said in the title)

    fell_back: dict[int, str] = field(init=False)  # subgraph k -> why it ran in PyTorch (a measured fallback)

    def __post_init__(self) -> None:
        self.t = self.p.records
        self.fell_back = fell_back(self.overlays, len(self.t.subgraph_tag))

    def drawable(self, i: int) -> bool:
        return self.weights or self.t.kind[i] != "get_attr"

    def backend(self, i: int) -> str:
        """Where node i ran: its backend, or PyTorch when its subgraph fell back when measured."""
        k = self.t.subgraph[i]
        return FALLBACK if k >= 0 and k in self.fell_back else self.t.backend[i]

    def subgraph_backend(self, k: int) -> str:
        """Where subgraph k ran: its backend, or PyTorch when it fell back when measured."""
        return FALLBACK if k in self.fell_back else self.t.subgraph_backend[k]

    def ran_line(self, k: int, ops: str) -> str:
        """A subgraph's backend line: 'tensorrt · 9 ops', or, when it fell back when measured,
        'ran in PyTorch (eager) · 9 ops · tensorrt fell back'."""
        backend = self.t.subgraph_backend[k]
        if k not in self.fell_back:
            return f"{backend} · {ops}"
        return f"ran in PyTorch (eager) · {ops} · {backend} fell back"

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
        """Every overlay's marks of subgraph k, into label lines, tooltip, attributes."""
        for overlay in self.overlays:
            overlay.decorate_subgraph(k, lines, tip, attrs)

    def decorate_group(self, ks: range, lines: list[str], tip: list[str], attrs: dict) -> None:
        """The same for a box of consecutive subgraphs (the collapsed view of many subgraphs)."""
        members = [i for k in ks for i in self.t.subgraph_members[k]]
        for overlay in self.overlays:
            overlay.decorate_ops(members, lines, tip, attrs, bar=False)


__all__ = ["Ctx", "GRAPH", "make_overlays"]
