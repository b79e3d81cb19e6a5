"""The graph-by-graph picture: a model that torch.compile splits at graph breaks, in one drawing.

`MultiGraphPartition.render()` (hv.partition(..., ir="torch_compile")) draws every dynamo graph
in execution order, top to bottom, each as a frame (a graphviz cluster) holding that graph's
partition drawn by today's views (views.render: full, collapsed or modules; `auto` picks per
graph, with budget.py, from a node budget the graphs share, so a few big graphs draw as
modules / collapsed and the small ones in full). Between two frames a graph-break marker says
dynamo's reason and the user's `file:line` and code; the Python from the break to the next
graph runs eagerly in PyTorch. A break that ended no graph (dynamo had traced nothing since
the last one) is drawn the same, and says so. Before each frame but the first, a start marker
says why that graph starts (the capture's `starts`): dynamo resumes a frame after a break, or
a new frame is called from Python that dynamo ran eagerly (two graphs can meet with no break
between them: the break is inside a loop of the frame that calls them). Where a break marker
is right above the frame, that marker says it ("then g2 starts: ..."): one box, not two.

The picture opens with an overview under its legend (`overview`): one row per graph, its ops,
a bar of its ops' backends and what follows it (its breaks, how the next graph starts); in an
SVG each row links to its frame (`id="frame_g<k>"`). The frames are aligned on one axis, their
left edges in one line (align.py: `info["aligned"]` asks graphviz_run.layout for it).

Frames are the views' own DOT bodies placed in a cluster (dot.nest: ids prefixed, each view's
own legend left out); one legend at the top explains the backends, the node styles drawn, the
frames and the marker. Overlays go to each graph: `measurement=` hv.measure(part, inputs) of
the whole model (each frame its graph's rows, graph_times.py) or one hv.Measurement per graph,
`against=` another MultiGraphPartition of the same model, `highlight=` as for a Partition.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from hierviz.drawing import palette
from hierviz.drawing.by_graph.breaks_and_starts import graph_start
from hierviz.drawing.by_graph.graph_times import GraphTimes
from hierviz.drawing.by_graph.graphs_legend import legend
from hierviz.drawing.by_graph.markers import chain
from hierviz.drawing.by_graph.view_plan import plan_views
from hierviz.drawing.dot import DotWriter, Nested, nest
from hierviz.drawing.views import VIEWS, render
from hierviz.errors import RenderError
from hierviz.foundation.gcpause import gc_paused
from hierviz.partitioner import CALLABLE_OPS, MultiGraphPartition
from hierviz.partitioner.by_graph.per_graph import per_graph

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.building.builds import Builds
    from hierviz.drawing.diagram import Diagram
    from hierviz.partitioner import Partition

def overlay_per_graph(mp: "MultiGraphPartition", value: Any, what: str) -> list[Any]:
    """An overlay argument given for the whole model, as one value per graph (None: left out)."""
    n = len(mp.graphs)
    if value is None:
        return [None] * n
    items: list[Any] | None
    if what == "against":
        if not isinstance(value, MultiGraphPartition):
            raise RenderError("against= of a graph-by-graph partition is another one of the same model "
                              "(hv.partition(model, inputs, ir='torch_compile', ...)), not a "
                              f"{type(value).__name__}; to compare one graph: part.graphs[k].render(against=...).")
        items = list(value.graphs)
    elif what == "measurement" and GraphTimes.of_graphs(value):  # hv.measure of the whole model
        ran = set(value.per_subgraph["graph"].tolist())
        items = [GraphTimes(value, k) if k in ran else None for k in range(n)]
    else:
        items = list(value) if isinstance(value, (list, tuple)) else None
        if items is None:
            raise RenderError(f"{what}= of a graph-by-graph partition is hv.measure(part, inputs) of it, or one "
                              f"value per graph (a list, None for a graph left out), not a {type(value).__name__}; "
                              f"for one graph: part.graphs[k].render({what}=...).")
    if len(items) != n:
        raise RenderError(f"{what}= has {len(items)} graph(s) and this partition {n}: pass one per graph, in "
                          "execution order (the same model captured the same way).")
    return items


def _graph_builds(builds: Builds, k: int) -> Builds:
    """Graph k's part of a MultiGraphPartition's builds (mp.build())."""
    if not getattr(builds, "by_graph", False) or not hasattr(builds, "of_graph"):
        raise RenderError(f"builds= takes what mp.build() returned (hv.Builds with a graph column), not "
                          f"{type(builds).__name__}.")
    return builds.of_graph(f"g{k}")


def render_graphs(mp: "MultiGraphPartition", view: str = "auto", *, focus: Any = None, max_nodes: int | None = None,
                  weights: bool = False, depth: int | None = None, measurement: Any = None, against: Any = None,
                  numerics: Any = None, highlight: str | None = None, builds: Builds | None = None) -> "Diagram":
    """Every graph of `mp` in one Diagram, in execution order (see the module docstring).

    view: 'auto' (per graph: full when it fits its share of `max_nodes`, else modules or
    collapsed), 'full', 'collapsed' or 'modules' (a graph without submodules: collapsed).
    max_nodes: the nodes drawn in full over all graphs (auto); each view's limit otherwise.
    measurement= (one hv.Measurement per graph), against= (another MultiGraphPartition of the
    same model), highlight="blockers", builds= (mp.build(): each engine marked built or failed)
    and depth= / weights= go to each graph's view."""
    from hierviz.drawing.diagram import Diagram  # imports graphviz

    if view not in VIEWS:
        raise RenderError(f"unknown view {view!r}; views are {', '.join(v for v in VIEWS if v != 'focus')}.")
    if view == "focus" or focus is not None:
        raise RenderError("focus= draws around one node of one graph: part.graphs[k].render(focus='add_3') "
                          "(graph k of the qualified name 'g<k>/add_3').")
    if numerics is not None:
        raise RenderError("numerics= is not drawn graph by graph yet: pass one graph's hv.numerics result to "
                          "part.graphs[k].render(numerics=...).")
    times = overlay_per_graph(mp, measurement, "measurement")
    others = overlay_per_graph(mp, against, "against")
    built = [None if builds is None else _graph_builds(builds, k) for k in range(len(mp))]
    plans = plan_views(mp, view, max_nodes, bool(weights), depth)

    def draw(p: "Partition", plan: tuple[str, int | None, str | None], time: Any, other: Any, mine: Any) -> "Diagram":
        view_k, max_k, _ = plan
        return render(p, view_k, max_nodes=max_k, weights=weights, depth=depth if view_k == "modules" else None,
                      measurement=time, against=other, highlight=highlight, builds=mine)

    w = DotWriter()
    palette.defaults(w)
    w.defaults("graph", compound=True, ranksep=0.3)
    with gc_paused():
        diagrams = per_graph(draw, mp, plans, times, others, built)
        frames: list[tuple[int, Nested]] = [(k, nest(list(d.body), f"g{k}_")) for k, d in enumerate(diagrams)]
    drawn = [{**d.info, "auto": note} for d, (_, _, note) in zip(diagrams, plans)]
    reasons: Counter = Counter()
    for p, info in zip(mp, drawn):
        if info["view"] == "full":
            reasons.update(drawn_reasons(p, bool(weights)))
    chain(mp, w, frames, drawn)
    views_used = [info["view"] for info in drawn]
    legend(mp, w, views_used, reasons, [bool(times[k]) or bool(others[k]) for k in range(len(mp.graphs))],
           highlight)
    starts = sum(1 for k in range(1, len(mp.graphs)) if graph_start(mp, k))
    nodes = sum(int(info.get("nodes", 0)) for info in drawn) + len(mp.breaks) + starts
    return Diagram(w.lines, {"view": "graphs", "views": views_used, "graphs": len(mp.graphs),
                             "breaks": len(mp.breaks), "starts": starts, "nodes": nodes, "frames": drawn,
                             "aligned": True}, comment="hierviz graph-by-graph view")


def drawn_reasons(p: "Partition", weights: bool) -> Counter:
    """The reason codes of the ops a full view of `p` draws (the legend's node samples)."""
    t = p.records
    return Counter(t.reason_code[i] for i in range(len(t)) if t.kind[i] in CALLABLE_OPS
                   and (weights or t.kind[i] != "get_attr"))


__all__ = ["render_graphs", "overlay_per_graph", "drawn_reasons"]
