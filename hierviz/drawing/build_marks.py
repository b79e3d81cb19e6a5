"""The builds overlay: each TensorRT engine marked as built on this machine (its size) or
failed (the stage and the first line of the error), from `part.build()`
(`render(..., builds=part.build())`, `save(..., builds=...)`).

A failed engine's border is drawn red and thick; its tooltip says what Torch-TensorRT then
runs and the fix that was shown to build. A module box, or a box of several subgraphs, says
how many of its engines built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from hierviz.drawing.dot import html
from hierviz.drawing.overlays import Overlay
from hierviz.errors import RenderError

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.building.build_row import BuildRow

FAILED = "#C62828"
BUILT = "#2E7D32"


def _mb(n: Any) -> str:
    mb = float(n or 0) / 1e6
    return f"{mb:.0f} MB" if mb >= 10 else f"{mb:.1f} MB"


class BuildMarks(Overlay):
    """The rows of one hv.Builds of partition `p`, by subgraph tag."""

    def __init__(self, p: Any, builds: Any) -> None:
        rows = getattr(builds, "rows", None)
        if rows is None or not hasattr(builds, "headline"):
            raise RenderError(f"builds= takes what part.build() returned (hv.Builds), not {type(builds).__name__}.")
        if getattr(builds, "by_graph", False):
            raise RenderError("builds= of one graph's drawing takes that graph's builds: "
                              "mp.build().of_graph('g0') (MultiGraphPartition.render(builds=mp.build()) draws all).")
        tags = set(p.records.subgraph_tag)
        mine = list(rows)
        unknown = sorted({r.subgraph for r in mine} - tags)[:3]
        if unknown:
            raise RenderError("builds= must be the builds of this partition (part.build()); its subgraphs "
                              f"{unknown} are not in this one.")
        self.rows = {r.subgraph: r for r in mine}
        self.builds = builds
        t = self.t = p.records
        self.tag_of_node = [t.subgraph_tag[k] if k >= 0 else None for k in t.subgraph]

    def decorate_subgraph(self, k: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        row = self.rows.get(self.t.subgraph_tag[k])
        if row is None:
            return
        if row.built:
            lines.append(f'<FONT POINT-SIZE="9" COLOR="{BUILT}">engine built here · {html(_mb(row.engine_bytes))}'
                         f'</FONT>')
            tip.append(f"built on this machine: {row.layers} TensorRT layers, {_mb(row.engine_bytes)} "
                       f"({self.builds.where()})")
            self._profile(row, tip)
            return
        attrs["color"] = FAILED
        attrs["penwidth"] = max(float(attrs.get("penwidth") or 1.0), 3.0)
        lines.append(f'<FONT POINT-SIZE="9" COLOR="{FAILED}"><B>engine fails at {html(row.stage)}</B>: '
                     f'{html(row.error, 90)}</FONT>')
        at = f" at node {row.node}" if row.node else ""
        tip.append(f"fails at {row.stage}{at}: {row.error}")
        tip.append(f"then: {row.runs_instead}")
        if row.fix:
            tip.append(f"fix: {row.fix}")
        self._profile(row, tip)

    @staticmethod
    def _profile(row: BuildRow, tip: list[str]) -> None:
        """The engine's optimization profile, when an input is dynamic (min → opt → max)."""
        if "→" in row.profile:
            tip.append(f"optimization profile: {row.profile}")

    def decorate_ops(self, ops: Sequence[int], lines: list[str], tip: list[str], attrs: dict,
                     bar: bool = True) -> None:
        tags = {self.tag_of_node[i] for i in ops} - {None}
        rows = [self.rows[tag] for tag in sorted(str(t) for t in tags) if tag in self.rows]
        if not rows:
            return
        failed = [r for r in rows if not r.built]
        if failed:
            attrs["color"] = FAILED
            attrs["penwidth"] = max(float(attrs.get("penwidth") or 1.0), 3.0)
            lines.append(f'<FONT POINT-SIZE="9" COLOR="{FAILED}"><B>{len(failed)} of {len(rows)} engine(s) fail'
                         f'</B> ({html(failed[0].stage)})</FONT>')
            tip.append(f"{failed[0].subgraph} fails at {failed[0].stage}: {failed[0].error}")
        else:
            lines.append(f'<FONT POINT-SIZE="9" COLOR="{BUILT}">{len(rows)} engine(s) built here</FONT>')

    def title(self) -> str:
        return f"built here: {self.builds.headline()}"

    def legend_html(self) -> str:
        return (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="0"><TR><TD ALIGN="LEFT" COLSPAN="2">'
                f'engines {html(self.builds.where(), 120)}</TD></TR><TR>'
                f'<TD><FONT POINT-SIZE="9" COLOR="{BUILT}">engine built here</FONT></TD>'
                f'<TD BORDER="3" COLOR="{FAILED}" CELLPADDING="2"><FONT POINT-SIZE="9">engine fails</FONT></TD>'
                f'</TR></TABLE>')


__all__ = ["BuildMarks", "BUILT", "FAILED"]
