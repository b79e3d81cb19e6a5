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
left edges in one line (align.py: `info["aligned"]` asks export.layout for it).

Frames are the views' own DOT bodies placed in a cluster (dot.nest: ids prefixed, each view's
own legend left out); one legend at the top explains the backends, the node styles drawn, the
frames and the marker. Overlays go to each graph: `measurement=` hv.measure(part, inputs) of
the whole model (each frame its graph's rows, graph_times.py) or one hv.Measurement per graph,
`against=` another MultiGraphPartition of the same model, `highlight=` as for a Partition.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Sequence

from hierviz.drawing import palette
from hierviz.drawing.budget import LEGEND_PT, MAX_HEIGHT_PX, PX_PER_PT, full_size, resolve_limit
from hierviz.drawing.context import Ctx
from hierviz.drawing.dot import DotWriter, Html, Nested, html, nest
from hierviz.drawing.by_graph.graph_times import GraphTimes
from hierviz.drawing.legend import legend_grid, style_samples, swatch
from hierviz.drawing.text import BR_LEFT, css, plural, tooltip
from hierviz.drawing.views import VIEWS, choose, render
from hierviz.errors import RenderError
from hierviz.foundation.gcpause import gc_paused
from hierviz.partitioner import CALLABLE_OPS, GRAPH, MultiGraphPartition
from hierviz.partitioner.counts import by_backend_text

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.drawing.diagram import Diagram
    from hierviz.capturing.by_graph.graph_break import GraphBreak
    from hierviz.partitioner import Partition

# A graph drawn in full gets at least this many nodes of the shared budget (else collapsed).
MIN_SHARE = 40
# What a frame drawn as modules / collapsed, and a break marker, add to the picture's height
# (px at 96 dpi; measured on the toys and fasterrcnn: 180-330 and 70-100).
SMALL_FRAME_PX = 300
MARKER_PX = 90
START_PX = 45  # a start marker: two or three short lines
OVERVIEW_ROW_PX = 18  # a row of the overview
# The overview's backend bar (pt) and how much of what follows a graph a row shows.
BAR_PT = 160
THEN_CHARS = 150
# How much of a break's code line and reason a marker shows (the tooltip has all of it).
CODE_CHARS = 70
REASON_CHARS = 90
EAGER = "the Python from here to the next graph runs eagerly in PyTorch (not compiled)"


_ABS_PATH = re.compile(r"(?:[A-Za-z]:)?[/\\][^\s():,]+\.py\b")


def short_path(file: str) -> str:
    """A source file as the picture shows it: from the package folder for installed code
    ('torchvision/models/detection/transform.py'), else its folder and name ('tests/dynamo_models.py');
    the tooltips keep the full path."""
    parts = file.replace("\\", "/").split("/")
    if "site-packages" in parts:
        return "/".join(parts[parts.index("site-packages") + 1:])
    return "/".join(parts[-2:])


def where(file: str, line: int) -> str:
    """'tests/dynamo_models.py:25' ('' when the file is unknown)."""
    return f"{short_path(file)}:{line}" if file else ""


def short_path_text(text: str) -> str:
    """`text` with every absolute source path in it shortened (short_path)."""
    return _ABS_PATH.sub(lambda m: short_path(m.group(0)), text)


def start_lines(starts: str) -> list[str]:
    """A graph's `starts` as the picture shows it: source paths shortened (short_path), one
    line for what starts ('dynamo resumes forward (file:line)'), one for where it is called
    from, one for the break it follows."""
    text = short_path_text(starts.strip())
    parts = re.split(r"(?=, called from )|(?= after (?:the|a) graph break)", text)
    return [part.strip(" ,") for part in parts if part.strip(" ,")]


def start_kind(starts: str) -> str:
    """'resumed', 'new-frame' or 'other' (css class of the start marker)."""
    if starts.startswith("dynamo resumes"):
        return "resumed"
    return "new-frame" if starts.startswith("a new frame") else "other"


def ops_by_backend(p: "Partition") -> dict[str, int]:
    """How many compute ops of graph partition `p` run in each backend, in the partition's
    backend order (those with none left out)."""
    t = p.records
    counts = Counter(t.backend[i] for i in range(len(t)) if t.compute[i])
    order = [b for b in p.backends if counts.get(b)] + sorted(b for b in counts if b not in p.backends)
    return {b: counts[b] for b in order}


def bar_widths(counts: dict[str, int], width: int = BAR_PT) -> list[tuple[str, int]]:
    """(backend, pt) of each segment of a `width` pt bar, in proportion to `counts` (each
    segment at least 1 pt; together exactly `width`)."""
    total = sum(counts.values())
    items = [(b, n) for b, n in counts.items() if n]
    out: list[tuple[str, int]] = []
    left = width
    for j, (b, n) in enumerate(items):
        rest = len(items) - j - 1  # segments still to come, 1 pt each at least
        w = left if rest == 0 else max(1, min(round(width * n / total), left - rest))
        out.append((b, w))
        left -= w
    return out


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


def per_graph(mp: "MultiGraphPartition", value: Any, what: str) -> list[Any]:
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


def _graph_builds(builds: Any, k: int) -> Any:
    """Graph k's part of a MultiGraphPartition's builds (mp.build())."""
    if not getattr(builds, "by_graph", False) or not hasattr(builds, "of_graph"):
        raise RenderError(f"builds= takes what mp.build() returned (hv.Builds with a graph column), not "
                          f"{type(builds).__name__}.")
    return builds.of_graph(f"g{k}")


def render_graphs(mp: "MultiGraphPartition", view: str = "auto", *, focus: Any = None, max_nodes: int | None = None,
                  weights: bool = False, depth: int | None = None, measurement: Any = None, against: Any = None,
                  numerics: Any = None, highlight: str | None = None, builds: Any = None) -> "Diagram":
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
    times = per_graph(mp, measurement, "measurement")
    others = per_graph(mp, against, "against")
    w = DotWriter()
    palette.defaults(w)
    w.defaults("graph", compound=True, ranksep=0.3)
    frames: list[tuple[int, Nested]] = []
    drawn: list[dict] = []
    reasons: Counter = Counter()
    with gc_paused():
        for k, (view_k, max_k, note) in enumerate(plan_views(mp, view, max_nodes, bool(weights), depth)):
            p = mp.graphs[k]
            d = render(p, view_k, max_nodes=max_k, weights=weights, depth=depth if view_k == "modules" else None,
                       measurement=times[k], against=others[k], highlight=highlight,
                       builds=None if builds is None else _graph_builds(builds, k))
            body = nest(list(d.body), f"g{k}_")
            info = {**d.info, "auto": note}
            drawn.append(info)
            if info["view"] == "full":
                reasons.update(drawn_reasons(p, bool(weights)))
            frames.append((k, body))
    chain(mp, w, frames, drawn)
    views_used = [info["view"] for info in drawn]
    legend(mp, w, views_used, reasons, [bool(times[k]) or bool(others[k]) for k in range(len(mp.graphs))],
           highlight)
    starts = sum(1 for k in range(1, len(mp.graphs)) if _starts(mp, k))
    nodes = sum(int(info.get("nodes", 0)) for info in drawn) + len(mp.breaks) + starts
    return Diagram(w.lines, {"view": "graphs", "views": views_used, "graphs": len(mp.graphs),
                             "breaks": len(mp.breaks), "starts": starts, "nodes": nodes, "frames": drawn,
                             "aligned": True}, comment="hierviz graph-by-graph view")


def _starts(mp: "MultiGraphPartition", k: int) -> str:
    """Why graph k starts, as its capture says ('' for the first, or a file saved before it was kept)."""
    return str(getattr(mp.capture.graphs[k], "starts", "") or "") if k > 0 else ""


def plan_views(mp: "MultiGraphPartition", view: str, max_nodes: int | None, weights: bool,
               depth: int | None) -> list[tuple[str, int | None, str | None]]:
    """Per graph: the view it is drawn in, the max_nodes its view gets, and why auto chose it
    (None when asked for, or full). `auto` shares `max_nodes` over the graphs (shares); a
    view asked for gets `max_nodes` as given, in every graph."""
    from hierviz.drawing.module_tree import build_tree

    limit = resolve_limit(max_nodes)
    out: list[tuple[str, int | None, str | None]] = []
    counts = [Ctx(p, limit, weights).drawn_count() for p in mp.graphs]
    share = shares(counts, limit)
    for k, p in enumerate(mp.graphs):
        if view == "auto" and depth is None:
            chosen, note = choose(p, Ctx(p, share[k], weights))
            if note:
                note = note.split(";", 1)[0].replace(f"max_nodes={share[k]:,}",
                                                     f"its share {share[k]:,} of max_nodes={limit:,}")
            out.append((chosen, share[k] if chosen != "modules" else None, note))
            continue
        want = "modules" if view == "auto" else view  # depth= asks for the module view, as for a Partition
        if want == "modules" and not build_tree(p.records).children:
            out.append(("collapsed", max_nodes, "no submodules to group by: collapsed view"))
            continue
        out.append((want, max_nodes, None))
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
             + START_PX * sum(1 for k in range(1, len(out)) if _starts(mp, k) and not any(
                 b.after_graph == k - 1 for b in mp.breaks)) + OVERVIEW_ROW_PX * len(out))
    for k in sorted(height, key=lambda k: (-height[k], k)):
        if total <= MAX_HEIGHT_PX or height[k] <= 3 * SMALL_FRAME_PX:  # a small graph drawn smaller saves little
            break
        why = f"auto chose the {{}} view: all {len(out)} graphs drawn in full would be about {total:,} px tall"
        if build_tree(mp.graphs[k].records).children:
            out[k] = ("modules", None, why.format("module"))
        else:
            out[k] = ("collapsed", share[k], why.format("collapsed"))
        total -= height[k] - SMALL_FRAME_PX


def drawn_reasons(p: "Partition", weights: bool) -> Counter:
    """The reason codes of the ops a full view of `p` draws (the legend's node samples)."""
    t = p.records
    return Counter(t.reason_code[i] for i in range(len(t)) if t.kind[i] in CALLABLE_OPS
                   and (weights or t.kind[i] != "get_attr"))


# ---------------------------------------------------------------------------- frames and breaks
def chain(mp: "MultiGraphPartition", w: DotWriter, frames: list[tuple[int, Nested]], drawn: list[dict]) -> None:
    """The frames, the break markers and the start markers, in execution order, each below the
    one before: graph k-1's frame, the breaks after it, why graph k starts, graph k's frame."""
    after = breaks_after(mp)
    items: list[tuple[str, Any]] = [("break", jb) for jb in repeats(after.get(-1, []))]
    folded: dict[int, int] = {}  # break marker j -> the graph whose start it also says
    for k, body in frames:
        if _starts(mp, k):
            if items and items[-1][0] == "break":  # the marker right above says it: one box, not two
                folded[items[-1][1][0]] = k
            else:
                items.append(("start", k))
        items.append(("frame", (k, body)))
        items += [("break", jb) for jb in repeats(after.get(k, []))]
    if not frames:
        w.node("nothing", label="dynamo captured no graph: the whole model ran as eager Python",
               shape="plaintext", **{"class": "hv-note"})
    for kind, item in items:
        if kind == "frame":
            frame(mp, w, item[0], item[1], drawn[item[0]])
        elif kind == "start":
            start_marker(mp, w, item)
        else:
            j, b, count = item
            shown = folded.get(j)
            marker(w, j, b, count, starts=None if shown is None else (shown, _starts(mp, shown)))
    for (kind_a, a), (kind_b, b) in zip(items, items[1:]):
        link(w, kind_a, a, kind_b, b)


def breaks_after(mp: "MultiGraphPartition") -> dict[int, list[tuple[int, "GraphBreak"]]]:
    """The graph breaks by the graph they follow (-1: before the first), with their index."""
    after: dict[int, list[tuple[int, "GraphBreak"]]] = {}
    for j, b in enumerate(mp.breaks):
        after.setdefault(b.after_graph, []).append((j, b))
    return after


def repeats(breaks: list[tuple[int, "GraphBreak"]]) -> list[tuple[int, "GraphBreak", int]]:
    """Consecutive breaks at the same line for the same reason (a loop, a list comprehension)
    as one: (the first's index, the first, how many)."""
    out: list[tuple[int, "GraphBreak", int]] = []
    for j, b in breaks:
        if out and _same(out[-1][1], b) and out[-1][0] + out[-1][2] == j:
            out[-1] = (out[-1][0], out[-1][1], out[-1][2] + 1)
        else:
            out.append((j, b, 1))
    return out


def _same(a: "GraphBreak", b: "GraphBreak") -> bool:
    return (a.file, a.line, a.short, a.ended_graph) == (b.file, b.line, b.short, b.ended_graph)


def frame(mp: "MultiGraphPartition", w: DotWriter, k: int, body: Nested, info: dict) -> None:
    """Graph k's frame: its label (where it comes from, its ops and subgraphs, its view), then
    its view's drawing."""
    g = mp.capture.graphs[k]
    p = mp.graphs[k]
    s = p.stats
    head = f"g{k} \u00b7 {g.function or 'graph'}" + (f" \u00b7 {where(g.file, g.line)}" if g.file else "")
    by = by_backend_text(s)
    facts = f"{plural(s['compute_ops'], 'op')} \u00b7 {plural(s['subgraphs'], 'subgraph')}" + (f" ({by})" if by else "")
    if g.calls != 1:
        facts += f" \u00b7 called {g.calls} times"
    lines = [f'<FONT POINT-SIZE="13"><B>{html(head, 90)}</B></FONT>', html(facts)]
    notes = []
    fell_back = str(getattr(g, "fell_back", "") or "")
    if fell_back:
        notes.append(fell_back)
    if not mp.has_compute(k):
        notes.append("nothing to partition: no compute op (only inputs, views or constants)")
    elif mp.left_whole(k):
        notes.append(f"left whole in PyTorch: {s['supported_ops']} supported op(s) < min_block_size "
                     f"{mp.config.min_block_size}, so torch.compile's backend returns it unchanged")
    notes.append(f"{info['view']} view" + (f" \u00b7 {info['auto']}" if info.get("auto") else ""))
    lines += [f'<FONT POINT-SIZE="9"><I>{html(n, 160)}</I></FONT>' for n in notes]
    tip = [f"graph g{k}: {g.function} ({g.file}:{g.line})" if g.file else f"graph g{k}",
           f"{plural(s['compute_ops'], 'op')} ({plural(len(g.ops), 'call')} with getitem and views), "
           f"{plural(len(g.inputs), 'input')}, {plural(len(g.outputs), 'output')}", *notes]
    w.open(f"cluster_g{k}", label=Html(BR_LEFT.join(lines) + BR_LEFT), style="rounded,filled", fillcolor="#FFFFFF",
           color=palette.FRAME_LINE, penwidth=1.8, fontsize=11, margin=10, tooltip=tooltip(tip),
           id=f"frame_g{k}", **{"class": "hv-frame"})
    w.lines.extend(body.lines)  # nest() indented them one level deeper: inside this frame
    w.close()


def marker(w: DotWriter, j: int, b: "GraphBreak", count: int = 1, starts: tuple[int, str] | None = None) -> None:
    """The marker of graph break j (and the `count` - 1 after it at the same line for the same
    reason): its type (or reason), the user's file:line and code, and that the Python after it
    runs eagerly; the tooltip holds dynamo's whole text and stack. `starts` (k, why): the
    graph right below it, and why it starts (as a start marker would say it)."""
    reason = b.gb_type or (b.reason.strip().splitlines() or ["(no reason given)"])[0]
    which = f"{j + 1}" if count == 1 else f"{j + 1}–{j + count} (×{count}, one after another)"
    lines = [f"<B>graph break {which}: {html(reason, REASON_CHARS)}</B>"]
    place = where(b.file, b.line)
    if place:
        lines.append(html(place + (f" in {b.function}" if b.function else ""), 100))
    if b.code:
        lines.append(f'<FONT FACE="Courier" POINT-SIZE="9">{html(b.code.strip(), CODE_CHARS)}</FONT>')
    if not b.ended_graph:
        lines.append('<FONT POINT-SIZE="9">ended no graph: dynamo had traced no op since the last one</FONT>')
    lines.append(f'<FONT POINT-SIZE="9"><I>{html(EAGER)}</I></FONT>')
    kind = ""
    if starts is not None:
        k, why = starts
        first, *rest = start_lines(why)
        lines.append(f"<B>then g{k} starts: {html(first, 110)}</B>")
        lines += [f'<FONT POINT-SIZE="9">{html(x, 120)}</FONT>' for x in rest if not x.startswith("after ")]
        kind = f" hv-start hv-{start_kind(why)}"
    tip = [f"graph break {which} (after graph g{b.after_graph})" if b.after_graph >= 0
           else f"graph break {which} (before the first graph)",
           f"at {b.file}:{b.line} in {b.function}" if b.file else "", b.code.strip(),
           *(b.reason.strip().splitlines() or [""]), *[f"stack: {s}" for s in b.stack],
           *([f"then graph g{starts[0]} starts: {starts[1]}"] if starts else [])]
    w.node(f"break{j}", label=Html(BR_LEFT.join(lines) + BR_LEFT), shape="box", style="rounded,filled,dashed",
           fillcolor=palette.BREAK_FILL, color=palette.BREAK_LINE, penwidth=1.8, margin="0.14,0.06",
           tooltip=tooltip(tip), **{"class": f"hv-break hv-{css(b.gb_type or 'break')}{kind}"})


def start_marker(mp: "MultiGraphPartition", w: DotWriter, k: int) -> None:
    """Why graph k starts, above its frame: 'g3 starts: a new frame: clip_boxes_to_image
    (torchvision/ops/boxes.py:173)', where it is called from, and the break it follows."""
    starts = _starts(mp, k)
    lines = start_lines(starts)
    label = [f"<B>g{k} starts: {html(lines[0], 110)}</B>"] + [f'<FONT POINT-SIZE="9">{html(x, 120)}</FONT>'
                                                            for x in lines[1:]]
    if not any(b.after_graph == k - 1 for b in mp.breaks):
        label.append('<FONT POINT-SIZE="9"><I>no graph break between g{} and g{}: the Python between them runs '
                     'eagerly</I></FONT>'.format(k - 1, k))
    w.node(f"start{k}", label=Html(BR_LEFT.join(label) + BR_LEFT), shape="box", style="rounded,filled",
           fillcolor=palette.START_FILL, color=palette.START_LINE, penwidth=1.2, margin="0.12,0.04",
           tooltip=tooltip([f"why graph g{k} starts here", starts]),
           **{"class": f"hv-start hv-{start_kind(starts)}"})


def _ends(kind: str, item: Any, last: bool) -> tuple[list[str], str, str | None]:
    """(the nodes an ordering edge ties to, the node a visible edge meets, its cluster)."""
    if kind in ("break", "start"):
        node = f"break{item[0]}" if kind == "break" else f"start{item}"
        return [node], node, None
    k, body = item
    ends = body.sinks() if last else body.sources()
    ends = ends or body.nodes
    return ends, (ends[-1] if last else ends[0]), f"cluster_g{k}"


def link(w: DotWriter, kind_a: str, a: Any, kind_b: str, b: Any) -> None:
    """Item b below item a: invisible edges from a's last nodes to b's first ones (through a
    point when two frames meet without a break between them) and one visible arrow."""
    tails, tail, ltail = _ends(kind_a, a, last=True)
    heads, head, lhead = _ends(kind_b, b, last=False)
    if not tails or not heads:
        return
    if len(tails) > 1 and len(heads) > 1:
        hub = f"then_{tail}_{head}"
        w.node(hub, shape="point", style="invis", width=0.01, height=0.01, label="")
        for t in tails:
            w.edge(t, hub, style="invis")
        for h in heads:
            w.edge(hub, h, style="invis")
    else:
        for t in tails:
            for h in heads:
                w.edge(t, h, style="invis")
    w.edge(tail, head, ltail=ltail, lhead=lhead, color=palette.BREAK_LINE, penwidth=1.8, arrowsize=0.9,
           constraint=False, **{"class": "hv-order"})


# ---------------------------------------------------------------------------- legend
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
    if any(_starts(mp, k) for k in range(1, len(mp.graphs))):
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


# ---------------------------------------------------------------------------- overview
def then_text(mp: "MultiGraphPartition", k: int, after: dict[int, list[tuple[int, "GraphBreak"]]]) -> str:
    """What follows graph k, in one line: its graph breaks (those in a row at one line counted
    once) and why the next graph starts; '' when nothing does."""
    parts = []
    for j, b, count in repeats(after.get(k, [])):
        which = f"break {j + 1}" if count == 1 else f"breaks {j + 1}–{j + count}"
        parts.append(f"{which}: {b.short or 'graph break'}" + (f" ({where(b.file, b.line)})" if b.file else ""))
    if k + 1 < len(mp.graphs):
        starts = _starts(mp, k + 1)
        if starts:
            parts.append(f"g{k + 1} starts: {start_lines(starts)[0]}")
        elif not after.get(k):
            parts.append(f"g{k + 1} follows")
    return " · ".join(parts)


def _title(text: str) -> str:
    """A cell's tooltip (SVG) holding all of a text the cell shortens."""
    return f' TITLE="{html(text)}"' if len(text) > THEN_CHARS else ""


def _small(text: str) -> str:
    return f'<FONT POINT-SIZE="9">{text}</FONT>' if text else ""  # graphviz refuses an empty FONT


def overview(mp: "MultiGraphPartition") -> str:
    """The picture's overview (an HTML-like table): one row per graph in execution order, its
    name and function, its ops, a bar of its ops' backends (BAR_PT wide, segments in proportion
    to the ops each backend runs) and what follows it; in an SVG a row links to its frame."""
    after = breaks_after(mp)
    head = ('<TR><TD ALIGN="LEFT"><I>graph</I></TD><TD ALIGN="LEFT"><I>function</I></TD>'
            '<TD ALIGN="RIGHT"><I>ops</I></TD><TD ALIGN="LEFT"><I>backends (share of its ops)</I></TD>'
            '<TD ALIGN="LEFT"><I>then (after this graph)</I></TD></TR>')
    rows = [head]
    if after.get(-1):
        first = " · ".join(f"break {j + 1}: {b.short}" for j, b, _ in repeats(after[-1]))
        rows.append(f'<TR><TD ALIGN="LEFT" COLSPAN="4">(before g0)</TD><TD ALIGN="LEFT">'
                    f'<FONT POINT-SIZE="9">{html(first, THEN_CHARS)}</FONT></TD></TR>')
    for k, p in enumerate(mp.graphs):
        g = mp.capture.graphs[k]
        counts = ops_by_backend(p)
        if counts:
            cells = "".join(f'<TD WIDTH="{w}" HEIGHT="9" FIXEDSIZE="TRUE" BGCOLOR="{palette.color(b)}"></TD>'
                            for b, w in bar_widths(counts))
        else:  # nothing to partition: an empty bar
            cells = (f'<TD WIDTH="{BAR_PT}" HEIGHT="9" FIXEDSIZE="TRUE" '
                     f'BGCOLOR="{palette.tint(palette.GREY, 0.8)}"></TD>')
        bar = ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0" FIXEDSIZE="TRUE" '
               f'WIDTH="{BAR_PT}" HEIGHT="9"><TR>{cells}</TR></TABLE>')
        share = ", ".join(f"{b} {n}" for b, n in counts.items()) or "no compute op"
        then = then_text(mp, k, after)
        link = f' HREF="#frame_g{k}" TITLE="g{k}: {html(g.function or "graph", 60)}: {html(share)}"'
        rows.append(f'<TR><TD ALIGN="LEFT"{link}><B>g{k}</B></TD>'
                    f'<TD ALIGN="LEFT"{link}>{html(g.function or "graph", 40)}</TD>'
                    f'<TD ALIGN="RIGHT">{p.stats["compute_ops"]:,}</TD>'
                    f'<TD ALIGN="LEFT" CELLPADDING="2"{link}>{bar}</TD>'
                    f'<TD ALIGN="LEFT"{_title(then)}>{_small(html(then, THEN_CHARS))}</TD></TR>')
    title = (f'<TR><TD ALIGN="LEFT" COLSPAN="5"><B>overview</B>: {len(mp.graphs)} graphs in execution order'
             ' (SVG: click a row to go to its frame)</TD></TR>')
    return ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">' + title + "".join(rows)
            + "</TABLE>")


__all__ = ["render_graphs", "plan_views", "shares", "per_graph", "short_path", "where", "EAGER", "MIN_SHARE",
           "start_lines", "start_kind", "short_path_text", "ops_by_backend", "bar_widths", "overview", "then_text"]
