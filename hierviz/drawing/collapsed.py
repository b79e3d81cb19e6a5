"""The collapsed view: one box per subgraph (runs of consecutive subgraphs share a box when
there are more than max_nodes, or dot's layout budget says so), graph inputs and outputs, and
one edge per pair of boxes for the tensors that cross, labelled with their specs."""

from __future__ import annotations

import math
from collections import Counter

from hierviz.drawing import palette
from hierviz.drawing.budget import FANOUT, group_size
from hierviz.drawing.context import Ctx
from hierviz.drawing.dot import DotWriter, Html, element_id, group_name, html
from hierviz.drawing.graph import node_label, node_tooltip
from hierviz.drawing.legend import title
from hierviz.drawing.text import LABEL_CHARS, css, edge_label, op_short, plural, tooltip
from hierviz.partitioner import FALLBACK, FALLBACK_REASONS, GRAPH, REASONS, UNSUPPORTED, VALIDATOR, NodeTable

# Graph inputs drawn one by one in the collapsed view; above this they share one node.
MAX_INPUT_NODES = 12


def named_spec(t: NodeTable, i: int) -> str:
    """'name: float32[1, 3]', or the name alone when the value's spec is unknown."""
    spec = t.spec[i].full()
    return f"{t.name[i]}: {spec}" if spec else t.name[i]


def named_spec_html(t: NodeTable, i: int) -> str:
    """named_spec for an HTML-like label, the name cut to 24 characters."""
    spec = t.spec[i].full()
    return html(t.name[i], 24) + (f": {html(spec)}" if spec else "")


def subgraph_ops(ctx: Ctx, k: int) -> Counter:
    t = ctx.t
    return Counter(op_short(t.op[i]) for i in t.subgraph_members[k] if t.compute[i])


def why_torch(ctx: Ctx, k: int) -> Counter:
    why: Counter = Counter()
    for i in ctx.t.subgraph_members[k]:
        code = ctx.t.reason_code[i]
        if code in FALLBACK_REASONS:
            why[code] += 1
    return why


def collapsed(ctx: Ctx, w: DotWriter) -> dict:
    t = ctx.t
    n_sub = len(t.subgraph_tag)
    placeholders = [i for i, kind in enumerate(t.kind) if kind == "placeholder" and t.users[i]]
    outputs = [i for i, kind in enumerate(t.kind) if kind == "output"]
    merged_inputs = len(placeholders) > MAX_INPUT_NODES
    n_in = 1 if merged_inputs else len(placeholders)
    io_nodes = n_in + len(outputs)

    # Endpoint keys: subgraph k -> k, graph input -> n_sub + slot, output -> n_sub + n_in + slot.
    key: list[int] = list(t.subgraph)  # -1: not partitioned
    for slot, i in enumerate(placeholders):
        key[i] = n_sub + (0 if merged_inputs else slot)
    for slot, i in enumerate(outputs):
        key[i] = n_sub + n_in + slot
    crossing = crossing_tensors(t, key)
    size, labels = group_size(n_sub, n_in, len(outputs), list(crossing), ctx.max_nodes)
    groups = [range(s, min(s + size, n_sub)) for s in range(0, n_sub, size)]
    grouped = size > 1

    def box_id(k: int) -> str:
        if k < n_sub:
            return f"s{k // size}"
        if k < n_sub + n_in:
            return "inputs" if merged_inputs else f"in{placeholders[k - n_sub]}"
        return f"out{outputs[k - n_sub - n_in]}"

    # Box keys: group k // size for subgraphs, n_sub + endpoint key for inputs and outputs.
    edges: dict[tuple[int, int], dict[int, None]] = {}
    ids: dict[int, str] = {}
    for (a, b), tensors in crossing.items():
        ga = a // size if a < n_sub else n_sub + a
        gb = b // size if b < n_sub else n_sub + b
        if ga == gb:
            continue
        edges.setdefault((ga, gb), {}).update(tensors)
        if ga not in ids:
            ids[ga] = box_id(a)
        if gb not in ids:
            ids[gb] = box_id(b)

    view_text = f"hierviz · collapsed view · {plural(n_sub, 'subgraph')}"
    if grouped:
        view_text += f", {size} per box"
    draw_inputs_and_outputs(ctx, w, placeholders, outputs, merged_inputs)

    # Boxes
    for g, rng in enumerate(groups):
        if not grouped:
            subgraph_box(ctx, w, rng.start)
        else:
            group_box(ctx, w, g, rng)
        for k in rng:
            ctx.backends_seen.add(ctx.subgraph_backend(k))

    # an input feeding more than FANOUT boxes is drawn once, and named where else it is used
    fans: dict[int, list[int]] = {}
    for ga, gb in edges:
        if n_sub <= ga - n_sub < n_sub + n_in:
            fans.setdefault(ga, []).append(gb)
    refs = {(ga, gb) for ga, targets in fans.items() if len(targets) > FANOUT
            for gb in sorted(targets, key=lambda g: (g >= n_sub, g))[1:]}

    # Edges, sorted by endpoint keys (inputs sort after subgraphs; dot does not mind)
    for (ga, gb) in sorted(edges):
        tail = ids[ga]
        if (ga, gb) in refs:
            tail = f"ref_{ids[ga]}_{ids[gb]}"
            name = "graph inputs" if ids[ga] == "inputs" else t.name[placeholders[ga - 2 * n_sub]]
            w.node(tail, label=Html(f'<FONT POINT-SIZE="8">{html(name, 24)}</FONT>'), shape="plaintext",
                   height=0.15, margin="0.02", tooltip=tooltip([name, "(a reference: drawn once, used here too)"]),
                   **{"class": "hv-input-ref"})
        draw_boundary_edge(ctx, w, tail, ids[gb], list(edges[(ga, gb)]), labels)
    title(ctx, w, view_text, collapsed=True, grouped=grouped)
    return {"nodes": len(groups) + io_nodes, "boxes": len(groups), "grouped": grouped,
            "group_size": size, "boundary_edges": len(edges), "edge_labels": labels}


def crossing_tensors(t: NodeTable, key: list[int]) -> dict[tuple[int, int], dict[int, None]]:
    """(source endpoint, destination endpoint) -> the tensors (producer indices, in order) that
    cross between them; `key` is each node's endpoint, -1 for nodes in no endpoint."""
    crossing: dict[tuple[int, int], dict[int, None]] = {}
    for j in range(len(t)):
        dst = key[j]
        if dst < 0:
            continue
        for a in t.inputs[j]:
            src = key[a]
            if src >= 0 and src != dst:
                crossing.setdefault((src, dst), {})[a] = None
    return crossing


def draw_inputs_and_outputs(ctx: Ctx, w: DotWriter, placeholders: list[int], outputs: list[int],
                            merged: bool) -> None:
    """The graph's inputs (one box for all of them when `merged`) and outputs."""
    t = ctx.t
    look = dict(shape="box", style="rounded,filled", fillcolor=palette.fill(GRAPH), color=palette.border(GRAPH))
    if merged:
        shown = "<BR/>".join(f'<FONT POINT-SIZE="9">{named_spec_html(t, i)}</FONT>' for i in placeholders[:6])
        w.node("inputs", label=Html(f"<B>{len(placeholders)} graph inputs</B><BR/>{shown}<BR/>"
                                    f'<FONT POINT-SIZE="9">...</FONT>'),
               **look, tooltip=tooltip([named_spec(t, i) for i in placeholders[:40]]),
               **{"class": "hv-node hv-graph hv-input"})
    else:
        for i in placeholders:
            w.node(f"in{i}", id=element_id("node", t.name[i]), label=node_label(ctx, i), **look,
                   tooltip=node_tooltip(ctx, i),
                   **{"class": "hv-node hv-graph hv-input"})
    for i in outputs:
        w.node(f"out{i}", id=element_id("node", t.name[i]), label=node_label(ctx, i), **look,
               tooltip=tooltip(["output"] + [named_spec(t, a) for a in t.inputs[i][:40]]),
               **{"class": "hv-node hv-graph hv-output"})


def draw_boundary_edge(ctx: Ctx, w: DotWriter, tail: str, head: str, tensors: list[int], labels: str | None) -> None:
    """One edge for the tensors crossing from box `tail` to box `head`: labelled with their
    spec (or their count), thicker the more there are (by bytes, with a measurement)."""
    t = ctx.t
    specs = {t.spec[a].compact() for a in tensors[:50]}
    if len(tensors) == 1:
        text = specs.pop() or None  # a value without a known spec: no label
    elif len(specs) == 1 and len(tensors) <= 50 and "" not in specs:
        text = f"{len(tensors)} × {specs.pop()}"
    else:
        text = f"{len(tensors)} tensors"
    tip = [f"{len(tensors)} tensor(s):"] + [named_spec(t, a) for a in tensors[:20]]
    if len(tensors) > 20:
        tip.append(f"... {len(tensors) - 20} more")
    pen = round(1.0 + min(3.0, math.log2(len(tensors))), 2) if len(tensors) > 1 else 1.2
    if ctx.overlays:  # e.g. with a measurement, edges are weighted by the bytes they carry
        values = [t.spec[a] for a in tensors]
        for overlay in ctx.overlays:
            text, pen = overlay.weigh_edge(values, text, pen, tip)
    w.edge(tail, head, label=edge_label(text) if labels == "label" else None,
           xlabel=text if labels == "xlabel" else None, color=palette.BOUNDARY_EDGE, penwidth=pen,
           fontcolor=palette.BOUNDARY_EDGE, tooltip=tooltip(tip), **{"class": "hv-boundary"})


def subgraph_box(ctx: Ctx, w: DotWriter, k: int) -> None:
    t = ctx.t
    backend = t.subgraph_backend[k]
    sg = ctx.p.subgraphs[k]
    tag = t.subgraph_tag[k]
    ops = subgraph_ops(ctx, k)
    lines = [f"<B>{html(tag)}</B>", html(ctx.ran_line(k, plural(sg.compute_ops, 'op')))]
    for o, c in ops.most_common(3):  # the top ops, one a line, so long aten names stay whole
        lines.append(f'<FONT POINT-SIZE="9">{html(o, LABEL_CHARS)} ×{c}</FONT>')
    if len(ops) > 3:
        lines.append(f'<FONT POINT-SIZE="9">+{plural(len(ops) - 3, "more op type")}</FONT>')
    tip = [tag, f"backend: {backend}", f"{sg.compute_ops} ops, {len(sg.nodes)} nodes",
           "ops: " + ", ".join(f"{o} ×{c}" for o, c in ops.most_common(12))]
    styl, pen = "rounded,filled", 1.2
    if backend == FALLBACK:
        why = why_torch(ctx, k)
        if why:
            text = ", ".join(f"{REASONS[c].name} ×{n}" for c, n in sorted(why.items()))
            lines.append(f'<FONT POINT-SIZE="9">why: {html(text)}</FONT>')
            tip.append(f"why: {text}")
            if why.get(UNSUPPORTED) or why.get(VALIDATOR):
                styl, pen = "rounded,filled,bold", 2.0
    tip += [f"in: {t}" for t in sg.inputs[:10]] + [f"out: {t}" for t in sg.outputs[:10]]
    ran = ctx.subgraph_backend(k)
    marks: dict = {"penwidth": pen, "fillcolor": palette.fill(ran), "color": palette.border(backend)}
    fell = ran != backend
    if fell:  # measured: it ran in eager PyTorch; the dashed border keeps the backend it was given
        styl, marks["penwidth"] = "rounded,filled,dashed", 2.4
        ctx.backends_seen.add(ran)
    ctx.decorate_subgraph(k, lines, tip, marks)
    w.node(f"s{k}", id=element_id("subgraph", tag), label=Html("<BR/>".join(lines)), shape="box",
           style=styl, **marks, tooltip=tooltip(tip),
           **{"class": f"hv-subgraph-box hv-{css(backend)}" + (" hv-fell-back" if fell else "")})


def group_box(ctx: Ctx, w: DotWriter, g: int, rng: range) -> None:
    t = ctx.t
    ops_by: Counter = Counter()
    subs_by: Counter = Counter()
    for k in rng:
        b = ctx.subgraph_backend(k)  # what ran, with a measurement
        subs_by[b] += 1
        ops_by[b] += ctx.compute_ops(k)
    total_ops = sum(ops_by.values())
    order = [b for b in ctx.p.backends if subs_by.get(b)] + sorted(b for b in subs_by if b not in ctx.p.backends)
    name = group_name(rng.start, rng.stop - 1)
    lines = [f"<B>{name}</B>", f"{plural(total_ops, 'op')}"]
    for b in order:
        lines.append(f'<FONT POINT-SIZE="9">{html(b)}: {plural(subs_by[b], "subgraph")}, {ops_by[b]:,} ops</FONT>')
    weights = {b: ops_by[b] for b in order}
    denom = sum(weights.values())
    if denom == 0:
        weights = {b: subs_by[b] for b in order}
        denom = sum(weights.values())
    stripes = []
    acc = 0.0
    for n, b in enumerate(order):
        share = round(weights[b] / denom, 3)
        if n == len(order) - 1:
            share = round(max(0.0, 1.0 - acc), 3)
        acc += share
        if share > 0:
            stripes.append(f"{palette.fill(b)};{share}")
    dominant = max(order, key=lambda b: (weights[b], -order.index(b)))
    tip = [f"{name}: {t.subgraph_tag[rng.start]} ... {t.subgraph_tag[rng.stop - 1]}"]
    tip += [f"{b}: {subs_by[b]} subgraphs, {ops_by[b]} ops" for b in order]
    marks: dict = {"style": "striped" if len(stripes) > 1 else "filled",
                   "fillcolor": ":".join(stripes) if len(stripes) > 1 else palette.fill(dominant),
                   "color": palette.border(dominant)}
    ctx.decorate_group(rng, lines, tip, marks)
    w.node(f"s{g}", id=element_id("group", name), label=Html("<BR/>".join(lines)), shape="box", **marks,
           tooltip=tooltip(tip),
           **{"class": f"hv-group-box hv-{css(dominant)}"})


__all__ = ["collapsed", "crossing_tensors", "draw_inputs_and_outputs", "draw_boundary_edge", "subgraph_box",
           "group_box", "MAX_INPUT_NODES"]
