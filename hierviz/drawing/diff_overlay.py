"""The diff diagram: `a.render(against=b)` draws partition `a` with what `b` does differently.

`hv.diff(a, b)` lists the nodes whose backend or subgraph (by members) differs between two
partitions of the same graph, each with a `change`: 'backend', 'split' or 'merged'. Here the
nodes that change backend, and the boxes and subgraphs that hold them, are marked strongly:
both backends ("tensorrt \u2192 torch") and a heavy black border. Nodes that keep their backend
but whose subgraph was split or merged are marked lightly (a dark grey border, a short note),
and everything that did not change is dimmed to grey, so the real change is what the eye
finds first. The title counts each kind: "12 nodes change backend, 3 subgraphs split".
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from hierviz.drawing.dot import html
from hierviz.drawing.overlays import Overlay
from hierviz.errors import HiervizError, RenderError
from hierviz.partitioner import Partition, diff
from hierviz.partitioner.partition_diff import changes

DIM_FILL = "#F3F3F3"
DIM_LINE = "#C4C4C4"
DIM_TEXT = "#8A8A8A"
CHANGED_LINE = "#000000"  # a backend change
CHANGED_PEN = 3.0
REGROUPED_LINE = "#5A5A5A"  # same backend, subgraph split or merged
REGROUPED_PEN = 1.8
CHANGE_VALUE = {"backend": 2, "split": 1, "merged": 1}  # a node's value: how strongly it changed


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


class Difference(Overlay):
    """What `b` does differently from `a`, per node of `a` (read from hv.diff's rules): each
    node's value is 2 when it changes backend, 1 when its subgraph is split or merged, else 0."""

    data_name = "change against the other partition (2: backend, 1: subgraph split or merged)"
    data_suffix = ".diff.json"
    gradient = ({"stop": 0, "bgColor": DIM_FILL}, {"stop": 0.5, "bgColor": "#BDBDBD"},
                {"stop": 1, "bgColor": CHANGED_LINE})

    def __init__(self, a: "Partition", b: Any) -> None:
        if not isinstance(b, Partition):
            raise RenderError(f"against= takes another hv.Partition of the same graph, not {type(b).__name__}.")
        if a.records.name != b.records.name:
            try:
                diff(a, b)  # says why when the two have no node in common
            except HiervizError as exc:
                raise RenderError(f"against=: {exc}") from None
        ta, tb = a.records, b.records
        pos_b = tb.position
        self.b, self.t = b, ta
        found = changes(a, b)
        # a node b lacks is drawn as a backend change to "not in b"
        self.kind: dict[int, str] = {i: "backend" if c == "only_a" else c for i, c in found.items()}
        # node -> (backend in a, backend in b, tag in a, tag in b)
        self.changed: dict[int, tuple[str, str, str | None, str | None]] = {}
        for i in self.kind:
            j = pos_b.get(ta.name[i])
            self.changed[i] = (ta.backend[i], "not in b" if j is None else tb.backend[j], ta.tag[i],
                               None if j is None else tb.tag[j])
        self.backend_nodes = sum(1 for c in self.kind.values() if c == "backend")
        self.split_subgraphs = len({ta.subgraph[i] for i, c in self.kind.items() if c == "split"})
        self.merged_subgraphs = len({tb.subgraph[pos_b[ta.name[i]]] for i, c in self.kind.items() if c == "merged"})
        self.label_b = b.config.label()

    def mark(self, i: int) -> tuple[str, str, str] | None:
        """(backend in a, backend in b, change) of a changed node, None when it is unchanged."""
        c = self.changed.get(i)
        return None if c is None else (c[0], c[1], self.kind[i])

    def node_key(self, i: int) -> tuple[str, str, str] | None:
        return self.mark(i)

    def node_value(self, i: int) -> float | None:
        if self.t.subgraph[i] < 0:
            return None
        return float(CHANGE_VALUE.get(self.kind.get(i, ""), 0))

    def node_attrs(self, i: int) -> list[tuple[str, str]]:
        c = self.changed.get(i)
        if c is None:
            return []
        return [("against_change", self.kind[i]), ("against_backend", c[1]), ("against_tag", c[3] or "")]

    def summary(self) -> str:
        """'12 nodes change backend, 3 subgraphs split, 1 merged', or 'no change'."""
        parts = []
        if self.backend_nodes:
            parts.append(f"{_n(self.backend_nodes, 'node')} change{'s' if self.backend_nodes == 1 else ''} backend")
        if self.split_subgraphs:
            parts.append(f"{_n(self.split_subgraphs, 'subgraph')} split")
        if self.merged_subgraphs:
            parts.append(f"{_n(self.merged_subgraphs, 'subgraph')} merged" if not self.split_subgraphs
                         else f"{self.merged_subgraphs:,} merged")
        return ", ".join(parts) if parts else "no change"

    @staticmethod
    def dim(attrs: dict) -> None:
        attrs.update(fillcolor=DIM_FILL, color=DIM_LINE, fontcolor=DIM_TEXT)

    def decorate_ops(self, ops: Sequence[int], lines: list[str], tip: list[str], attrs: dict,
                     bar: bool = True) -> None:
        """A box or cluster standing for `ops`: its backend changes (strong), its regrouped
        nodes (light), or dimmed when none of its ops changed."""
        moves = Counter((self.changed[i][0], self.changed[i][1]) for i in ops if self.kind.get(i) == "backend")
        regroup = Counter(self.kind[i] for i in ops if self.kind.get(i) in ("split", "merged"))
        if not moves and not regroup:
            self.dim(attrs)
            return
        if moves:
            n = sum(moves.values())
            text = ", ".join(f"{x} \u2192 {y} \u00d7{c}" for (x, y), c in moves.most_common(3))
            verb = "changes" if n == 1 else "change"
            lines.append(f'<FONT POINT-SIZE="9"><B>{_n(n, "node")} {verb} backend</B> ({html(text)})</FONT>')
            tip.append(f"against {self.label_b}: {_n(n, 'node')} {verb} backend: {text}")
            attrs.update(color=CHANGED_LINE, penwidth=CHANGED_PEN)
        if regroup:
            text = ", ".join(f"{kind} \u00d7{c}" for kind, c in sorted(regroup.items()))
            lines.append(f'<FONT POINT-SIZE="8">regrouped, same backend: {html(text)}</FONT>')
            tip.append(f"against {self.label_b}: same backend, subgraph {text}")
            if not moves:
                attrs.update(color=REGROUPED_LINE, penwidth=REGROUPED_PEN)

    def decorate_node(self, i: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        """One node of the full or focus view."""
        c = self.changed.get(i)
        if c is None:
            self.dim(attrs)
            return
        ba, bb, ta, tb = c
        if self.kind[i] == "backend":
            lines.append(f'<FONT POINT-SIZE="8"><B>{html(ba)} \u2192 {html(bb)}</B></FONT>')
            tip.append(f"against {self.label_b}: runs in {bb} (subgraph {tb}) instead of {ba} (subgraph {ta})")
            attrs.update(color=CHANGED_LINE, penwidth=CHANGED_PEN)
        else:
            tip.append(f"against {self.label_b}: same backend, its subgraph was {self.kind[i]} "
                       f"(subgraph {tb} instead of {ta})")
            attrs.update(color=REGROUPED_LINE, penwidth=REGROUPED_PEN)

    def decorate_subgraph(self, k: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        """Subgraph k of `a`, a box or cluster."""
        self.decorate_ops(self.t.subgraph_members[k], lines, tip, attrs)

    def title(self) -> str:
        return f"diff: {self.summary()}"

    def legend_html(self) -> str:
        return html(f"against {self.label_b}: {self.summary()} (black border: backend a \u2192 b; grey border: "
                    "same backend, subgraph split or merged); the rest dimmed")


__all__ = ["Difference", "CHANGED_LINE", "REGROUPED_LINE", "DIM_FILL"]
