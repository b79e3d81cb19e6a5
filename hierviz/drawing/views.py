"""`render`: a partition drawn as DOT, by view. Each view lives in its own module:

- full (graph.py):          every node, colored by backend, one cluster per subgraph, a legend
- collapsed (collapsed.py): one box per subgraph (consecutive subgraphs grouped when there are
                            more than `max_nodes`), graph inputs and output, crossing tensors
- focus (focus.py):         the neighbourhood of a node (radius k), or one subgraph and its boundary
- modules (modules.py):     grouped by nn.Module, repeated blocks rolled up
- auto:                     full up to `max_nodes` drawn nodes if dot can lay that out in about
                            a second and the picture is at most 8,000 x 4,000 px (budget.py,
                            estimated without a layout); else modules (collapsed for a graph
                            without submodules), the title saying why

Views read the partition's public record only (`Partition.records`, context.py); every view is
linear in the graph size. No layout runs here: graphviz_run.py runs `dot`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hierviz.drawing import palette
from hierviz.drawing.budget import DEFAULT_MAX_NODES, full_size, layout_budget, resolve_limit, too_big, work
from hierviz.drawing.context import Ctx, make_overlays
from hierviz.drawing.dot import DotWriter
from hierviz.drawing.text import op_short
from hierviz.errors import RenderError
from hierviz.foundation.gcpause import gc_paused
from hierviz.partitioner.counts import count_text

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.building.builds import Builds
    from hierviz.drawing.diagram import Diagram
    from hierviz.partitioner import Partition

VIEWS = ("auto", "full", "collapsed", "focus", "modules")


def render(p: "Partition", view: str = "auto", *, focus: Any = None, max_nodes: int | None = None,
           radius: int = 2, weights: bool = False, depth: int | None = None, measurement: Any = None,
           against: Any = None, numerics: Any = None, highlight: str | None = None,
           builds: Builds | None = None) -> "Diagram":
    """The partition as a `Diagram` (a `graphviz.Digraph` with `.info`; DOT only, no layout).

    view: 'full' (every node), 'collapsed' (one box per subgraph), 'focus' (around `focus`:
    a node name, or a subgraph tag for its inside and boundary), 'modules', or 'auto' (full
    up to `max_nodes` drawn nodes when the picture is at most 8,000 px tall and 4,000 wide,
    else modules, or collapsed without submodules; the title says why; 'focus' when `focus`
    is given).
    max_nodes: auto's threshold, and the most boxes/nodes collapsed and focus draw
    (default DEFAULT_MAX_NODES, what graphviz lays out in about a second).
    radius: the focus neighbourhood, in edges. weights: also draw weights/constants.
    view='modules' groups nodes by nn.Module (`depth` levels deep; `focus`: a module path).
    measurement: a hv.Measurement of p, overlaid as time per subgraph / module.
    against: another Partition of the same graph; what differs from it is marked, the rest dimmed.
    numerics: a hv.numerics result of p; each subgraph's border coloured by its isolated error.
    highlight: "blockers" marks the nodes of the top causes of `p.blockers()` in red.
    builds: what `p.build()` returned; each engine marked built (its size) or failed (its stage
    and error, with what Torch-TensorRT then runs in its tooltip).
    """
    from hierviz.drawing.diagram import Diagram  # imports graphviz

    if view not in VIEWS:
        raise RenderError(f"unknown view {view!r}; views are {', '.join(VIEWS)}.")
    if isinstance(radius, bool) or not isinstance(radius, int) or radius < 0:
        raise RenderError(f"radius must be an integer >= 0, not {radius!r}.")
    limit = resolve_limit(max_nodes)
    overlays = make_overlays(p, measurement, against, numerics, highlight, builds)
    if view in ("auto", "focus") and isinstance(focus, str):
        from hierviz.drawing.module_tree import is_module  # focus on a module: its inside, in the module view

        if is_module(p, focus):
            view = "modules"
    ctx = Ctx(p, limit, bool(weights), overlays=overlays)
    note = None
    if view == "auto" and focus is None and depth is None:
        view, note = choose(p, ctx)
    if view == "modules":
        from hierviz.drawing.modules import render_modules

        lines, info = render_modules(p, focus=focus, depth=depth, max_nodes=max_nodes, overlays=overlays,
                                     note=note)
        return Diagram(lines, {"view": "modules", **info, "auto": note}, comment="hierviz modules view")
    if depth is not None:
        raise RenderError("depth= is for view='modules' (how many module levels to draw).")
    ctx.auto_note = note
    if view == "auto":
        view = "focus" if focus is not None else "full"
    if focus is not None and view != "focus":
        raise RenderError(f"focus= draws the focus view; drop view={view!r} (or pass view='focus').")
    tags = ctx.t.subgraph_tag
    if view == "focus" and focus is None:
        raise RenderError("view='focus' needs focus=<node name> or focus=<subgraph tag>, e.g. "
                          f"focus={tags[0]!r}." if tags else
                          "view='focus' needs focus=<node name> or focus=<subgraph tag>.")
    w = DotWriter()
    palette.defaults(w)
    with gc_paused():
        if view == "full":
            from hierviz.drawing.graph import full

            info = full(ctx, w)
        elif view == "collapsed":
            from hierviz.drawing.collapsed import collapsed

            info = collapsed(ctx, w)
        else:
            from hierviz.drawing.focus import focus_view

            info = focus_view(ctx, w, focus, radius)
    return Diagram(w.lines, {"view": view, **info, "auto": note}, comment=f"hierviz {view} view")


def choose(p: "Partition", ctx: Ctx) -> tuple[str, str | None]:
    """auto's view and, when it is not the full one, why (said in the title): the full view
    when dot lays it out in about a second (budget.py) and its picture, estimated without a
    layout, is at most MAX_HEIGHT_PX tall and MAX_WIDTH_PX wide; otherwise the module view
    (the collapsed view for a graph without submodules)."""
    from hierviz.drawing.module_tree import build_tree

    limit = ctx.max_nodes
    count = ctx.drawn_count()
    if count > limit:
        why = f"{count_text('drawn', count)} (the nodes, the graph's inputs and output) > max_nodes={limit:,}"
    else:
        drawn = ctx.all_drawn()
        size = ctx.full_px = full_size(ctx, drawn)
        if too_big(size):
            why = f"the full view would be about {size[0]:,}\u00d7{size[1]:,} px"
        else:
            ctx.full_work = work(ctx, drawn)
            if ctx.full_work <= layout_budget(limit):
                return "full", None
            why = "the full view would take graphviz long to lay out"
    view = "modules" if build_tree(ctx.t).children else "collapsed"
    chosen = "module" if view == "modules" else "collapsed"
    return view, f"auto chose the {chosen} view: {why}; view='full' draws every node"


__all__ = ["render", "VIEWS", "DEFAULT_MAX_NODES", "op_short"]
