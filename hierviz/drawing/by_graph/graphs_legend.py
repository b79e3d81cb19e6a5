"""The graph-by-graph picture's one legend: the model's totals, the backends, the node styles drawn,
the frames and the markers, with the overview under it."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Sequence

from hierviz.drawing import palette
from hierviz.drawing.by_graph.breaks_and_starts import graph_start
from hierviz.drawing.by_graph.overview import overview
from hierviz.drawing.dot import DotWriter, Html, html
from hierviz.drawing.legend import legend_grid, style_samples, swatch
from hierviz.drawing.text import BR_LEFT, plural
from hierviz.partitioner import GRAPH
from hierviz.partitioner.counts import by_backend_text

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import MultiGraphPartition

FRAME_NOTES = {
    "full": "full frames: every op, a cluster per subgraph",
    "collapsed": "collapsed frames: one box per subgraph (or run of subgraphs)",
    "modules": "module frames: one box per nn.Module (bar: its ops' backends; double border: repeated blocks)",
}


def legend(mp: "MultiGraphPartition", w: DotWriter, views_used: list[str], reasons: Counter,
           overlaid: list[bool], highlight: str | None) -> None:
    """The picture's label: title, settings and totals, then the legend (backends, the node
    styles the full frames draw, the frame and the break marker)."""
    s = mp.stats
    model = getattr(mp.capture, "model", "model")
    text = (f"hierviz \u00b7 graph by graph \u00b7 {model}: {plural(s['graphs'], 'graph')}, "
            f"{plural(s['graph_breaks'], 'graph break')}")
    if any(overlaid):
        text += " \u00b7 with overlays"
    if highlight:
        text += f" \u00b7 highlight={highlight}"
    by = by_backend_text(s)
    totals = (f"{html(mp.config.label())} \u00b7 {mp.engine} engine \u00b7 {s['compute_ops']:,} ops, "
              f"{plural(s['subgraphs'], 'subgraph')}" + (f" ({html(by)})" if by else "")
              + f" \u00b7 coverage {s['coverage']:.0%}")
    if s["graphs_left_whole"]:
        totals += f" \u00b7 {plural(s['graphs_left_whole'], 'graph')} left whole in PyTorch"
    backends = list(mp.config.priority) + [b for b in s["subgraphs_by_backend"] if b not in mp.config.priority]
    counts = s["subgraphs_by_backend"]
    cells = [swatch(f"{html(b)} \u00b7 {plural(counts.get(b, 0), 'subgraph')}", palette.fill(b), palette.border(b))
             for b in backends if b != GRAPH]
    columns: list[tuple[str, Sequence[str]]] = [("backends", cells)]
    if "full" in views_used:
        columns.append(("nodes", style_samples(reasons, mp.config.min_block_size)))
    order = [swatch(f"<B>frame</B>: one dynamo graph{BR_LEFT}(its function, file:line, ops){BR_LEFT}",
                    "#FFFFFF", palette.FRAME_LINE),
             swatch(f"<B>graph break</B>: dynamo's reason{BR_LEFT}and the user's file:line;{BR_LEFT}"
                    f"the Python after it runs{BR_LEFT}eagerly, until the next graph{BR_LEFT}",
                    palette.BREAK_FILL, palette.BREAK_LINE, style="rounded,dashed")]
    if any(graph_start(mp, k) for k in range(1, len(mp.graphs))):
        order.append(swatch(f"<B>g&lt;k&gt; starts</B>: dynamo resumes a{BR_LEFT}frame, or a new frame is{BR_LEFT}"
                            f"called from eager Python{BR_LEFT}",
                            palette.START_FILL, palette.START_LINE))
    columns.append(("torch.compile", order))
    notes = [FRAME_NOTES[v] for v in ("full", "collapsed", "modules") if v in views_used]
    notes.append("top to bottom: execution order")
    notes.append("SVG: hover frames, breaks and nodes for details")
    note = "".join(f"{html(n)}{BR_LEFT}" for n in notes)
    rows = overview(mp) if len(mp.graphs) > 1 else ""
    label = (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
             f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="15"><B>{html(text)}</B></FONT></TD></TR>'
             f'<TR><TD ALIGN="LEFT">{totals}</TD></TR>'
             f'<TR><TD ALIGN="LEFT">{legend_grid(columns, note, note_title="frames")}</TD></TR>'
             + (f'<TR><TD ALIGN="LEFT">{rows}</TD></TR>' if rows else "") + '</TABLE>')
    w.defaults("graph", label=Html(label))
