"""Drawing graph nodes and edges: one node per graph node, one cluster per subgraph, edges
labelled with the tensors that cross subgraphs. The full view, and the body of the focus view.

Node ids in the DOT text are `n<index>` (the node's position in graph order); names only ever
appear escaped inside labels and tooltips.
"""

from __future__ import annotations

from typing import Sequence

from hierviz.drawing import palette
from hierviz.drawing.budget import edge_labels, fanout_refs, full_size, past_bitmap_limit
from hierviz.drawing.context import Ctx
from hierviz.drawing.dot import DotWriter, Html, element_id, html
from hierviz.drawing.legend import title
from hierviz.drawing.text import BR_LEFT, LABEL_CHARS, css, edge_label, op_short, plural, tooltip
from hierviz.partitioner import CALLABLE_OPS, DEMOTED, DEMOTED_NEXT, FOLLOWS_PRODUCER, NOT_CALLABLE

SMALL = '<FONT POINT-SIZE="9">{}</FONT>'


def node_label(ctx: Ctx, i: int, focus: bool = False) -> Html:
    """A node's HTML-like label: its name, and its op (or value spec) when that adds something.
    Never an empty element: a value without a known spec shows the name alone."""
    t = ctx.t
    kind = t.kind[i]
    name = html(t.name[i], LABEL_CHARS)
    head = f"<B>{name}</B>" if focus else name
    if kind == "placeholder":
        spec = t.spec[i].full()
        return Html(f"<B>{name}</B>" + (f"<BR/>{SMALL.format(html(spec))}" if spec else ""))
    if kind == "output":
        outs = t.inputs[i]
        lines = []
        for a in outs[:8]:
            spec = t.spec[a].full()
            lines.append(SMALL.format(html(t.name[a], 24) + (f": {html(spec)}" if spec else "")))
        if len(outs) > 8:
            lines.append(SMALL.format(f"+{len(outs) - 8} more"))
        return Html("<B>output</B>" + "".join("<BR/>" + line for line in lines))
    if kind == "get_attr":
        return Html(f"<FONT POINT-SIZE=\"8\">{name}</FONT>")
    op = op_short(t.op[i])
    if t.name[i].startswith(op) or not op:
        return Html(head)
    return Html(f"{head}<BR/><FONT POINT-SIZE=\"8\" COLOR=\"#333333\">{html(op, LABEL_CHARS)}</FONT>")


def node_tooltip(ctx: Ctx, i: int, extra: Sequence[str] = ()) -> str:
    """A node's tooltip: op, where it runs and why, its value and weights, then `extra` lines."""
    t = ctx.t
    kind = t.kind[i]
    lines = [t.name[i]]
    if kind in CALLABLE_OPS:
        lines.append(f"op: {t.op[i]}")
        k = t.subgraph[i]
        if k >= 0:
            lines.append(f"runs in: {t.backend[i]} (subgraph {t.subgraph_tag[k]})")
            if k in ctx.fell_back:
                lines.append(f"ran in: eager PyTorch when measured ({ctx.fell_back[k]})")
        lines.append(f"why: {t.reason(i)}")
    else:
        lines.append(t.reason(i))
    spec = t.spec[i].full()
    if spec and kind != "output":
        lines.append(f"value: {spec}")
    consts = [a for a in t.inputs[i] if t.kind[a] == "get_attr"]
    if consts:
        shown = ", ".join(f"{t.name[a]} {t.spec[a].full()}".strip() for a in consts[:4])
        lines.append(f"weights: {shown}" + (f" (+{len(consts) - 4})" if len(consts) > 4 else ""))
    lines.extend(extra)
    return tooltip(lines)


def draw_node(ctx: Ctx, w: DotWriter, i: int, focus: bool = False) -> None:
    t = ctx.t
    kind = t.kind[i]
    backend = ctx.backend(i)  # what ran: PyTorch for a subgraph that fell back when measured
    if kind in CALLABLE_OPS:
        code = t.reason_code[i]
        ctx.reasons[code] += 1
    else:
        code = NOT_CALLABLE
    st = palette.style(code)
    line = palette.border(t.backend[i])
    if code in (DEMOTED, DEMOTED_NEXT):
        line = palette.color(t.eligible_backend[i])
    shape, styl, pen = st.shape, st.style, st.penwidth
    if kind == "get_attr":
        shape, styl, pen = "note", "filled", 0.6
    elif kind == "output":
        shape = "box"
    ctx.backends_seen.add(backend)
    label = node_label(ctx, i, focus)
    notes: list[str] = []
    marks: dict = {"fillcolor": palette.fill(backend), "color": palette.FOCUS if focus else line,
                   "penwidth": 3.5 if focus else pen}
    if ctx.overlays and kind in CALLABLE_OPS:
        extra: list[str] = []
        for overlay in ctx.overlays:
            overlay.decorate_node(i, extra, notes, marks)
        label = Html("<BR/>".join([label, *extra]))
    tip = node_tooltip(ctx, i, notes)
    w.node(
        f"n{i}",
        id=element_id("node", t.name[i]),  # what a click on it selects (the explorer's diagram widget)
        label=label,
        tooltip=tip,
        shape=shape,
        style=styl,
        **marks,
        peripheries=st.peripheries if st.peripheries != 1 else None,
        fontsize=8 if code == FOLLOWS_PRODUCER else None,
        height=0.2 if code == FOLLOWS_PRODUCER else None,
        **{"class": f"hv-node hv-{css(backend)} hv-{code}"},
    )


def cluster_label(tag: str, line: str, extra: Sequence[str] = ()) -> Html:
    """A subgraph's label: its tag, backend and op count (and overlay lines), left-aligned."""
    more = "".join(f"{x}{BR_LEFT}" for x in extra)
    return Html(f'<FONT POINT-SIZE="9"><B>{html(tag, LABEL_CHARS)}</B>{BR_LEFT}{html(line, 60)}{BR_LEFT}{more}</FONT>')


def draw_nodes_and_edges(ctx: Ctx, w: DotWriter, drawn: Sequence[int], focus_node: int | None = None,
                         labels: str = "label", focus_cluster: int | None = None) -> dict:
    """Nodes (grouped into one cluster per subgraph) and the edges between drawn nodes."""
    t = ctx.t
    drawn_set = set(drawn)
    clusters: dict[int, list[int]] = {}
    outside: list[int] = []
    for i in drawn:
        k = ctx.cluster(i)
        if k is None:
            outside.append(i)
        else:
            clusters.setdefault(k, []).append(i)
    refs = fanout_refs(ctx, drawn, drawn_set)
    rank: dict[int, int] = {}  # dot's rank of each drawn node (longest path; graph order is topological)
    for j in drawn:
        rank[j] = max((rank[a] + 1 for a in t.inputs[j] if a in drawn_set), default=0)
    refs_of: dict[int, list[int]] = {}
    for a, j in sorted(refs):
        refs_of.setdefault(j, []).append(a)

    def draw_refs(j: int) -> None:
        for a in refs_of.get(j, ()):
            w.node(f"ref{a}_{j}", label=Html(f'<FONT POINT-SIZE="8">{html(t.name[a], 24)}</FONT>'),
                   shape="plaintext", height=0.15, margin="0.02",
                   tooltip=tooltip([t.name[a], t.spec[a].full(), "(a reference: drawn once, used here too)"]),
                   **{"class": "hv-input-ref"})

    for k in sorted(clusters):
        backend = t.subgraph_backend[k]
        tag = t.subgraph_tag[k]
        ops = ctx.compute_ops(k)
        members = clusters[k]
        size = len(t.subgraph_members[k])
        # a focus view draws part of a subgraph: say how much, in nodes (the ops are in the tooltip)
        line = ctx.ran_line(k, plural(ops, 'op') if len(members) == size else
                            f"showing {len(members):,} of its {size:,} nodes")
        extra: list[str] = []
        notes: list[str] = []
        ran = ctx.subgraph_backend(k)
        marks: dict = {"fillcolor": palette.cluster_fill(ran), "color": palette.color(backend),
                       "penwidth": 3.0 if k == focus_cluster else (2.4 if ran != backend else 1.4)}
        ctx.decorate_subgraph(k, extra, notes, marks)
        marks.pop("fontcolor", None)
        label = cluster_label(tag, line, extra)
        tip = tooltip([tag, f"backend: {backend}", f"{plural(ops, 'op')}, {plural(size, 'node')}", *notes])
        fell = ran != backend  # measured: it ran in eager PyTorch (dashed border: the backend it was given)
        w.open(f"cluster_{k}", id=element_id("subgraph", tag), label="",
               style="filled,rounded,dashed" if fell else "filled,rounded", **marks,
               tooltip=tip, **{"class": f"hv-subgraph hv-{css(backend)}" + (" hv-fell-back" if fell else "")})
        for i in members:
            draw_node(ctx, w, i, i == focus_node)
            draw_refs(i)  # inside the cluster: outside, they push each cluster sideways
        # The label is a node beside the member drawn highest, not the cluster label: dot routes
        # edges around nodes but straight through cluster labels.
        top = min(members, key=lambda i: (rank[i], i))
        w.node(f"h{k}", id=element_id("subgraph", tag, "label"), label=label,
               shape="plaintext", margin="0.02", height=0.2, tooltip=tip,
               **{"class": "hv-cluster-label"})
        w.raw(f"{{rank=same; h{k}; n{top}}}")
        w.edge(f"h{k}", f"n{top}", style="invis")
        w.close()
    for i in outside:
        draw_node(ctx, w, i, i == focus_node)
        draw_refs(i)

    boundary = 0
    for j in drawn:
        kj = t.subgraph[j]
        for a in t.inputs[j]:
            if a not in drawn_set:
                continue
            tail = f"n{a}"
            if (a, j) in refs:
                tail = f"ref{a}_{j}"
            if t.kind[a] == "get_attr":
                w.edge(tail, f"n{j}", style="dotted", arrowsize=0.4)
                continue
            if t.subgraph[a] == kj:
                w.edge(tail, f"n{j}")
                continue
            boundary += 1
            text = t.spec[a].compact() or None  # a value without a known spec: no label
            w.edge(tail, f"n{j}", label=edge_label(text) if labels == "label" else None,
                   xlabel=text if labels == "xlabel" else None, color=palette.BOUNDARY_EDGE, penwidth=1.8,
                   fontcolor=palette.BOUNDARY_EDGE,
                   tooltip=tooltip([f"{t.name[a]} -> {t.name[j]}", t.spec[a].full()]),
                   **{"class": "hv-boundary"})
    return {"nodes": len(drawn), "clusters": len(clusters), "boundary_edges": boundary, "edge_labels": labels}


def full(ctx: Ctx, w: DotWriter) -> dict:
    """The full view: every drawn node (weights only with weights=True), a cluster per subgraph."""
    drawn = ctx.all_drawn()
    info = draw_nodes_and_edges(ctx, w, drawn, labels=edge_labels(ctx, drawn, ctx.full_work))
    notice = past_bitmap_limit(ctx.full_px if ctx.full_px is not None else full_size(ctx, drawn))
    title(ctx, w, "hierviz · full view", notice=notice)
    if notice:
        info["notice"] = notice
    return info


__all__ = ["node_label", "node_tooltip", "draw_node", "cluster_label", "draw_nodes_and_edges", "full"]
