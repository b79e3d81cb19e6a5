"""`render(highlight="blockers")`: the nodes of the top causes of `Partition.blockers()`
(an op with no converter, a validator's refusal, torch_executed_ops, a demoted small block)
marked on the drawing with a heavy red border and the cause, and every box or subgraph that
holds them says how many it holds."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Sequence

from hierviz.drawing.dot import html
from hierviz.drawing.overlays import Overlay
from hierviz.errors import RenderError
from hierviz.partitioner.blockers.blocker_causes import blocked_nodes

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition

HIGHLIGHTS = ("blockers",)
BLOCKER_LINE = "#C62828"
BLOCKER_PEN = 3.0
TOP_CAUSES = 5


class BlockerMarks(Overlay):
    """The nodes of the top `TOP_CAUSES` causes, each with its cause ('no converter: hypot')."""

    data_name = "blocker (1: kept out of the accelerated backends by one of the top causes)"
    data_suffix = ".blockers.json"
    gradient = ({"stop": 0, "bgColor": "#FFFFFF"}, {"stop": 1, "bgColor": BLOCKER_LINE})

    def __init__(self, p: "Partition") -> None:
        t = p.records
        self.t = t
        pos = t.position
        self.cause: dict[int, str] = {pos[name]: label for name, label in blocked_nodes(p, TOP_CAUSES).items()}
        self.causes = len(set(self.cause.values()))

    def node_value(self, i: int) -> float | None:
        if not self.t.is_callable(i):
            return None
        return 1.0 if i in self.cause else 0.0

    def node_key(self, i: int) -> Any:
        return self.cause.get(i)

    def node_attrs(self, i: int) -> list[tuple[str, str]]:
        return [("blocker", self.cause[i])] if i in self.cause else []

    def decorate_node(self, i: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        label = self.cause.get(i)
        if label is None:
            return
        lines.append(f'<FONT POINT-SIZE="8" COLOR="{BLOCKER_LINE}"><B>blocker: {html(label)}</B></FONT>')
        tip.append(f"blocker: {label} (see part.blockers())")
        attrs.update(color=BLOCKER_LINE, penwidth=BLOCKER_PEN)

    def decorate_subgraph(self, k: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        self.decorate_ops(self.t.subgraph_members[k], lines, tip, attrs)

    def decorate_ops(self, ops: Sequence[int], lines: list[str], tip: list[str], attrs: dict,
                     bar: bool = True) -> None:
        found = Counter(self.cause[i] for i in ops if i in self.cause)
        if not found:
            return
        n = sum(found.values())
        text = ", ".join(f"{label} \u00d7{c}" for label, c in found.most_common(2)) + (" ..." if len(found) > 2 else "")
        lines.append(f'<FONT POINT-SIZE="8" COLOR="{BLOCKER_LINE}"><B>{n} blocker node(s)</B>: {html(text)}</FONT>')
        tip.append(f"{n} blocker node(s): {text}")
        attrs.update(color=BLOCKER_LINE, penwidth=BLOCKER_PEN)

    def title(self) -> str:
        if not self.cause:
            return "no blockers: every op node is accelerated"
        return f"blockers: {len(self.cause):,} node(s) of the top {self.causes} cause(s) marked red"

    def legend_html(self) -> str:
        return (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="0"><TR><TD BORDER="3" '
                f'COLOR="{BLOCKER_LINE}" CELLPADDING="2"><FONT POINT-SIZE="9">blocker</FONT></TD><TD ALIGN="LEFT">'
                "kept out of the accelerated backends by one of the top causes of part.blockers()</TD></TR></TABLE>")


def make_highlight(p: "Partition", highlight: Any) -> Overlay | None:
    """The overlay `highlight=` asks for (None: none); RenderError naming the choices."""
    if highlight is None:
        return None
    if highlight not in HIGHLIGHTS:
        raise RenderError(f"highlight={highlight!r} is not known; it takes {', '.join(repr(h) for h in HIGHLIGHTS)}.")
    return BlockerMarks(p)


__all__ = ["BlockerMarks", "make_highlight", "HIGHLIGHTS"]
