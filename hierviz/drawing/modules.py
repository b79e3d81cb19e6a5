"""The module view: a partition drawn the way the model's author thinks of it.

Nodes are grouped by the model's `nn.Module` hierarchy (`meta['nn_module_stack']`), one box
per module at a chosen depth; the modules above that depth are clusters around their
children. Each box shows its module path, class, op count, a bar of its backends' shares
("tensorrt 80% · torch 20%") and the subgraphs it spans.

Repeated blocks roll up: consecutive sibling modules with the same class and the same
partition pattern (the same ops at the same relative module paths, each on the same backend,
in order) are drawn once, as `layers.0–23 ×24`. A block that differs is drawn apart, so the
one odd layer stands out. `focus=<module path>` draws a module's inside.

Overlays (the `Overlay` interface, overlays.py) decorate each box: with a measurement its
measured time (each subgraph's median split over its ops by estimated work, FLOPs + bytes; see
`overlay` and `work`), with `numerics=` the worst error of its subgraphs, and with `against=`
the ops whose backend or subgraph changed are marked with both backends and the rest dimmed
(see `difference`); a repeated block rolls up only where the overlays' node keys match too.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from hierviz.drawing import palette
from hierviz.drawing.dot import DotWriter, Html, element_id, html, repeat_name
from hierviz.drawing.module_tree import (
    INDEXED,
    Item,
    Mod,
    Plan,
    build_tree,
    effective_root,
    effective_root_of,
    find_module,
    is_module,
    make_plan,
    between_copies,
    copies,
    loose_edges,
    walk_items,
)
from hierviz.drawing.time_overlay import edge_weight, size_text, tensor_bytes
from hierviz.drawing.overlays import Overlay, fell_back, node_keys, ran_on, titles
from hierviz.drawing.text import css, op_short, tooltip
from hierviz.errors import RenderError
from hierviz.partitioner import FALLBACK
from hierviz.partitioner.counts import count_text

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.record import NodeTable
    from hierviz.partitioner.partition_result import Partition

# The most boxes and clusters the default depth may draw: more stop being an overview (and
# a 24-layer Llama's full depth, rolled up, is about 20).
DEFAULT_BUDGET = 40
TOP = "(top level)"
BAR_WIDTH = 120
# ---------------------------------------------------------------------------- text
def _range_name(run: list[Mod], base: Mod) -> str:
    """'layers.0–23 ×24' for a run of container items, 'block3-1…5 ×5' for numbered names,
    'self_attn' for one module."""
    names = [m.rel(base) for m in run]
    if len(run) == 1:
        return names[0]
    matches = [mt for n in names if (mt := INDEXED.match(n)) is not None]
    if len(matches) == len(names) and len({mt.group(1) for mt in matches}) == 1:
        first, last = matches[0].group(2), matches[-1].group(2)
        prefix = matches[0].group(1)
        if not prefix and base.path:  # items of a Sequential drawn inside it: 'layer1.0–1', not '0–1'
            prefix = base.path.rsplit(".", 1)[-1] + "."
        if prefix and not prefix.endswith("."):  # block3-1…5: a dash would read as part of the name
            return f"{names[0]}\u2026{last} \u00d7{len(run)}"
        return f"{prefix}{first}\u2013{last} \u00d7{len(run)}"
    return f"{names[0]} \u2026 {names[-1]} \u00d7{len(run)}"


def _bar(shares: Sequence[tuple[str, float]], width: int = BAR_WIDTH, height: int = 7) -> str:
    """A horizontal bar of colored cells, one per (color, share), as an HTML-like table."""
    cells = []
    left = width
    for n, (color, share) in enumerate(shares):
        w = left if n == len(shares) - 1 else max(1, round(width * share))
        w = max(1, min(w, left))
        left -= w
        if w > 0:
            cells.append(f'<TD WIDTH="{w}" HEIGHT="{height}" FIXEDSIZE="TRUE" BGCOLOR="{color}"></TD>')
        if left <= 0:
            break
    return ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0" ALIGN="LEFT" FIXEDSIZE="TRUE" '
            f'WIDTH="{width}" HEIGHT="{height}"><TR>' + "".join(cells)
            + "</TR></TABLE>")


def _tags_text(tags: list[str]) -> str:
    if not tags:
        return ""
    if len(tags) == 1:
        return tags[0]
    if len(tags) == 2:
        return f"{tags[0]}, {tags[1]}"
    return f"{tags[0]} \u2026 {tags[-1]} ({len(tags)} subgraphs)"


# ---------------------------------------------------------------------------- drawing
@dataclass
class _Facts:
    """What a drawn item stands for: its ops (all members), per-member op count, backends."""

    ops: list[int]
    per_member: int
    backends: Counter
    tags: list[str]


def _facts(t: NodeTable, item: Item, tag_order: dict[str, int], ran: Sequence[str]) -> _Facts:
    """`ran`: per node, the backend it ran on (PyTorch where a measured subgraph fell back)."""
    ops: list[int] = list(item.own) if item.own_only else [i for m in item.members for i in m.ops]
    compute = [i for i in ops if t.compute[i]] or ops
    backends = Counter(ran[i] for i in compute)
    tags = sorted({g for i in ops if (g := t.tag[i]) is not None}, key=lambda g: tag_order.get(g, 0))
    return _Facts(ops, len(compute) // max(len(item.members), 1), backends, tags)


def _order(p: "Partition", backends: Counter) -> list[str]:
    known = [b for b in p.backends if backends.get(b)]
    return known + sorted(b for b in backends if b not in p.backends)


def _share_text(order: list[str], backends: Counter) -> str:
    total = sum(backends.values()) or 1
    return " \u00b7 ".join(f"{b} {backends[b] / total:.0%}" for b in order)


def render_modules(p: "Partition", *, focus: Any = None, depth: int | None = None, max_nodes: int | None = None,
                   overlays: Sequence[Overlay] = (), note: str | None = None) -> tuple[list[str], dict]:
    """DOT body lines of the module view and its info dict (see `render`)."""
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise RenderError(f"depth must be a positive integer (1 = the model's top modules), not {depth!r}.")
    if focus is not None and not isinstance(focus, str):
        raise RenderError(f"focus= in the module view is a module path (str), not {type(focus).__name__}.")
    t = p.records
    root = build_tree(t)
    if not root.children:
        raise RenderError("this graph has no submodules to group by (no meta['nn_module_stack'] below the root "
                          "module): the module view needs a graph captured from an nn.Module with submodules "
                          "(hv.capture / hv.partition(model, inputs)). Use view='collapsed' or 'full'.")
    base = find_module(root, focus) if focus is not None else effective_root(root)
    ran = ran_on(t.backend, t.subgraph, fell_back(overlays, len(t.subgraph_tag)), FALLBACK)
    pattern = node_keys(overlays, ran)
    budget = DEFAULT_BUDGET if max_nodes is None else max_nodes
    plan = make_plan(t, base, depth, budget, pattern)
    tag_order = {sg.tag: k for k, sg in enumerate(p.subgraphs)}
    w = DotWriter()
    palette.defaults(w)
    drawn = _Drawer(p, t, plan, w, tag_order, tuple(overlays), ran)
    drawn.items(plan.items)
    edges = drawn.edges(base)
    title = "hierviz \u00b7 module view" + (" \u00b7 chosen by auto" if note else "")
    if focus is not None:
        title += f" \u00b7 inside {base.path} ({base.cls})"
    title += f" \u00b7 depth {plan.depth}"
    title += titles(overlays)
    rolled = [it for it in walk_items(plan.items) if it.rolled]
    drawn.title(title, rolled, note)
    info = {"view": "modules", "nodes": sum(1 for it in walk_items(plan.items) if not it.cluster) + drawn.io,
            "boxes": sum(1 for it in walk_items(plan.items) if not it.cluster),
            "clusters": sum(1 for it in walk_items(plan.items) if it.cluster), "depth": plan.depth,
            "rolled_up": [_range_name(it.run, base) for it in rolled],
            "boundary_edges": edges, "focus": base.path if focus is not None else None}
    return w.lines, info


class _Drawer:
    def __init__(self, p: "Partition", t: NodeTable, plan: Plan, w: DotWriter, tag_order: dict[str, int],
                 overlays: tuple[Overlay, ...], ran: Sequence[str]) -> None:
        self.p, self.t, self.plan, self.w = p, t, plan, w
        self.tag_order, self.overlays, self.ran = tag_order, overlays, ran
        self.io = 0

    # -- items
    def items(self, items: Sequence[Item]) -> None:
        for it in items:
            if it.cluster:
                self.cluster(it)
            else:
                self.box(it)

    def _lines(self, it: Item, f: _Facts) -> tuple[list[str], list[str], str]:
        t, p = self.t, self.p
        head = it.run[0]
        parent = head.parent or self.plan.base
        if it.own_only and head is self.plan.base:
            name = f"{head.path} (own ops)" if head.path else TOP
        else:
            # one module: its name inside its parent; a roll-up: the full path, 'layers.0–23 ×24'
            name = _range_name(it.run, parent if len(it.run) == 1 else self.plan.base) + (
                " (own ops)" if it.own_only else "")
        order = _order(p, f.backends)
        each = " each" if len(it.members) > 1 else ""
        lines = [f"<B>{html(name, 60)}</B>",
                 f'<FONT POINT-SIZE="9">{html(it.mod.cls or "ops outside any module")} \u00b7 '
                 f'{f.per_member:,} op{"s" if f.per_member != 1 else ""}{each}</FONT>']
        total = sum(f.backends.values()) or 1
        lines.append(_bar([(palette.color(b), f.backends[b] / total) for b in order]))
        lines.append(f'<FONT POINT-SIZE="9">{html(_share_text(order, f.backends))}</FONT>')
        if f.tags:
            lines.append(f'<FONT POINT-SIZE="8">{html(_tags_text(f.tags), 70)}</FONT>')
        tip = [it.mod.path or TOP if len(it.members) == 1 else
               f"{it.members[0].path} \u2026 {it.members[-1].path} ({len(it.members)} modules with the same class "
               "and partition pattern, drawn once)",
               f"class: {it.mod.cls}", f"{len(f.ops)} ops" + (f" ({f.per_member} each)" if each else ""),
               "backends: " + _share_text(order, f.backends)]
        tip.append("subgraphs: " + ", ".join(f.tags[:30]) + (" \u2026" if len(f.tags) > 30 else ""))
        ops = Counter(op_short(t.op[i]) for i in f.ops)
        tip.append("ops: " + ", ".join(f"{o} \u00d7{c}" for o, c in ops.most_common(10)))
        dominant = max(order, key=lambda b: (f.backends[b], -order.index(b))) if order else "graph"
        return lines, tip, dominant

    def _decorate(self, f: _Facts, lines: list[str], tip: list[str], attrs: dict) -> None:
        for overlay in self.overlays:
            overlay.decorate_ops(f.ops, lines, tip, attrs)

    def box(self, it: Item) -> None:
        f = _facts(self.t, it, self.tag_order, self.ran)
        lines, tip, dominant = self._lines(it, f)
        attrs: dict[str, Any] = {"shape": "box", "style": "rounded,filled", "fillcolor": palette.fill(dominant),
                                 "color": palette.border(dominant), "penwidth": 1.2}
        if it.rolled:
            attrs["peripheries"] = 2
        self._decorate(f, lines, tip, attrs)
        label = '<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="1" CELLPADDING="0">' + "".join(
            f'<TR><TD ALIGN="LEFT" BALIGN="LEFT">{line}</TD></TR>' for line in lines) + "</TABLE>"
        klass = "hv-module" + (" hv-rolled" if it.rolled else "") + (" hv-own" if it.own_only else "")
        self.w.node(it.id, id=self._element_id(it), label=Html(label),
                    tooltip=tooltip(tip), margin="0.08,0.04",
                    **attrs, **{"class": f"{klass} hv-{css(dominant)}"})

    @staticmethod
    def _element_id(it: Item, part: str = "") -> str:
        """What a click on item `it` selects: its module, the whole run of a rolled-up one, or the
        top level for the ops outside any module; `part` tells apart a cluster's title."""
        if it.own_only and not it.mod.path:
            return element_id("top", TOP)
        if it.rolled:
            return element_id("repeat", repeat_name(it.run[0].path, len(it.run)), part)
        return element_id("module", it.mod.path, "own" if it.own_only else part)

    def cluster(self, it: Item) -> None:
        f = _facts(self.t, it, self.tag_order, self.ran)
        lines, tip, dominant = self._lines(it, f)
        attrs: dict[str, Any] = {"style": "rounded,filled", "fillcolor": "#FAFAFA", "color": palette.border(dominant),
                                 "penwidth": 2.6 if it.rolled else 1.4}
        self._decorate(f, lines, tip, attrs)
        label = '<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="1" CELLPADDING="0">' + "".join(
            f'<TR><TD ALIGN="LEFT" BALIGN="LEFT">{line}</TD></TR>' for line in lines) + "</TABLE>"
        klass = "hv-module-cluster" + (" hv-rolled" if it.rolled else "")
        self.w.open(f"cluster_{it.id}", id=self._element_id(it), label="",
                    tooltip=tooltip(tip), **attrs, **{"class": klass})
        # The title is a node at the cluster's top, above every child (invisible edges), not
        # the cluster's label: dot routes edges around nodes but straight through cluster labels.
        self.w.node(f"t{it.id}", id=self._element_id(it, "label"), label=Html(label),
                    shape="plaintext", margin="0.02", tooltip=tooltip(tip),
                    fontcolor=attrs.get("fontcolor"), **{"class": "hv-cluster-label"})
        self.items(it.children)
        for child in it.children:
            self.w.edge(f"t{it.id}", f"t{child.id}" if child.cluster else child.id, style="invis")
        self.w.close()

    # -- edges
    def edges(self, base: Mod) -> int:
        """Inputs, outputs and the tensors between boxes (one edge per pair of boxes)."""
        t, plan, w = self.t, self.plan, self.w
        inside = set(base.ops)
        copy_of = copies(plan.items)
        # where each box sits in the data flow: the graph position of its first op
        first = {it.id: it.first for it in walk_items(plan.items) if not it.cluster}
        first.update(inputs=-2, from_outside=-1, outputs=len(t) + 1, to_outside=len(t) + 2)
        src_of: dict[int, str] = {}
        pairs: dict[tuple[str, str], dict[int, None]] = {}
        inputs: list[int] = []
        outside_in = outside_out = False
        for j in base.ops:
            dst = plan.box_of[j]
            for a in t.inputs[j]:
                kind = t.kind[a]
                if kind == "get_attr":
                    continue
                if a in inside:
                    src = plan.box_of[a]
                elif kind == "placeholder" and base is effective_root_of(plan):
                    src = "inputs"
                    if a not in src_of:
                        src_of[a] = src
                        inputs.append(a)
                else:
                    src = "from_outside"
                    outside_in = True
                if src != dst and not (a in inside and between_copies(copy_of, a, j)):
                    pairs.setdefault((src, dst), {})[a] = None
        users = t.users
        for a in base.ops:
            for j in users[a]:
                if j in inside:
                    continue
                dst = "outputs" if t.kind[j] == "output" else "to_outside"
                outside_out = outside_out or dst == "to_outside"
                pairs.setdefault((plan.box_of[a], dst), {})[a] = None
        io_attrs = dict(shape="box", style="rounded,filled", fillcolor=palette.fill("graph"),
                        color=palette.border("graph"))
        if inputs:
            shown = "".join(f'<BR/><FONT POINT-SIZE="9">{html(t.name[a], 24)}: {html(_spec(t, a))}</FONT>'
                            for a in inputs[:6])
            more = f'<BR/><FONT POINT-SIZE="9">+{len(inputs) - 6} more</FONT>' if len(inputs) > 6 else ""
            # one input: a click selects it (several are not one thing to select)
            w.node("inputs", id=element_id("node", t.name[inputs[0]]) if len(inputs) == 1 else None,
                   label=Html(f"<B>graph inputs</B>{shown}{more}"),
                   tooltip=tooltip([f"{t.name[a]}: {_spec(t, a)}" for a in inputs[:40]]), **io_attrs,
                   **{"class": "hv-node hv-graph hv-input"})
            self.io += 1
        if any(dst == "outputs" for _, dst in pairs):
            output = next(i for i, kind in enumerate(t.kind) if kind == "output")
            w.node("outputs", id=element_id("node", t.name[output]), label=Html("<B>output</B>"), **io_attrs,
                   **{"class": "hv-node hv-graph hv-output"})
            self.io += 1
        if outside_in:
            w.node("from_outside", label="from outside the module", shape="plaintext", fontcolor="#555555",
                   **{"class": "hv-outside"})
            self.io += 1
        if outside_out:
            w.node("to_outside", label="to the rest of the model", shape="plaintext", fontcolor="#555555",
                   **{"class": "hv-outside"})
            self.io += 1
        loose = loose_edges(list(pairs), first)
        # a cluster's title sits below whatever feeds the cluster, so the cluster starts where
        # its inputs end (clusters stack along the flow instead of side by side)
        inside_of = _clusters_of(plan.items)
        titles = {(src, f"t{c}") for src, dst in pairs if (src, dst) not in loose
                  for c in inside_of.get(dst, ()) if c not in inside_of.get(src, ())}
        for src, title in sorted(titles):
            w.edge(src, title, style="invis")
        for (src, dst), tensors in sorted(pairs.items(), key=lambda kv: (_key(kv[0][0]), _key(kv[0][1]))):
            ts = list(tensors)
            nbytes = sum(tensor_bytes(t.spec[a]) for a in ts)
            crossing = any(t.tag[a] is None or any(t.tag[u] != t.tag[a] for u in users[a]
                                                     if t.tag[u] is not None) for a in ts)
            specs = {_spec(t, a) or "value" for a in ts[:50]}
            text = specs.pop() if len(ts) == 1 else (f"{len(ts)} \u00d7 {specs.pop()}" if len(specs) == 1
                                                      else f"{len(ts)} tensors")
            tip = [f"{len(ts)} tensor(s), {size_text(nbytes)}:"] + [f"{t.name[a]}: {_spec(t, a)}" for a in ts[:20]]
            pen = edge_weight(nbytes)
            # labels placed by the layout (never over a box); edges against the data flow and
            # skip edges do not decide the ranks (module_tree.loose_edges)
            w.edge(src, dst, label=text + (f" \u00b7 {size_text(nbytes)}" if nbytes else ""), tooltip=tooltip(tip),
                   constraint="false" if (src, dst) in loose else None,
                   penwidth=pen, color=palette.BOUNDARY_EDGE if crossing else palette.INTERNAL_EDGE,
                   fontcolor=palette.BOUNDARY_EDGE if crossing else palette.INTERNAL_EDGE,
                   **{"class": "hv-boundary" if crossing else "hv-edge"})
        return len(pairs)

    def title(self, text: str, rolled: list[Item], note: str | None = None) -> None:
        p = self.p
        s = p.stats
        by = ", ".join(f"{b} {n}" for b, n in s["subgraphs_by_backend"].items() if n)
        stats = (f"{html(p.config.label())} \u00b7 {count_text('nodes', s['nodes'])}, "
                 f"{s['subgraphs']:,} subgraphs ({html(by)}) \u00b7 coverage {s['coverage']:.0%}")
        swatches = "".join(f'<TD BGCOLOR="{palette.fill(b)}" BORDER="1" COLOR="{palette.border(b)}" '
                           f'CELLPADDING="3">{html(b)}</TD>' for b in p.backends)
        notes = [note] if note else []
        notes += ["box: a module (bar: its ops' backends); cluster: a module drawn inside",
                 "double border: repeated siblings with the same class and partition pattern, drawn once",
                 "edges: tensors between modules (dark: crossing subgraphs; width: bytes)"]
        rows = "".join(f'<TR><TD ALIGN="LEFT" COLSPAN="{len(p.backends)}">{html(n)}</TD></TR>' for n in notes)
        rows += "".join(f'<TR><TD ALIGN="LEFT" COLSPAN="{len(p.backends)}">{overlay.legend_html()}</TD></TR>'
                        for overlay in self.overlays)
        label = (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="1">'
                 f'<TR><TD ALIGN="LEFT" COLSPAN="{len(p.backends)}"><FONT POINT-SIZE="14"><B>{html(text)}</B></FONT>'
                 f'</TD></TR><TR><TD ALIGN="LEFT" COLSPAN="{len(p.backends)}">{stats}</TD></TR>'
                 f"<TR>{swatches}</TR>{rows}</TABLE>")
        self.w.defaults("graph", label=Html(label))


def _clusters_of(items: Sequence[Item], outer: tuple[str, ...] = ()) -> dict[str, tuple[str, ...]]:
    """Drawn box or cluster id -> the ids of the clusters around it, outermost first."""
    out: dict[str, tuple[str, ...]] = {}
    for it in items:
        out[it.id] = outer
        if it.cluster:
            out.update(_clusters_of(it.children, outer + (it.id,)))
    return out


def _key(node_id: str) -> tuple[int, int, str]:
    m = re.match(r"^[a-z]+(\d+)$", node_id)
    return (1, int(m.group(1)), "") if m else (0 if node_id in ("inputs", "from_outside") else 2, 0, node_id)


def _spec(t: "NodeTable", i: int) -> str:
    return t.spec[i].compact()


__all__ = ["render_modules", "build_tree", "effective_root", "find_module", "is_module", "make_plan", "DEFAULT_BUDGET"]
