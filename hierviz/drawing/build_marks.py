"""The builds overlay: each TensorRT engine marked as built on this machine (its size) or
failed (the stage and the first line of the error), from `part.build()`
(`render(..., builds=part.build())`, `save(..., builds=...)`).

A failed engine's border is drawn red and thick; its tooltip says what Torch-TensorRT then
runs and the fix that was shown to build. With builds from `with_repros()`, the nodes of its
smallest failing part (hv.Repro) get an orange border in the full and focus views, and the
engine's label and tooltip say how many they are. A module box, or a box of several subgraphs,
says how many of its engines built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from hierviz.drawing.dot import html
from hierviz.drawing.overlays import Overlay
from hierviz.errors import RenderError

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.building.build_row import BuildRow
    from hierviz.building.builds import Builds
    from hierviz.partitioner import Partition

FAILED = "#C62828"
BUILT = "#2E7D32"
REPRO = "#EF6C00"  # the border of a node in a failed engine's smallest failing part


def _mb(n: Any) -> str:
    mb = float(n or 0) / 1e6
    return f"{mb:.0f} MB" if mb >= 10 else f"{mb:.1f} MB"


class BuildMarks(Overlay):
    """The rows of one hv.Builds of partition `p`, by subgraph tag."""

    def __init__(self, p: "Partition", builds: Builds) -> None:  # builds: what the user passed, checked
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
        self.repros = {tag: builds.repro_for(tag) for tag, r in self.rows.items() if not r.built}
        self.repros = {tag: found for tag, found in self.repros.items() if found is not None}
        self.in_repro = {t.position[name]: tag for tag, found in self.repros.items() for name in found.nodes
                         if name in t.position and self.tag_of_node[t.position[name]] == tag}

    def decorate_node(self, i: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        tag = self.in_repro.get(i)
        if tag is None:
            return
        found = self.repros[tag]
        attrs["color"] = REPRO
        attrs["penwidth"] = max(float(attrs.get("penwidth") or 1.0), 3.0)
        lines.append(f'<FONT POINT-SIZE="8" COLOR="{REPRO}">in the smallest failing part</FONT>')
        tip.append(f"in the smallest failing part of {tag}: {_count(found.nodes)} that fail at {found.stage} "
                   f"as the engine does (builds.repro_for({tag!r}).save(folder) writes a repro to file upstream)")

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
        found = self.repros.get(row.subgraph)
        if found is not None:
            lines.append(f'<FONT POINT-SIZE="9" COLOR="{REPRO}">the smallest failing part: {_count(found.nodes)}'
                         f'</FONT>')
            tip.append(f"the smallest failing part: {_nodes(found.nodes)}; {found.headline()}")
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
            found = self.repros.get(failed[0].subgraph)
            if found is not None:
                tip.append(f"the smallest failing part: {_nodes(found.nodes)}")
        else:
            lines.append(f'<FONT POINT-SIZE="9" COLOR="{BUILT}">{len(rows)} engine(s) built here</FONT>')

    def title(self) -> str:
        return f"built here: {self.builds.headline(short=True)}"

    def legend_html(self) -> str:
        repro = (f'<TD BORDER="3" COLOR="{REPRO}" CELLPADDING="2"><FONT POINT-SIZE="9">in its smallest failing part'
                 f'</FONT></TD>' if self.repros else "")
        fails = (f'<TD BORDER="3" COLOR="{FAILED}" CELLPADDING="2"><FONT POINT-SIZE="9">engine fails</FONT></TD>'
                 if any(not row.built for row in self.rows.values()) else "")  # only what the picture shows
        return (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="0"><TR><TD ALIGN="LEFT" '
                f'COLSPAN="{1 + bool(fails) + bool(repro)}">engines {html(self.builds.where(), 120)}</TD></TR><TR>'
                f'<TD><FONT POINT-SIZE="9" COLOR="{BUILT}">engine built here</FONT></TD>'
                f'{fails}{repro}</TR></TABLE>')


def _count(names: Sequence[str]) -> str:
    """'12 nodes', '1 node'."""
    return f"{len(names)} node{'s' if len(names) != 1 else ''}"


def _nodes(names: Sequence[str], shown: int = 6) -> str:
    """'12 nodes (addmm, _reshape_copy_1, split, getitem, getitem_1, getitem_2 and 6 more)'."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"{_count(names)} ({', '.join(names[:shown])}{more})"


__all__ = ["BuildMarks", "BUILT", "FAILED", "REPRO"]
