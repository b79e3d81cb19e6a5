"""The diff diagram: `a.render(against=b)` draws partition `a` with what `b` does differently.

`hv.diff(a, b)` lists the nodes whose backend or subgraph differs between two partitions of
the same graph. Here those nodes, and the module boxes and subgraphs that hold them, are
marked with both backends ("tensorrt \u2192 torch") and a heavy black border; everything
that did not change is dimmed to grey, so the change is what the eye finds first.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Sequence

from hierviz.drawing.dot import html
from hierviz.errors import HiervizError, RenderError

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.result import Partition

DIM_FILL = "#F3F3F3"
DIM_LINE = "#C4C4C4"
DIM_TEXT = "#8A8A8A"
CHANGED_LINE = "#000000"
CHANGED_PEN = 3.0


class Difference:
    """The nodes of `a` whose backend or subgraph differs in `b` (read from `hv.diff`)."""

    def __init__(self, a: "Partition", b: Any) -> None:
        from hierviz.partitioner import Partition, diff

        if not isinstance(b, Partition):
            raise RenderError(f"against= takes another hv.Partition of the same graph, not {type(b).__name__}.")
        try:
            table = diff(a, b)
        except HiervizError as exc:  # not the same graph
            raise RenderError(f"against=: {exc}") from None
        t = a.records
        self.b = b
        self.changed: dict[int, tuple[str, str, str | None, str | None]] = {}
        for name, ba, bb, ta, tb in zip(table["node"], table["backend_a"], table["backend_b"], table["tag_a"],
                                        table["tag_b"]):
            self.changed[t.position[name]] = (ba, bb, ta, tb)
        self.label_b = b.config.label()

    def mark(self, i: int) -> tuple[str, str] | None:
        """(backend in a, backend in b) of a changed node, None when it is unchanged."""
        c = self.changed.get(i)
        return None if c is None else (c[0], c[1])

    @staticmethod
    def dim(attrs: dict) -> None:
        attrs.update(fillcolor=DIM_FILL, color=DIM_LINE, fontcolor=DIM_TEXT)

    def _changes(self, ops: Sequence[int]) -> Counter:
        return Counter((self.changed[i][0], self.changed[i][1]) for i in ops if i in self.changed)

    def decorate_ops(self, ops: Sequence[int], lines: list[str], tip: list[str], attrs: dict) -> None:
        """A box or cluster standing for `ops`: the changes among them, or dimmed."""
        moves = self._changes(ops)
        if not moves:
            self.dim(attrs)
            return
        n = sum(moves.values())
        text = ", ".join(f"{x} \u2192 {y} \u00d7{c}" if x != y else f"{x} (other subgraph) \u00d7{c}"
                         for (x, y), c in moves.most_common(3))
        lines.append(f'<FONT POINT-SIZE="9"><B>changed: {n} node{"s" if n != 1 else ""}</B> ({html(text)})</FONT>')
        tip.append(f"against {self.label_b}: {n} node(s) changed: {text}")
        attrs.update(color=CHANGED_LINE, penwidth=CHANGED_PEN)

    def decorate_node(self, i: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        """One node of the full or focus view."""
        c = self.changed.get(i)
        if c is None:
            self.dim(attrs)
            return
        ba, bb, ta, tb = c
        lines.append(f'<FONT POINT-SIZE="8"><B>{html(ba)} \u2192 {html(bb)}</B></FONT>')
        tip.append(f"against {self.label_b}: runs in {bb} (subgraph {tb}) instead of {ba} (subgraph {ta})")
        attrs.update(color=CHANGED_LINE, penwidth=CHANGED_PEN)

    def decorate_subgraph(self, members: Sequence[int], lines: list[str], tip: list[str], attrs: dict) -> None:
        """A subgraph box or cluster of `a` (members: its node indices)."""
        self.decorate_ops(members, lines, tip, attrs)

    def legend(self) -> str:
        return (f"against {self.label_b}: {len(self.changed)} node(s) change backend or subgraph "
                "(black border, a \u2192 b); the rest dimmed")


def make_difference(a: "Partition", against: Any) -> Difference | None:
    """A Difference for `against=` (None passes through)."""
    return None if against is None else Difference(a, against)


__all__ = ["Difference", "make_difference"]
