"""The views of a partition, each built as DOT text: full, collapsed, focus and auto.

- full:      every node, colored by backend, one cluster per subgraph, a legend
- collapsed: one box per subgraph (consecutive subgraphs grouped when there are more than
             `max_nodes`), plus graph inputs and output, edges for the tensors that cross
- focus:     the neighbourhood of a node (radius k), or one subgraph with its boundary
- auto:      full up to `max_nodes` drawn nodes (if dot can lay that out in about a second:
             `layout_budget`), collapsed above

Only `render` reads the partition; every view is linear in the graph size.
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import torch

from hierviz.errors import RenderError
from hierviz.partitioner import engine as eng
from hierviz.partitioner.result import short_dtype, tensor_spec
from hierviz.drawing import palette
from hierviz.drawing.dot import DotWriter, Html, clean, html

if TYPE_CHECKING:  # pragma: no cover
    import graphviz

    from hierviz.partitioner.result import Partition

VIEWS = ("auto", "full", "collapsed", "focus", "modules")

# The largest graph the auto view draws in full. Measured with benchmarks/render_scale.py
# (graphviz 2.43, one core): with clusters and labelled boundary edges, real models lay out
# in 0.1-0.6 s up to ~800 nodes (resnet50's 230: 0.15 s; a 32-layer BERT's 775: 0.6 s),
# while 1,160 nodes take 5.6 s and 4k nodes minutes: dot grows superlinearly.
DEFAULT_MAX_NODES = 800
# dot's time grows with nodes plus the virtual nodes long edges need (`layout_budget`).
# Aten graphs of real models need 4-4.5 units of work per node with labelled edges, so they
# reach max_nodes; graphs with many long skip edges (zoo.synthetic: 17 per node; 250 nodes
# took 0.9-1.5 s, 500 nodes 30 s) are collapsed.
LAYOUT_WORK_PER_NODE = 5
# Edge labels placed by the layout (`label`) are the most readable, but each is a virtual
# node, and dot's x-positioning can blow up with them: a 1,000-node chain of small clusters
# took over 2 minutes with labels and 0.4 s with `xlabel`s (placed after layout, may overlap).
# Labels are used up to this much work per max_nodes (real models up to ~500 nodes).
LABEL_WORK_PER_NODE = 3
# A graph input (or weight) feeding more nodes or boxes than this gets one edge to its first
# user and a small reference node beside each other user: long edges from one input to
# every layer (attention masks, shared weights) cost dot seconds and draw a curtain of lines.
FANOUT = 4
# Graph inputs drawn one by one in the collapsed view; above this they share one node.
MAX_INPUT_NODES = 12
LABEL_CHARS = 40
FONT = "Helvetica"

_DTYPES = {
    "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int64": "i64",
    "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool",
    "complex64": "c64", "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
}


# ---------------------------------------------------------------------------- text helpers
def op_short(op: str) -> str:
    """'torch.ops.aten.convolution.default' -> 'convolution'; '_operator.getitem' -> 'getitem'."""
    if op.startswith("torch.ops."):
        parts = op.split(".")
        if len(parts) >= 4:
            return parts[3] if parts[2] == "aten" else f"{parts[2]}.{parts[3]}"
    return op.rsplit(".", 1)[-1] if op else op


def _dims(shape: Sequence[Any]) -> str:
    return ",".join(str(d) for d in shape)


def compact_spec(node: torch.fx.Node) -> str:
    """A node's value for an edge label: 'f32[1,64,56,56]', 'tuple(3)', 'int', ''."""
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        dt = str(val.dtype).replace("torch.", "")
        return f"{_DTYPES.get(dt, dt)}[{_dims(val.shape)}]"
    if isinstance(val, (tuple, list)):
        return f"{type(val).__name__}({len(val)})"
    tm = node.meta.get("tensor_meta")
    if tm is not None and hasattr(tm, "shape"):
        dt = str(tm.dtype).replace("torch.", "")
        return f"{_DTYPES.get(dt, dt)}[{_dims(tm.shape)}]"
    if val is not None:
        return type(val).__name__
    return ""


def full_spec(node: torch.fx.Node) -> str:
    """'float32[1, 3, 224, 224]' for tooltips and input/output labels ('' if unknown)."""
    spec = tensor_spec(node)
    if spec.shape is None:
        return spec.dtype or ""
    return f"{short_dtype(spec.dtype)}[{', '.join(str(d) for d in spec.shape)}]"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _css(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def _tooltip(lines: Iterable[str]) -> str:
    """Tooltip text; each line cleaned (a name's own newlines stay visible as \\n)."""
    return "\n".join(clean(line) for line in lines)


# ---------------------------------------------------------------------------- context
@dataclass
class _Ctx:
    p: "Partition"
    max_nodes: int
    weights: bool
    res: Any = field(init=False)
    index: Any = field(init=False)
    tag_of: dict = field(init=False)
    reasons: Counter = field(default_factory=Counter)
    backends_seen: set = field(default_factory=set)
    full_work: int | None = None  # _work of the full view, once auto has measured it
    overlay: Any = None  # drawing.overlay.Overlay (measurement=)
    difference: Any = None  # drawing.difference.Difference (against=)

    def __post_init__(self) -> None:
        self.res = self.p._result
        self.index = self.res.index
        self.tag_of = self.p._tag_of

    def drawable(self, i: int) -> bool:
        return self.weights or self.index.nodes[i].op != "get_attr"

    def backend(self, i: int) -> str:
        k = self.tag_of.get(i)
        return "graph" if k is None else self.res.subgraphs[k].backend

    def code(self, i: int) -> str:
        if i in self.res.demoted:
            return eng.DEMOTED
        return self.res.assignment.code[i]

    def compute_ops(self, k: int) -> int:
        """Subgraph k's compute ops (Subgraph.compute_ops, without describing every subgraph)."""
        flags = self.index.non_compute
        return sum(1 for i in self.res.subgraphs[k].nodes if not flags[i])

    def drawn_count(self) -> int:
        if self.weights:
            return len(self.index.nodes)
        return sum(1 for n in self.index.nodes if n.op != "get_attr")


def _resolve_limit(max_nodes: int | None) -> int:
    if max_nodes is None:
        return DEFAULT_MAX_NODES
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise RenderError(f"max_nodes must be a positive integer, not {max_nodes!r}.")
    return max_nodes


# ---------------------------------------------------------------------------- entry point
def render(p: "Partition", view: str = "auto", *, focus: Any = None, max_nodes: int | None = None,
           radius: int = 2, weights: bool = False, depth: int | None = None, measurement: Any = None,
           against: Any = None) -> "graphviz.Digraph":
    """The partition as a `graphviz.Digraph` (DOT only; no layout runs here).

    view: 'full' (every node), 'collapsed' (one box per subgraph), 'focus' (around `focus`:
    a node name, or a subgraph tag for its inside and boundary), or 'auto' (full up to
    `max_nodes` drawn nodes, collapsed above; 'focus' when `focus` is given).
    max_nodes: auto's threshold, and the most boxes/nodes collapsed and focus draw
    (default DEFAULT_MAX_NODES, what graphviz lays out in about a second).
    radius: the focus neighbourhood, in edges. weights: also draw weights/constants.
    view='modules' groups nodes by nn.Module (`depth` levels deep; `focus`: a module path).
    measurement: a hv.Measurement of p, overlaid as time per subgraph / module.
    against: another Partition of the same graph; what differs from it is marked, the rest dimmed.
    """
    import graphviz

    if view not in VIEWS:
        raise RenderError(f"unknown view {view!r}; views are {', '.join(VIEWS)}.")
    if isinstance(radius, bool) or not isinstance(radius, int) or radius < 0:
        raise RenderError(f"radius must be an integer >= 0, not {radius!r}.")
    limit = _resolve_limit(max_nodes)
    from hierviz.drawing.difference import make_difference
    from hierviz.drawing.overlay import make_overlay

    overlay, difference = make_overlay(p, measurement), make_difference(p, against)
    if view == "modules":
        from hierviz.drawing.modules import render_modules

        lines, info = render_modules(p, focus=focus, depth=depth, max_nodes=max_nodes, overlay=overlay,
                                     difference=difference)
        g = graphviz.Digraph(name="hierviz", comment="hierviz modules view")
        g.body.extend(lines)
        g.hv_info = info  # type: ignore[attr-defined]
        return g
    if depth is not None:
        raise RenderError("depth= is for view='modules' (how many module levels to draw).")
    ctx = _Ctx(p, limit, bool(weights), overlay=overlay, difference=difference)
    if view == "auto":
        if focus is not None:
            view = "focus"
        elif ctx.drawn_count() <= limit:
            ctx.full_work = _work(ctx, _all_drawn(ctx))
            view = "full" if ctx.full_work <= layout_budget(limit) else "collapsed"
        else:
            view = "collapsed"
    if focus is not None and view != "focus":
        raise RenderError(f"focus= draws the focus view; drop view={view!r} (or pass view='focus').")
    if view == "focus" and focus is None:
        raise RenderError("view='focus' needs focus=<node name> or focus=<subgraph tag>, e.g. "
                          f"focus={p._result.tags[0]!r}." if p._result.tags else
                          "view='focus' needs focus=<node name> or focus=<subgraph tag>.")
    w = DotWriter()
    _defaults(w)
    with eng.gc_paused():
        if view == "full":
            info = _full(ctx, w)
        elif view == "collapsed":
            info = _collapsed(ctx, w)
        else:
            info = _focus(ctx, w, focus, radius)
    g = graphviz.Digraph(name="hierviz", comment=f"hierviz {view} view")
    g.body.extend(w.lines)
    info["view"] = view
    g.hv_info = info  # type: ignore[attr-defined]
    return g


def _defaults(w: DotWriter) -> None:
    w.defaults("graph", rankdir="TB", fontname=FONT, fontsize=11, nodesep=0.2, ranksep=0.26,
               labelloc="t", labeljust="l", outputorder="edgesfirst", forcelabels=True)
    w.defaults("node", fontname=FONT, fontsize=10, height=0.26, margin="0.1,0.02", penwidth=1.0)
    w.defaults("edge", fontname=FONT, fontsize=8, arrowsize=0.6, color=palette.INTERNAL_EDGE,
               penwidth=0.9)


# ---------------------------------------------------------------------------- full & focus
def _node_label(ctx: _Ctx, i: int, focus: bool = False) -> Html:
    index = ctx.index
    node = index.nodes[i]
    name = html(index.names[i], LABEL_CHARS)
    head = f"<B>{name}</B>" if focus else name
    if node.op == "placeholder":
        return Html(f"<B>{name}</B><BR/><FONT POINT-SIZE=\"9\">{html(full_spec(node))}</FONT>")
    if node.op == "output":
        outs = index.inputs[i]
        lines = [f"<FONT POINT-SIZE=\"9\">{html(index.names[a], 24)}: {html(full_spec(index.nodes[a]))}</FONT>"
                 for a in outs[:8]]
        if len(outs) > 8:
            lines.append(f"<FONT POINT-SIZE=\"9\">+{len(outs) - 8} more</FONT>")
        return Html("<B>output</B>" + "".join("<BR/>" + line for line in lines))
    if node.op == "get_attr":
        return Html(f"<FONT POINT-SIZE=\"8\">{name}</FONT>")
    op = op_short(index.ops[i])
    if index.names[i].startswith(op) or not op:
        return Html(head)
    return Html(f"{head}<BR/><FONT POINT-SIZE=\"8\" COLOR=\"#333333\">{html(op, LABEL_CHARS)}</FONT>")


def _node_tooltip(ctx: _Ctx, i: int, extra: Sequence[str] = ()) -> str:
    p, index = ctx.p, ctx.index
    node = index.nodes[i]
    name = index.names[i]
    lines = [name]
    if node.op in eng.CALLABLE_OPS:
        lines.append(f"op: {index.ops[i]}")
        tag = p._result.tags[ctx.tag_of[i]]
        lines.append(f"runs in: {ctx.backend(i)} (subgraph {tag})")
        lines.append(f"why: {p.reason_of(name)}")
    else:
        lines.append(p.reason_of(name))
    spec = full_spec(node)
    if spec and node.op != "output":
        lines.append(f"value: {spec}")
    consts = [a for a in index.inputs[i] if index.nodes[a].op == "get_attr"]
    if consts:
        shown = ", ".join(f"{index.names[a]} {full_spec(index.nodes[a])}".strip() for a in consts[:4])
        lines.append(f"weights: {shown}" + (f" (+{len(consts) - 4})" if len(consts) > 4 else ""))
    lines.extend(extra)
    return _tooltip(lines)


def _draw_node(ctx: _Ctx, w: DotWriter, i: int, focus: bool = False) -> None:
    node = ctx.index.nodes[i]
    backend = ctx.backend(i)
    if node.op in eng.CALLABLE_OPS:
        code = ctx.code(i)
        ctx.reasons[code] += 1
    else:
        code = eng.NOT_CALLABLE
    st = palette.style(code)
    line = palette.border(backend)
    if code == eng.DEMOTED:
        line = palette.color(ctx.p.eligible_backend_of(ctx.index.names[i]))
    shape, styl, pen = st.shape, st.style, st.penwidth
    if node.op == "get_attr":
        shape, styl, pen = "note", "filled", 0.6
    elif node.op == "output":
        shape = "box"
    ctx.backends_seen.add(backend)
    label, tip = _node_label(ctx, i, focus), _node_tooltip(ctx, i)
    marks: dict = {"fillcolor": palette.fill(backend), "color": palette.FOCUS if focus else line,
                   "penwidth": 3.5 if focus else pen}
    if ctx.difference is not None and node.op in eng.CALLABLE_OPS:
        extra: list[str] = []
        notes: list[str] = []
        ctx.difference.decorate_node(i, extra, notes, marks)
        label = Html("<BR/>".join([label, *extra]))
        tip = _tooltip([tip, *notes])
    w.node(
        f"n{i}",
        label=label,
        tooltip=tip,
        shape=shape,
        style=styl,
        **marks,
        peripheries=st.peripheries if st.peripheries != 1 else None,
        fontsize=8 if code == eng.FOLLOWS_PRODUCER else None,
        height=0.2 if code == eng.FOLLOWS_PRODUCER else None,
        **{"class": f"hv-node hv-{_css(backend)} hv-{code}"},
    )


def _cluster_label(tag: str, line: str, extra: Sequence[str] = ()) -> Html:
    """A subgraph's label: its tag, backend and op count (and overlay lines), left-aligned."""
    more = "".join(f"{x}{_L}" for x in extra)
    return Html(f'<FONT POINT-SIZE="9"><B>{html(tag, LABEL_CHARS)}</B>{_L}{html(line, 60)}{_L}{more}</FONT>')


def _decorate_subgraph(ctx: _Ctx, k: int, lines: list[str], tip: list[str], attrs: dict) -> None:
    """Overlay (measured time) and diff marks of subgraph k, into label lines, tooltip, attributes."""
    if ctx.overlay is not None:
        ctx.overlay.decorate_subgraph(ctx.res.tags[k], lines, tip, attrs)
    if ctx.difference is not None:
        ctx.difference.decorate_subgraph(ctx.res.subgraphs[k].nodes, lines, tip, attrs)


def _draw_nodes_and_edges(ctx: _Ctx, w: DotWriter, drawn: Sequence[int], focus_node: int | None = None,
                          labels: str = "label", focus_cluster: int | None = None) -> dict:
    """Nodes (grouped into one cluster per subgraph) and the edges between drawn nodes."""
    res, index = ctx.res, ctx.index
    drawn_set = set(drawn)
    clusters: dict[int, list[int]] = {}
    outside: list[int] = []
    for i in drawn:
        k = ctx.tag_of.get(i)
        if k is None:
            outside.append(i)
        else:
            clusters.setdefault(k, []).append(i)
    refs = _fanout_refs(ctx, drawn, drawn_set)
    refs_of: dict[int, list[int]] = {}
    for a, j in sorted(refs):
        refs_of.setdefault(j, []).append(a)

    def draw_refs(j: int) -> None:
        for a in refs_of.get(j, ()):
            w.node(f"ref{a}_{j}", label=Html(f'<FONT POINT-SIZE="8">{html(index.names[a], 24)}</FONT>'),
                   shape="plaintext", height=0.15, margin="0.02",
                   tooltip=_tooltip([index.names[a], full_spec(index.nodes[a]),
                                     "(a reference: drawn once, used here too)"]), **{"class": "hv-input-ref"})

    for k in sorted(clusters):
        raw = res.subgraphs[k]
        ops = ctx.compute_ops(k)
        members = clusters[k]
        size = len(raw.nodes)
        shown = "" if len(members) == size else f" (showing {len(members):,} of {size:,} nodes)"
        extra: list[str] = []
        notes: list[str] = []
        marks: dict = {"fillcolor": palette.cluster_fill(raw.backend), "color": palette.color(raw.backend),
                       "penwidth": 3.0 if k == focus_cluster else 1.4}
        _decorate_subgraph(ctx, k, extra, notes, marks)
        marks.pop("fontcolor", None)
        label = _cluster_label(res.tags[k], f"{raw.backend} · {_plural(ops, 'op')}{shown}", extra)
        tip = _tooltip([res.tags[k], f"backend: {raw.backend}", f"{_plural(ops, 'op')}, {_plural(size, 'node')}",
                        *notes])
        w.open(f"cluster_{k}", label="", style="filled,rounded", **marks,
               tooltip=tip,
               **{"class": f"hv-subgraph hv-{_css(raw.backend)}"})
        for i in members:
            _draw_node(ctx, w, i, i == focus_node)
            draw_refs(i)  # inside the cluster: outside, they push each cluster sideways
        # The label is a node beside the first member, not the cluster label: dot routes edges
        # around nodes but straight through cluster labels.
        w.node(f"h{k}", label=label, shape="plaintext", margin="0.02", height=0.2, tooltip=tip,
               **{"class": "hv-cluster-label"})
        w.raw(f"{{rank=same; h{k}; n{members[0]}}}")
        w.edge(f"h{k}", f"n{members[0]}", style="invis")
        w.close()
    for i in outside:
        _draw_node(ctx, w, i, i == focus_node)
        draw_refs(i)

    boundary = 0
    for j in drawn:
        kj = ctx.tag_of.get(j)
        for a in index.inputs[j]:
            if a not in drawn_set:
                continue
            tail = f"n{a}"
            if (a, j) in refs:
                tail = f"ref{a}_{j}"
            if index.nodes[a].op == "get_attr":
                w.edge(tail, f"n{j}", style="dotted", arrowsize=0.4)
                continue
            if ctx.tag_of.get(a) == kj:
                w.edge(tail, f"n{j}")
                continue
            boundary += 1
            spec = compact_spec(index.nodes[a])
            text = spec or "value"
            w.edge(tail, f"n{j}", label=text if labels == "label" else None,
                   xlabel=text if labels == "xlabel" else None, color=palette.BOUNDARY_EDGE, penwidth=1.8,
                   fontcolor=palette.BOUNDARY_EDGE,
                   tooltip=_tooltip([f"{index.names[a]} -> {index.names[j]}", full_spec(index.nodes[a])]),
                   **{"class": "hv-boundary"})
    return {"nodes": len(drawn), "clusters": len(clusters), "boundary_edges": boundary, "edge_labels": labels}


_L = '<BR ALIGN="LEFT"/>'


def _swatch(text: str, fill: str, line: str, *, border: int = 1, style: str | None = "rounded",
            double: bool = False) -> str:
    """One legend cell: `text` in a box drawn like the nodes it stands for."""
    st = f' STYLE="{style}"' if style else ""
    if double:
        return (f'<TD BORDER="1" COLOR="{line}" CELLPADDING="1"><TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" '
                f'CELLPADDING="2" COLOR="{line}"><TR><TD BGCOLOR="{fill}">{text}</TD></TR></TABLE></TD>')
    return f'<TD BGCOLOR="{fill}" BORDER="{border}" COLOR="{line}"{st} CELLPADDING="3" BALIGN="LEFT">{text}</TD>'


def _legend_grid(columns: Sequence[tuple[str, Sequence[str]]], note: str) -> str:
    """The legend as one grid: a column of swatches per heading, rows shared (so no column
    stretches its swatches to another's height), and the free-text note spanning all rows."""
    rows = max(len(cells) for _, cells in columns)
    head = "".join(f'<TD ALIGN="LEFT"><I>{title}</I></TD>' for title, _ in columns)
    lines = [f'<TR>{head}<TD ALIGN="LEFT"><I>edges</I></TD></TR>']
    for r in range(rows):
        cells = "".join(col[r] if r < len(col) else "<TD></TD>" for _, col in columns)
        if r == 0:
            cells += f'<TD ALIGN="LEFT" VALIGN="TOP" BALIGN="LEFT" ROWSPAN="{rows}">{note}</TD>'
        lines.append(f"<TR>{cells}</TR>")
    return ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="0">' + "".join(lines) + "</TABLE>")


def _title(ctx: _Ctx, w: DotWriter, view_text: str, *, collapsed: bool = False, grouped: bool = False) -> None:
    """The graph label: view, config and stats, then the legend (backends, node styles, edges).

    The legend lives in the label, not in a cluster, so it costs dot no layout work and
    always sits at the top left."""
    p = ctx.p
    s = p.stats
    by = ", ".join(f"{b} {n}" for b, n in s["subgraphs_by_backend"].items() if n)
    stats = (f"{html(p.config.label())}  ·  {s['nodes']:,} nodes, {_plural(s['subgraphs'], 'subgraph')} "
             f"({html(by)})  ·  coverage {s['coverage']:.0%}  ·  {_plural(s['boundary_tensors'], 'boundary tensor')}")
    counts = s["subgraphs_by_backend"]
    backends = list(p.backends) + sorted(b for b in ctx.backends_seen if b not in p.backends and b != "graph")
    cells = [_swatch(f"{html(b)} · {_plural(counts.get(b, 0), 'subgraph')}", palette.fill(b), palette.border(b))
             for b in backends]
    columns: list[tuple[str, Sequence[str]]] = [("backends", cells)]
    if not collapsed:
        torch_fill, torch_line = palette.fill("torch"), palette.border("torch")
        samples = [_swatch("op (color: its backend)", palette.fill("graph"), palette.border("graph"))]
        if ctx.reasons.get(eng.FOLLOWS_PRODUCER):
            samples.append(_swatch("getitem/view, runs with its producer (oval)", palette.fill("graph"),
                                   palette.border("graph")))
        if ctx.reasons.get(eng.UNSUPPORTED):
            samples.append(_swatch("unsupported by every backend (octagon)", torch_fill, torch_line, border=3,
                                   style=None))
        if ctx.reasons.get(eng.VALIDATOR):
            samples.append(_swatch("converter validator rejected it (octagon, dashed)", torch_fill, torch_line,
                                   border=2, style="dashed"))
        if ctx.reasons.get(eng.TORCH_EXECUTED):
            samples.append(_swatch("in torch_executed_ops", torch_fill, torch_line, style=None, double=True))
        if ctx.reasons.get(eng.DEMOTED):
            samples.append(_swatch(f"demoted: its subgraph &lt; min_block_size {p.config.min_block_size}"
                                   f"{_L}(rounded, dashed; border: the backend it was eligible for)", torch_fill,
                                   palette.GRAPH, border=2, style="rounded,dashed"))
        columns.append(("nodes", samples))
        note = (f"bold, labelled dtype[shape]:{_L}a tensor crossing subgraphs{_L}thin grey: inside a subgraph{_L}"
                f"{_L}SVG: hover nodes, edges and{_L}subgraphs for details{_L}")
    else:
        text = f"tensors crossing between{_L}subgraphs (label: dtype[shape],{_L}n × dtype[shape], or a count){_L}"
        if grouped:
            text += (f"{_L}striped boxes: runs of consecutive{_L}subgraphs; stripe width: share{_L}"
                     f"of ops per backend{_L}")
        text += f"{_L}detail: view='full', or focus={_L}a subgraph tag or node name{_L}"
        note = text
    label = (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
             f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="14"><B>{html(view_text)}</B></FONT></TD></TR>'
             f'<TR><TD ALIGN="LEFT">{stats}</TD></TR>'
             f'<TR><TD ALIGN="LEFT">{_legend_grid(columns, note)}</TD></TR></TABLE>')
    w.defaults("graph", label=Html(label))


def _all_drawn(ctx: _Ctx) -> list[int]:
    return [i for i in range(len(ctx.index.nodes)) if ctx.drawable(i)]


def _fanout_refs(ctx: _Ctx, drawn: Sequence[int], inside: set[int]) -> set[tuple[int, int]]:
    """(input, user) edges drawn from a reference node instead: every use but the first of a
    graph input or weight with more than FANOUT drawn users."""
    index = ctx.index
    refs: set[tuple[int, int]] = set()
    for a in drawn:
        if index.nodes[a].op not in ("placeholder", "get_attr"):
            continue
        users = [u for u in index.users[a] if u in inside]
        if len(users) > FANOUT:
            refs.update((a, u) for u in sorted(users)[1:])
    return refs


def _work(ctx: _Ctx, drawn: Sequence[int]) -> int:
    """dot's layout work for drawing `drawn` in full with labelled edges (see layout_budget)."""
    inside = set(drawn)
    refs = _fanout_refs(ctx, drawn, inside)
    edges = [(a, j) for j in drawn for a in ctx.index.inputs[j] if a in inside and (a, j) not in refs]
    return len(drawn) + len(refs) + 2 * _span(edges, int)


def _edge_labels(ctx: _Ctx, drawn: Sequence[int], work: int | None = None) -> str:
    """'label' (placed by the layout, readable) when dot can afford it, else 'xlabel'
    (placed after layout, may overlap, but a 250-node graph with long edges lays out 4-10x faster)."""
    if work is None:
        work = _work(ctx, drawn)
    return "label" if work <= LABEL_WORK_PER_NODE * ctx.max_nodes else "xlabel"


def _full(ctx: _Ctx, w: DotWriter) -> dict:
    drawn = _all_drawn(ctx)
    info = _draw_nodes_and_edges(ctx, w, drawn, labels=_edge_labels(ctx, drawn, ctx.full_work))
    _title(ctx, w, "hierviz · full view")
    return info


# ---------------------------------------------------------------------------- focus
def _resolve_focus(p: "Partition", focus: Any) -> tuple[str, Any]:
    from hierviz.partitioner.result import Subgraph

    if isinstance(focus, Subgraph):
        focus = focus.tag
    elif isinstance(focus, torch.fx.Node):
        focus = focus.name
    if not isinstance(focus, str):
        raise RenderError(f"focus must be a node name or a subgraph tag (str), not {type(focus).__name__}.")
    if focus in p._result.tags:
        return "subgraph", focus
    if focus in p._result.index.position:
        return "node", focus
    candidates = list(p._result.tags) + p._result.index.names
    close = difflib.get_close_matches(focus, candidates, n=5)
    hint = f" Did you mean: {', '.join(repr(c) for c in close)}?" if close else ""
    raise RenderError(f"focus {focus!r} is neither a node name nor a subgraph tag of this partition.{hint} "
                      "Node names are in Partition.subgraphs[i].nodes; tags in Partition.summary().")


def _neighbours(ctx: _Ctx, i: int) -> Iterable[int]:
    index = ctx.index
    for a in index.inputs[i]:
        if ctx.drawable(a):
            yield a
    for u in index.users[i]:
        if ctx.drawable(u):
            yield u


def _focus(ctx: _Ctx, w: DotWriter, focus: Any, radius: int) -> dict:
    kind, name = _resolve_focus(ctx.p, focus)
    index = ctx.index
    limit = ctx.max_nodes
    truncated = False
    center: int | None = None
    cluster: int | None = None
    if kind == "node":
        center = index.position[name]
        seen = {center}
        frontier = [center]
        for _ in range(radius):
            nxt: list[int] = []
            for i in frontier:
                for j in _neighbours(ctx, i):
                    if j not in seen:
                        if len(seen) >= limit:
                            truncated = True
                            break
                        seen.add(j)
                        nxt.append(j)
            frontier = sorted(nxt)
            if not frontier:
                break
        title = f"hierviz · focus on node {clean(name, 60)} (radius {radius})"
    else:
        cluster = ctx.res.tags.index(name)
        members = sorted(ctx.res.subgraphs[cluster].nodes)
        if len(members) > limit:
            members, truncated = members[:limit], True
        seen = set(members)
        for i in list(members):
            for j in _neighbours(ctx, i):
                if j not in seen:
                    if len(seen) >= limit + min(limit, 200):
                        truncated = True
                        break
                    seen.add(j)
        title = f"hierviz · focus on subgraph {clean(name, 60)} and its boundary"
    drawn = sorted(seen)
    if truncated:
        title += f" (truncated at max_nodes={limit})"
    info = _draw_nodes_and_edges(ctx, w, drawn, center, labels=_edge_labels(ctx, drawn), focus_cluster=cluster)
    # Stubs: how many neighbours of a drawn node are not drawn.
    drawn_set = set(drawn)
    for i in drawn:
        hidden_in = sum(1 for a in index.inputs[i] if ctx.drawable(a) and a not in drawn_set)
        hidden_out = sum(1 for u in index.users[i] if ctx.drawable(u) and u not in drawn_set)
        if hidden_in:
            w.node(f"stub_in_{i}", label=f"{_plural(hidden_in, 'more input')}", shape="plaintext",
                   fontsize=8, fontcolor="#555555", height=0.2, **{"class": "hv-stub"})
            w.edge(f"stub_in_{i}", f"n{i}", style="dashed", color="#AAAAAA")
        if hidden_out:
            w.node(f"stub_out_{i}", label=f"{_plural(hidden_out, 'more user')}", shape="plaintext",
                   fontsize=8, fontcolor="#555555", height=0.2, **{"class": "hv-stub"})
            w.edge(f"n{i}", f"stub_out_{i}", style="dashed", color="#AAAAAA")
    _title(ctx, w, title)
    info.update({"focus": name, "focus_kind": kind, "truncated": truncated})
    return info


# ---------------------------------------------------------------------------- collapsed
def _group_size(n_sub: int, n_in: int, n_out: int, pairs: Sequence[tuple[int, int]],
                max_nodes: int) -> tuple[int, str | None]:
    """How many consecutive subgraphs share a box, and how edges are labelled, so that the
    collapsed view has at most `max_nodes` boxes and fits dot's layout budget."""
    budget = layout_budget(max_nodes)
    size = max(1, math.ceil(n_sub / max(max_nodes - n_in - n_out, 8)))
    if size == 1:
        span = _group_span(n_sub, n_in, 1, pairs)
        nodes = n_sub + n_in + n_out
        if nodes + 2 * span <= LABEL_WORK_PER_NODE * max_nodes:
            return 1, "label"
        if nodes + span <= budget:
            return 1, "xlabel"
        size = 2
    while size < n_sub:
        groups = math.ceil(n_sub / size)
        if groups + n_in + n_out + _group_span(n_sub, n_in, size, pairs) <= budget:
            break
        size = math.ceil(size * 1.5)
    return min(size, max(n_sub, 1)), None


def _group_span(n_sub: int, n_in: int, size: int, pairs: Sequence[tuple[int, int]]) -> int:
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
    return len(refs) + _span(edges - refs,
                             lambda g: (1, g) if g < n_groups else ((0, g) if g < n_groups + n_in else (2, g)))


def _span(edges: Iterable[tuple[int, int]], order_key: Any) -> int:
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


def layout_budget(max_nodes: int) -> int:
    """Layout work (nodes + the rank span of edges, twice that with edge labels) that dot
    does in about a second, for a node limit of max_nodes."""
    return LAYOUT_WORK_PER_NODE * max_nodes


def _subgraph_ops(ctx: _Ctx, k: int) -> Counter:
    index = ctx.index
    return Counter(op_short(index.ops[i]) for i in ctx.res.subgraphs[k].nodes if not index.non_compute[i])


def _why_torch(ctx: _Ctx, k: int) -> Counter:
    why: Counter = Counter()
    for i in ctx.res.subgraphs[k].nodes:
        code = ctx.code(i)
        if code in palette.FALLBACK_REASONS:
            why[code] += 1
    return why


_WHY_TEXT = {"unsupported": "unsupported", "validator_rejected": "validator rejected",
             "torch_executed_ops": "torch_executed_ops", "demoted": "demoted"}


def _collapsed(ctx: _Ctx, w: DotWriter) -> dict:
    res, index = ctx.res, ctx.index
    n_sub = len(res.subgraphs)
    placeholders = [i for i, n in enumerate(index.nodes) if n.op == "placeholder" and index.users[i]]
    outputs = [i for i, n in enumerate(index.nodes) if n.op == "output"]
    merged_inputs = len(placeholders) > MAX_INPUT_NODES
    n_in = 1 if merged_inputs else len(placeholders)
    io_nodes = n_in + len(outputs)

    # Endpoint keys: subgraph k -> k, graph input -> n_sub + slot, output -> n_sub + n_in + slot.
    key: list[int] = [-1] * len(index.nodes)
    for i, k in ctx.tag_of.items():
        key[i] = k
    for slot, i in enumerate(placeholders):
        key[i] = n_sub + (0 if merged_inputs else slot)
    for slot, i in enumerate(outputs):
        key[i] = n_sub + n_in + slot
    crossing: dict[tuple[int, int], dict[int, None]] = {}
    for j in range(len(index.nodes)):
        dst = key[j]
        if dst < 0:
            continue
        for a in index.inputs[j]:
            src = key[a]
            if src < 0 or src == dst:
                continue
            tensors = crossing.get((src, dst))
            if tensors is None:
                tensors = crossing[(src, dst)] = {}
            tensors[a] = None

    size, labels = _group_size(n_sub, n_in, len(outputs), list(crossing), ctx.max_nodes)
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

    view_text = f"hierviz · collapsed view · {_plural(n_sub, 'subgraph')}"
    if grouped:
        view_text += f", {size} per box"
    # Inputs
    if merged_inputs:
        shown = "<BR/>".join(f'<FONT POINT-SIZE="9">{html(index.names[i], 24)}: {html(full_spec(index.nodes[i]))}</FONT>'
                             for i in placeholders[:6])
        w.node("inputs", label=Html(f"<B>{len(placeholders)} graph inputs</B><BR/>{shown}<BR/>"
                                    f'<FONT POINT-SIZE="9">...</FONT>'),
               shape="box", style="rounded,filled", fillcolor=palette.fill("graph"), color=palette.border("graph"),
               tooltip=_tooltip([f"{index.names[i]}: {full_spec(index.nodes[i])}" for i in placeholders[:40]]),
               **{"class": "hv-node hv-graph hv-input"})
    else:
        for i in placeholders:
            w.node(f"in{i}", label=_node_label(ctx, i), shape="box", style="rounded,filled",
                   fillcolor=palette.fill("graph"), color=palette.border("graph"),
                   tooltip=_node_tooltip(ctx, i), **{"class": "hv-node hv-graph hv-input"})
    for i in outputs:
        w.node(f"out{i}", label=_node_label(ctx, i), shape="box", style="rounded,filled",
               fillcolor=palette.fill("graph"), color=palette.border("graph"),
               tooltip=_tooltip(["output"] + [f"{index.names[a]}: {full_spec(index.nodes[a])}"
                                              for a in index.inputs[i][:40]]),
               **{"class": "hv-node hv-graph hv-output"})

    # Boxes
    for g, rng in enumerate(groups):
        if not grouped:
            _subgraph_box(ctx, w, rng.start)
        else:
            _group_box(ctx, w, g, rng)
        for k in rng:
            ctx.backends_seen.add(res.subgraphs[k].backend)

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
            name = "graph inputs" if ids[ga] == "inputs" else index.names[placeholders[ga - 2 * n_sub]]
            w.node(tail, label=Html(f'<FONT POINT-SIZE="8">{html(name, 24)}</FONT>'), shape="plaintext",
                   height=0.15, margin="0.02", tooltip=_tooltip([name, "(a reference: drawn once, used here too)"]),
                   **{"class": "hv-input-ref"})
        tensors = list(edges[(ga, gb)])
        specs = {compact_spec(index.nodes[a]) or "value" for a in tensors[:50]}
        if len(tensors) == 1:
            text = specs.pop()
        elif len(specs) == 1 and len(tensors) <= 50:
            text = f"{len(tensors)} × {specs.pop()}"
        else:
            text = f"{len(tensors)} tensors"
        tip = [f"{len(tensors)} tensor(s):"] + [f"{index.names[a]}: {full_spec(index.nodes[a])}" for a in tensors[:20]]
        if len(tensors) > 20:
            tip.append(f"... {len(tensors) - 20} more")
        w.edge(tail, ids[gb], label=text if labels == "label" else None,
               xlabel=text if labels == "xlabel" else None, color=palette.BOUNDARY_EDGE,
               penwidth=round(1.0 + min(3.0, math.log2(len(tensors))), 2) if len(tensors) > 1 else 1.2,
               fontcolor=palette.BOUNDARY_EDGE, tooltip=_tooltip(tip), **{"class": "hv-boundary"})
    _title(ctx, w, view_text, collapsed=True, grouped=grouped)
    return {"nodes": len(groups) + io_nodes, "boxes": len(groups), "grouped": grouped,
            "group_size": size, "boundary_edges": len(edges), "edge_labels": labels}


def _subgraph_box(ctx: _Ctx, w: DotWriter, k: int) -> None:
    res = ctx.res
    raw = res.subgraphs[k]
    sg = ctx.p.subgraphs[k]
    tag = res.tags[k]
    ops = _subgraph_ops(ctx, k)
    lines = [f"<B>{html(tag)}</B>", f"{html(raw.backend)} · {_plural(sg.compute_ops, 'op')}"]
    for o, c in ops.most_common(3):  # the top ops, one a line, so long aten names stay whole
        lines.append(f'<FONT POINT-SIZE="9">{html(o, LABEL_CHARS)} ×{c}</FONT>')
    if len(ops) > 3:
        lines.append(f'<FONT POINT-SIZE="9">+{_plural(len(ops) - 3, "more op type")}</FONT>')
    tip = [tag, f"backend: {raw.backend}", f"{sg.compute_ops} ops, {len(sg.nodes)} nodes",
           "ops: " + ", ".join(f"{o} ×{c}" for o, c in ops.most_common(12))]
    styl, pen = "rounded,filled", 1.2
    if raw.backend == eng.FALLBACK:
        why = _why_torch(ctx, k)
        if why:
            text = ", ".join(f"{_WHY_TEXT[c]} ×{n}" for c, n in sorted(why.items()))
            lines.append(f'<FONT POINT-SIZE="9">why: {html(text)}</FONT>')
            tip.append(f"why: {text}")
            if why.get(eng.UNSUPPORTED) or why.get(eng.VALIDATOR):
                styl, pen = "rounded,filled,bold", 2.0
    tip += [f"in: {t}" for t in sg.inputs[:10]] + [f"out: {t}" for t in sg.outputs[:10]]
    marks: dict = {"penwidth": pen, "fillcolor": palette.fill(raw.backend), "color": palette.border(raw.backend)}
    _decorate_subgraph(ctx, k, lines, tip, marks)
    w.node(f"s{k}", label=Html("<BR/>".join(lines)), shape="box", style=styl, **marks, tooltip=_tooltip(tip),
           **{"class": f"hv-subgraph-box hv-{_css(raw.backend)}"})


def _group_box(ctx: _Ctx, w: DotWriter, g: int, rng: range) -> None:
    res = ctx.res
    ops_by: Counter = Counter()
    subs_by: Counter = Counter()
    for k in rng:
        b = res.subgraphs[k].backend
        subs_by[b] += 1
        ops_by[b] += ctx.compute_ops(k)
    total_ops = sum(ops_by.values())
    order = [b for b in ctx.p.backends if subs_by.get(b)] + sorted(b for b in subs_by if b not in ctx.p.backends)
    lines = [f"<B>subgraphs {rng.start}-{rng.stop - 1}</B>", f"{_plural(total_ops, 'op')}"]
    for b in order:
        lines.append(f'<FONT POINT-SIZE="9">{html(b)}: {_plural(subs_by[b], "subgraph")}, {ops_by[b]:,} ops</FONT>')
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
    tip = [f"subgraphs {rng.start}-{rng.stop - 1}: {res.tags[rng.start]} ... {res.tags[rng.stop - 1]}"]
    tip += [f"{b}: {subs_by[b]} subgraphs, {ops_by[b]} ops" for b in order]
    w.node(f"s{g}", label=Html("<BR/>".join(lines)), shape="box",
           style="striped" if len(stripes) > 1 else "filled",
           fillcolor=":".join(stripes) if len(stripes) > 1 else palette.fill(dominant),
           color=palette.border(dominant), tooltip=_tooltip(tip),
           **{"class": f"hv-group-box hv-{_css(dominant)}"})


__all__ = ["render", "VIEWS", "DEFAULT_MAX_NODES", "op_short", "compact_spec", "full_spec"]
