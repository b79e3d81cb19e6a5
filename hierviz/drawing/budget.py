"""The one label-budget mechanism: how much layout work graphviz's `dot` will do for a
drawing, and the choices made from it before any DOT is written.

dot's time grows with the nodes it places plus the virtual nodes long edges need (one per
rank an edge spans), and twice that again when edges carry layout-placed labels. From that
estimate the views decide, in this order: full or collapsed (auto), `label` or `xlabel` edge
labels (full and focus), and how many consecutive subgraphs share a box (collapsed). Nothing
rewrites the DOT text afterwards.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from hierviz.drawing.context import Ctx
from hierviz.errors import RenderError

# The largest graph the auto view draws in full. Measured with benchmarks/render_scale.py
# (graphviz 2.43, one core): with clusters and labelled boundary edges, real models lay out
# in 0.1-0.6 s up to ~800 nodes (resnet50's 230: 0.15 s; a 32-layer BERT's 775: 0.6 s),
# while 1,160 nodes take 5.6 s and 4k nodes minutes: dot grows superlinearly.
DEFAULT_MAX_NODES = 800
# Aten graphs of real models need 4-4.5 units of work per node with labelled edges, so they
# reach max_nodes; graphs with many long skip edges (zoo.synthetic: 17 per node; 250 nodes
# took 0.9-1.5 s, 500 nodes 30 s) are collapsed.
LAYOUT_WORK_PER_NODE = 5
# Edge labels placed by the layout (`label`) are the most readable, but each is a virtual
# node, and dot's x-positioning can blow up with them: a 1,000-node chain of small clusters
# took over 2 minutes with labels and 0.4 s with `xlabel`s (placed after layout, may overlap).
# Labels are used up to this much work per max_nodes (real models up to ~500 nodes).
LABEL_WORK_PER_NODE = 3
# The largest picture the auto view draws in full, in pixels at 96 dpi (what a .png gets):
# taller or wider than this and it draws the module view (or the collapsed one) instead.
MAX_HEIGHT_PX = 8000
MAX_WIDTH_PX = 4000
PX_PER_PT = 96 / 72
# The full view's laid-out size, estimated without a layout: dot's ranks are about 40 pt
# apart (node, labelled edge, rank gap), nodes about 150 pt wide, and the legend about 250 pt
# tall and 600 pt wide (measured on resnet18, bert, vit_b_16, swin_t, deeplabv3, convnext:
# 38-43 pt per rank).
PT_PER_RANK = 40
PT_PER_NODE_WIDE = 150
LEGEND_PT = (600, 250)
# Each subgraph cluster adds its title (2-3 lines beside its top member) and the labels of
# the tensors crossing into it: 15-23 pt per subgraph measured (resnet18/50, bert, t5 with
# adds and SDPA in PyTorch, 15-49 subgraphs), so 24.
PT_PER_SUBGRAPH = 24
# A graph input (or weight) feeding more nodes or boxes than this gets one edge to its first
# user and a small reference node beside each other user: long edges from one input to
# every layer (attention masks, shared weights) cost dot seconds and draw a curtain of lines.
FANOUT = 4


def resolve_limit(max_nodes: int | None) -> int:
    if max_nodes is None:
        return DEFAULT_MAX_NODES
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise RenderError(f"max_nodes must be a positive integer, not {max_nodes!r}.")
    return max_nodes


def layout_budget(max_nodes: int) -> int:
    """Layout work (nodes + the rank span of edges, twice that with edge labels) that dot
    does in about a second, for a node limit of max_nodes."""
    return LAYOUT_WORK_PER_NODE * max_nodes


def span(edges: Iterable[tuple[int, int]], order_key: Any) -> int:
    """Total rank span of a DAG's edges, ranks by longest path, nodes visited by order_key
    (a topological order)."""
    preds: dict[int, list[int]] = {}
    nodes: set[int] = set()
    for a, b in edges:
        preds.setdefault(b, []).append(a)
        nodes.add(a)
        nodes.add(b)
    rank: dict[int, int] = {}
    total = 0
    for v in sorted(nodes, key=order_key):
        ps = preds.get(v, ())
        r = max((rank.get(a, 0) + 1 for a in ps), default=0)
        rank[v] = r
        total += sum(r - rank.get(a, 0) for a in ps)
    return total


def fanout_refs(ctx: Ctx, drawn: Sequence[int], inside: set[int]) -> set[tuple[int, int]]:
    """(input, user) edges drawn from a reference node instead: every use but the first of a
    graph input or weight with more than FANOUT drawn users."""
    t = ctx.t
    refs: set[tuple[int, int]] = set()
    for a in drawn:
        if t.kind[a] not in ("placeholder", "get_attr"):
            continue
        users = [u for u in t.users[a] if u in inside]
        if len(users) > FANOUT:
            refs.update((a, u) for u in sorted(users)[1:])
    return refs


def work(ctx: Ctx, drawn: Sequence[int]) -> int:
    """dot's layout work for drawing `drawn` in full with labelled edges (see layout_budget)."""
    inside = set(drawn)
    refs = fanout_refs(ctx, drawn, inside)
    edges = [(a, j) for j in drawn for a in ctx.t.inputs[j] if a in inside and (a, j) not in refs]
    return len(drawn) + len(refs) + 2 * span(edges, int)


def ranks(ctx: Ctx, drawn: Sequence[int]) -> dict[int, int]:
    """dot's rank of each drawn node, as its layout places them. An op lies between its
    deepest input (longest path from the top) and the deepest rank its users allow; dot's
    balancing puts one with room in the least crowded rank of that range (Mamba's unrolled
    scan: 16 `select`s that longest-path ranking stacks on one rank are spread over 8). A node
    without drawn inputs (a graph input, a weight) sits just above its first user."""
    t = ctx.t
    inside = set(drawn)
    ops = [j for j in drawn if any(a in inside for a in t.inputs[j])]  # topological (graph order)
    is_op = set(ops)
    early: dict[int, int] = {}
    for j in ops:
        early[j] = max((early[a] + 1 for a in t.inputs[j] if a in early), default=1)
    last = max(early.values(), default=1)
    late: dict[int, int] = {}
    for j in reversed(ops):
        late[j] = min((late[u] - 1 for u in t.users[j] if u in is_op), default=last)
    rank: dict[int, int] = {}
    crowd: dict[int, int] = {}
    for j in ops:
        if early[j] == late[j]:
            crowd[early[j]] = crowd.get(early[j], 0) + 1
    for j in ops:
        lo = max((rank[a] + 1 for a in t.inputs[j] if a in rank), default=1)
        hi = max(late[j], lo)
        if lo == hi or early[j] == late[j]:
            rank[j] = lo
            if early[j] != late[j]:
                crowd[lo] = crowd.get(lo, 0) + 1
            continue
        rank[j] = min(range(lo, hi + 1), key=lambda r: (crowd.get(r, 0), r))
        crowd[rank[j]] = crowd.get(rank[j], 0) + 1
    for j in drawn:
        if j not in is_op:
            users = [rank[u] for u in t.users[j] if u in rank]
            rank[j] = max(min(users) - 1, 0) if users else 0
    return rank


def full_size(ctx: Ctx, drawn: Sequence[int]) -> tuple[int, int]:
    """The full view's (width, height) in pixels at 96 dpi, estimated from dot's ranks (see
    `ranks`): their number, the widest one, and the subgraph clusters, without laying it out."""
    t = ctx.t
    rank = ranks(ctx, drawn)
    per_rank: dict[int, int] = {}
    for r in rank.values():
        per_rank[r] = per_rank.get(r, 0) + 1
    count = max(rank.values(), default=0) + 1
    widest = max(per_rank.values(), default=1)
    clusters = len({t.subgraph[j] for j in drawn if t.subgraph[j] >= 0})
    width = max(LEGEND_PT[0], PT_PER_NODE_WIDE * widest)
    height = LEGEND_PT[1] + PT_PER_RANK * count + PT_PER_SUBGRAPH * clusters
    return round(width * PX_PER_PT), round(height * PX_PER_PT)


# The estimate is within about 6 % of dot's size on those models; auto keeps that margin.
SIZE_MARGIN = 0.94


def too_big(size: tuple[int, int]) -> bool:
    """Whether an estimated (width, height) may exceed MAX_WIDTH_PX x MAX_HEIGHT_PX."""
    return size[0] > SIZE_MARGIN * MAX_WIDTH_PX or size[1] > SIZE_MARGIN * MAX_HEIGHT_PX


# graphviz's largest bitmap side (cairo): a .png past it is scaled down to fit, its text
# unreadable; SVG and PDF keep the full size.
BITMAP_LIMIT_PX = 32767


def past_bitmap_limit(size: tuple[int, int]) -> str | None:
    """The notice a full view gets when its estimated (width, height) is past graphviz's bitmap
    limit, else None."""
    if max(size) * SIZE_MARGIN <= BITMAP_LIMIT_PX:
        return None
    return (f"about {size[0]:,}\u00d7{size[1]:,} px: past graphviz's {BITMAP_LIMIT_PX:,} px limit for bitmaps, "
            "a .png is scaled down to fit (save .svg for full size, or view='modules' / 'collapsed')")


def edge_labels(ctx: Ctx, drawn: Sequence[int], measured: int | None = None) -> str:
    """'label' (placed by the layout, readable) when dot can afford it, else 'xlabel'
    (placed after layout, may overlap, but a 250-node graph with long edges lays out 4-10x faster)."""
    if measured is None:
        measured = work(ctx, drawn)
    return "label" if measured <= LABEL_WORK_PER_NODE * ctx.max_nodes else "xlabel"


def group_size(n_sub: int, n_in: int, n_out: int, pairs: Sequence[tuple[int, int]],
               max_nodes: int) -> tuple[int, str | None]:
    """How many consecutive subgraphs share a box, and how edges are labelled, so that the
    collapsed view has at most `max_nodes` boxes and fits dot's layout budget."""
    budget = layout_budget(max_nodes)
    size = max(1, math.ceil(n_sub / max(max_nodes - n_in - n_out, 8)))
    if size == 1:
        spanned = group_span(n_sub, n_in, 1, pairs)
        nodes = n_sub + n_in + n_out
        if nodes + 2 * spanned <= LABEL_WORK_PER_NODE * max_nodes:
            return 1, "label"
        if nodes + spanned <= budget:
            return 1, "xlabel"
        size = 2
    while size < n_sub:
        groups = math.ceil(n_sub / size)
        if groups + n_in + n_out + group_span(n_sub, n_in, size, pairs) <= budget:
            break
        size = math.ceil(size * 1.5)
    return min(size, max(n_sub, 1)), None


def group_span(n_sub: int, n_in: int, size: int, pairs: Sequence[tuple[int, int]]) -> int:
    """Sum over the box graph's edges of the rank distance they cover (longest-path ranks):
    the virtual nodes dot adds for long edges, which is what makes its layout slow."""
    n_groups = math.ceil(n_sub / size) if n_sub else 0
    edges = set()
    for a, b in pairs:
        ga = a // size if a < n_sub else n_groups + (a - n_sub)
        gb = b // size if b < n_sub else n_groups + (b - n_sub)
        if ga != gb:
            edges.add((ga, gb))
    fans: dict[int, list[int]] = {}
    for ga, gb in edges:
        if n_groups <= ga < n_groups + n_in:
            fans.setdefault(ga, []).append(gb)
    refs = {(ga, gb) for ga, targets in fans.items() if len(targets) > FANOUT for gb in sorted(targets)[1:]}
    return len(refs) + span(edges - refs,
                            lambda g: (1, g) if g < n_groups else ((0, g) if g < n_groups + n_in else (2, g)))


__all__ = ["DEFAULT_MAX_NODES", "MAX_HEIGHT_PX", "MAX_WIDTH_PX", "BITMAP_LIMIT_PX", "past_bitmap_limit", "ranks",
           "full_size", "too_big", "LAYOUT_WORK_PER_NODE", "LABEL_WORK_PER_NODE", "FANOUT", "resolve_limit",
           "layout_budget", "span", "fanout_refs", "work", "edge_labels", "group_size", "group_span"]
