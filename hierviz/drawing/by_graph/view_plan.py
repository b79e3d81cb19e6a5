"""The graph-by-graph picture's plan: the view each graph is drawn in and its share of the node
budget (`plan_views`, `shares`), the tallest full frames drawn smaller until the picture fits
(`fit_height`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from hierviz.drawing.budget import LEGEND_PT, MAX_HEIGHT_PX, PX_PER_PT, full_size, resolve_limit
from hierviz.drawing.by_graph.breaks_and_starts import graph_start
from hierviz.drawing.context import Ctx
from hierviz.drawing.views import choose
from hierviz.partitioner.by_graph.per_graph import per_graph

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import MultiGraphPartition, Partition

# A graph drawn in full gets at least this many nodes of the shared budget (else collapsed).
MIN_SHARE = 40
# What a frame drawn as modules / collapsed, and a break marker, add to the picture's height
# (px at 96 dpi; measured on the toys and fasterrcnn: 180-330 and 70-100).
SMALL_FRAME_PX = 300
MARKER_PX = 90
START_PX = 45  # a start marker: two or three short lines
OVERVIEW_ROW_PX = 18  # a row of the overview

def shares(counts: Sequence[int], limit: int) -> list[int]:
    """Each graph's part of the node budget `limit`: the smallest graphs first get what they
    need, the rest is split evenly among the bigger ones (at least MIN_SHARE each, or `limit`
    when that is less)."""
    out = [0] * len(counts)
    left = limit
    floor = min(MIN_SHARE, limit)
    order = sorted(range(len(counts)), key=lambda k: (counts[k], k))
    for pos, k in enumerate(order):
        fair = max(left // (len(order) - pos), floor)
        out[k] = fair
        left = max(left - min(counts[k], fair), 0)
    return out


def plan_views(mp: "MultiGraphPartition", view: str, max_nodes: int | None, weights: bool,
               depth: int | None) -> list[tuple[str, int | None, str | None]]:
    """Per graph: the view it is drawn in, the max_nodes its view gets, and why auto chose it
    (None when asked for, or full). `auto` shares `max_nodes` over the graphs (shares); a
    view asked for gets `max_nodes` as given, in every graph."""
    from hierviz.drawing.module_tree import build_tree

    limit = resolve_limit(max_nodes)
    share = shares(per_graph(lambda p: Ctx(p, limit, weights).drawn_count(), mp), limit)

    def one(p: "Partition", budget: int) -> tuple[str, int | None, str | None]:
        if view == "auto" and depth is None:  # the single-graph auto view, within the graph's share
            chosen, note = choose(p, Ctx(p, budget, weights))
            if note:
                note = note.split(";", 1)[0].replace(f"max_nodes={budget:,}",
                                                     f"its share {budget:,} of max_nodes={limit:,}")
            return chosen, budget if chosen != "modules" else None, note
        want = "modules" if view == "auto" else view  # depth= asks for the module view, as for a Partition
        if want == "modules" and not build_tree(p.records).children:
            return "collapsed", max_nodes, "no submodules to group by: collapsed view"
        return want, max_nodes, None

    out = per_graph(one, mp, share)
    if view == "auto" and depth is None:
        fit_height(mp, out, share, weights)
    return out


def fit_height(mp: "MultiGraphPartition", out: list[tuple[str, int | None, str | None]], share: list[int],
               weights: bool) -> None:
    """auto's second rule: the frames stacked stay within MAX_HEIGHT_PX (budget.py's limit for
    one graph's full view), so the tallest full frames are drawn as modules / collapsed
    instead until they do, or only frames under 3 * SMALL_FRAME_PX are left (a small graph's
    full view is as short as its collapsed one); each estimated without a layout (budget.full_size)."""
    from hierviz.drawing.module_tree import build_tree

    legend = round(LEGEND_PT[1] * PX_PER_PT)  # full_size counts a legend; a frame has none
    height = {k: full_size(ctx, ctx.all_drawn())[1] - legend for k, (v, _, _) in enumerate(out) if v == "full"
              for ctx in (Ctx(mp.graphs[k], share[k], weights),)}
    total = (sum(height.values()) + SMALL_FRAME_PX * (len(out) - len(height)) + MARKER_PX * len(mp.breaks)
             + START_PX * sum(1 for k in range(1, len(out)) if graph_start(mp, k) and not mp.breaks_after(k - 1))
             + OVERVIEW_ROW_PX * len(out))
    for k in sorted(height, key=lambda k: (-height[k], k)):
        if total <= MAX_HEIGHT_PX or height[k] <= 3 * SMALL_FRAME_PX:  # a small graph drawn smaller saves little
            break
        why = f"auto chose the {{}} view: all {len(out)} graphs drawn in full would be about {total:,} px tall"
        if build_tree(mp.graphs[k].records).children:
            out[k] = ("modules", None, why.format("module"))
        else:
            out[k] = ("collapsed", share[k], why.format("collapsed"))
        total -= height[k] - SMALL_FRAME_PX
