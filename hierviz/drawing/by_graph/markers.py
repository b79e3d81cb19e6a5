"""The graph-by-graph picture's frames and what lies between them: each dynamo graph's frame
(a cluster holding its view's DOT), the graph-break markers, the start markers, and the edges that
chain them in execution order (`chain`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hierviz.drawing import palette
from hierviz.drawing.by_graph.breaks_and_starts import (EAGER, breaks_after, graph_start, graph_start_kind, repeats,
                                                        start_lines, where)
from hierviz.drawing.dot import DotWriter, Html, Nested, html
from hierviz.drawing.text import BR_LEFT, css, plural, tooltip
from hierviz.partitioner.counts import by_backend_text

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.capturing.by_graph.graph_break import GraphBreak
    from hierviz.partitioner import MultiGraphPartition

# How much of a break's code line and reason a marker shows (the tooltip has all of it).
CODE_CHARS = 70
REASON_CHARS = 90

def chain(mp: "MultiGraphPartition", w: DotWriter, frames: list[tuple[int, Nested]], drawn: list[dict]) -> None:
    """The frames, the break markers and the start markers, in execution order, each below the
    one before: graph k-1's frame, the breaks after it, why graph k starts, graph k's frame."""
    after = breaks_after(mp)
    items: list[tuple[str, Any]] = [("break", jb) for jb in repeats(after.get(-1, []))]
    folded: dict[int, int] = {}  # break marker j -> the graph whose start it also says
    for k, body in frames:
        if graph_start(mp, k):
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
            marker(w, j, b, count, starts=None if shown is None else
                   (shown, graph_start(mp, shown), graph_start_kind(mp, shown)))
    for (kind_a, a), (kind_b, b) in zip(items, items[1:]):
        link(w, kind_a, a, kind_b, b)


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


def marker(w: DotWriter, j: int, b: "GraphBreak", count: int = 1, starts: tuple[int, str, str] | None = None
           ) -> None:
    """The marker of graph break j (and the `count` - 1 after it at the same line for the same
    reason): its type (or reason), the user's file:line and code, and that the Python after it
    runs eagerly; the tooltip holds dynamo's whole text and stack. `starts` (k, why, kind): the
    graph right below it, and why and how it starts (as a start marker would say it)."""
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
        k, why, how = starts
        first, *rest = start_lines(why, with_break=False)  # this marker is the break
        lines.append(f"<B>then g{k} starts: {html(first, 110)}</B>")
        lines += [f'<FONT POINT-SIZE="9">{html(x, 120)}</FONT>' for x in rest]
        kind = f" hv-start hv-{how}"
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
    starts = graph_start(mp, k)
    lines = start_lines(starts)
    label = [f"<B>g{k} starts: {html(lines[0], 110)}</B>"] + [f'<FONT POINT-SIZE="9">{html(x, 120)}</FONT>'
                                                            for x in lines[1:]]
    if not mp.breaks_after(k - 1):
        label.append('<FONT POINT-SIZE="9"><I>no graph break between g{} and g{}: the Python between them runs '
                     'eagerly</I></FONT>'.format(k - 1, k))
    w.node(f"start{k}", label=Html(BR_LEFT.join(label) + BR_LEFT), shape="box", style="rounded,filled",
           fillcolor=palette.START_FILL, color=palette.START_LINE, penwidth=1.2, margin="0.12,0.04",
           tooltip=tooltip([f"why graph g{k} starts here", starts]),
           **{"class": f"hv-start hv-{graph_start_kind(mp, k)}"})


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
