"""The graph label of every view: title, config and stats, then the legend (backends, node
styles, edges). It lives in the label, not in a cluster, so it costs dot no layout work and
always sits at the top left."""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from hierviz.drawing import palette
from hierviz.drawing.context import Ctx
from hierviz.drawing.dot import DotWriter, Html, html
from hierviz.drawing.overlays import titles
from hierviz.drawing.text import BR_LEFT, plural
from hierviz.partitioner import GRAPH
from hierviz.partitioner.counts import by_backend_text, count_text


OCTAGON_ID = "hv:legend:octagon:"


def swatch(text: str, fill: str, line: str, *, border: int = 1, style: str | None = "rounded",
            double: bool = False, octagon: str | None = None) -> str:
    """One legend cell: `text` in a box drawn like the nodes it stands for. An HTML-label cell
    is a rectangle: `octagon` (a reason code) marks the cell, and octagon_swatches() cuts its
    corners in the SVG."""
    st = f' STYLE="{style}"' if style else ""
    if octagon:  # graphviz writes a cell's ID into the SVG only for a link
        st += f' ID="{OCTAGON_ID}{octagon}" HREF="#" TOOLTIP="octagon"'
    if double:
        return (f'<TD BORDER="1" COLOR="{line}" CELLPADDING="1"><TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" '
                f'CELLPADDING="2" COLOR="{line}"><TR><TD BGCOLOR="{fill}">{text}</TD></TR></TABLE></TD>')
    return f'<TD BGCOLOR="{fill}" BORDER="{border}" COLOR="{line}"{st} CELLPADDING="3" BALIGN="LEFT">{text}</TD>'


def legend_grid(columns: Sequence[tuple[str, Sequence[str]]], note: str, note_title: str = "edges") -> str:
    """The legend as one grid: a column of swatches per heading, rows shared (so no column
    stretches its swatches to another's height), and the free-text note spanning all rows."""
    rows = max(len(cells) for _, cells in columns)
    head = "".join(f'<TD ALIGN="LEFT"><I>{title}</I></TD>' for title, _ in columns)
    lines = [f'<TR>{head}<TD ALIGN="LEFT"><I>{note_title}</I></TD></TR>']
    for r in range(rows):
        cells = "".join(col[r] if r < len(col) else "<TD></TD>" for _, col in columns)
        if r == 0:
            cells += f'<TD ALIGN="LEFT" VALIGN="TOP" BALIGN="LEFT" ROWSPAN="{rows}">{note}</TD>'
        lines.append(f"<TR>{cells}</TR>")
    return ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="0">' + "".join(lines) + "</TABLE>")


def node_samples(ctx: Ctx) -> list[str]:
    """The legend's node column, generated from palette.STYLES (the table the nodes are drawn
    from): one sample per reason code a drawn node has."""
    return style_samples(ctx.reasons, ctx.p.config.min_block_size)


def style_samples(reasons: Mapping[str, int], min_block_size: int) -> list[str]:
    """The node column for the reason codes `reasons` counts (code -> drawn nodes)."""
    samples = []
    for code, st in palette.STYLES.items():
        if st.legend is None or not (st.always or reasons.get(code)):
            continue
        sw = st.swatch
        text = st.legend.format(min_block_size=min_block_size, br=BR_LEFT)
        samples.append(swatch(text, palette.fill(sw.on), sw.line or palette.border(sw.on), border=sw.border,
                              style=sw.style, double=sw.double, octagon=code if st.shape == "octagon" else None))
    return samples


_OCTAGON_CELL = re.compile(rf'(<g id="a_{OCTAGON_ID}[^"]*">)(.*?)(</g>)', re.S)
_POLYGON = re.compile(r'(<polygon [^>]*points=")([^"]*)(")')
_LINK = re.compile(r"<a [^>]*>\n?|</a>\n?")


def octagon_swatches(svg: str) -> str:
    """`svg` with the rectangles of the legend's octagon cells (see swatch) cut into octagons,
    and the cells' links, there only to carry the id, taken off."""
    return _OCTAGON_CELL.sub(
        lambda m: m.group(1) + _LINK.sub("", _POLYGON.sub(_cut_corners, m.group(2))) + m.group(3), svg)


def _cut_corners(m: re.Match[str]) -> str:
    points = [tuple(float(v) for v in p.split(",")) for p in m.group(2).split()]
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    c = min(x1 - x0, y1 - y0) * 0.3
    corners = [(x0 + c, y0), (x1 - c, y0), (x1, y0 + c), (x1, y1 - c), (x1 - c, y1), (x0 + c, y1), (x0, y1 - c),
               (x0, y0 + c), (x0 + c, y0)]
    return m.group(1) + " ".join(f"{x:.2f},{y:.2f}" for x, y in corners) + m.group(3)


def title(ctx: Ctx, w: DotWriter, view_text: str, *, collapsed: bool = False, grouped: bool = False,
          notice: str | None = None) -> None:
    """The graph label: view, config and stats, a notice (in italics, e.g. why auto chose this
    view, or that the picture is past graphviz's bitmap limit), then the legend.

    The legend lives in the label, not in a cluster, so it costs dot no layout work and
    always sits at the top left."""
    p = ctx.p
    s = p.stats
    if ctx.auto_note:
        view_text += " \u00b7 chosen by auto"
    view_text += titles(ctx.overlays)  # e.g. the diff diagram: its counts in the title
    by = by_backend_text(s)
    stats = (f"{html(p.config.label())}  ·  {count_text('nodes', s['nodes'])}, {plural(s['subgraphs'], 'subgraph')} "
             f"({html(by)})  ·  coverage {s['coverage']:.0%}  ·  {plural(s['boundary_tensors'], 'boundary tensor')}")
    counts = s["subgraphs_by_backend"]
    backends = list(p.backends) + sorted(b for b in ctx.backends_seen if b not in p.backends and b != GRAPH)
    cells = [swatch(f"{html(b)} · {plural(counts.get(b, 0), 'subgraph')}", palette.fill(b), palette.border(b))
             for b in backends]
    columns: list[tuple[str, Sequence[str]]] = [("backends", cells)]
    if not collapsed:
        columns.append(("nodes", node_samples(ctx)))
        note = (f"bold, labelled dtype[shape]:{BR_LEFT}a tensor crossing subgraphs{BR_LEFT}"
                f"thin grey: inside a subgraph{BR_LEFT}"
                f"{BR_LEFT}SVG: hover nodes, edges and{BR_LEFT}subgraphs for details{BR_LEFT}")
    else:
        text = (f"tensors crossing between{BR_LEFT}subgraphs (label: dtype[shape],{BR_LEFT}"
                f"n × dtype[shape], or a count){BR_LEFT}")
        if grouped:
            text += (f"{BR_LEFT}striped boxes: runs of consecutive{BR_LEFT}subgraphs; stripe width: share{BR_LEFT}"
                     f"of ops per backend{BR_LEFT}")
        text += f"{BR_LEFT}detail: view='full', or focus={BR_LEFT}a subgraph tag or node name{BR_LEFT}"
        note = text
    # what measurement= (time), numerics= (the colour scale) and against= (diff) add to the drawing
    overlays = "".join(f'<TR><TD ALIGN="LEFT">{overlay.legend_html()}</TD></TR>' for overlay in ctx.overlays)
    for extra in (notice, ctx.auto_note):
        if extra:
            overlays = f'<TR><TD ALIGN="LEFT"><I>{html(extra)}</I></TD></TR>' + overlays
    label = (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
             f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="14"><B>{html(view_text)}</B></FONT></TD></TR>'
             f'<TR><TD ALIGN="LEFT">{stats}</TD></TR>{overlays}'
             f'<TR><TD ALIGN="LEFT">{legend_grid(columns, note)}</TD></TR></TABLE>')
    w.defaults("graph", label=Html(label))


__all__ = ["OCTAGON_ID", "octagon_swatches", "swatch", "legend_grid", "node_samples", "style_samples", "title"]
