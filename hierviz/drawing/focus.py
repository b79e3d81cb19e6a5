"""The focus view: the neighbourhood of one node (radius k), or one subgraph with its
boundary, with stubs counting the neighbours left out."""

from __future__ import annotations

import difflib
from typing import Any, Iterable

import torch

from hierviz.drawing.budget import edge_labels
from hierviz.drawing.context import Ctx
from hierviz.drawing.dot import DotWriter, clean
from hierviz.drawing.graph import draw_nodes_and_edges
from hierviz.drawing.legend import title
from hierviz.drawing.text import plural
from hierviz.errors import RenderError
from hierviz.partitioner import Partition, Subgraph


def resolve_focus(p: "Partition", focus: Any) -> tuple[str, Any]:
    if isinstance(focus, Subgraph):
        focus = focus.tag
    elif isinstance(focus, torch.fx.Node):
        focus = focus.name
    if not isinstance(focus, str):
        raise RenderError(f"focus must be a node name or a subgraph tag (str), not {type(focus).__name__}.")
    t = p.records
    if focus in t.subgraph_tag:
        return "subgraph", focus
    if focus in t.position:
        return "node", focus
    candidates = [*t.subgraph_tag, *t.name]
    close = difflib.get_close_matches(focus, candidates, n=5)
    hint = f" Did you mean: {', '.join(repr(c) for c in close)}?" if close else ""
    raise RenderError(f"focus {focus!r} is neither a node name nor a subgraph tag of this partition.{hint} "
                      "Node names are in Partition.subgraphs[i].nodes; tags in Partition.summary().")


def neighbours(ctx: Ctx, i: int) -> Iterable[int]:
    t = ctx.t
    for a in t.inputs[i]:
        if ctx.drawable(a):
            yield a
    for u in t.users[i]:
        if ctx.drawable(u):
            yield u


def focus_view(ctx: Ctx, w: DotWriter, focus: Any, radius: int) -> dict:
    kind, name = resolve_focus(ctx.p, focus)
    t = ctx.t
    limit = ctx.max_nodes
    truncated = False
    center: int | None = None
    cluster: int | None = None
    if kind == "node":
        center = t.position[name]
        seen = {center}
        frontier = [center]
        for _ in range(radius):
            nxt: list[int] = []
            for i in frontier:
                for j in neighbours(ctx, i):
                    if j not in seen:
                        if len(seen) >= limit:
                            truncated = True
                            break
                        seen.add(j)
                        nxt.append(j)
            frontier = sorted(nxt)
            if not frontier:
                break
        heading = f"hierviz · focus on node {clean(name, 60)} (radius {radius})"
    else:
        cluster = t.subgraph_tag.index(name)
        members = list(t.subgraph_members[cluster])
        if len(members) > limit:
            members, truncated = members[:limit], True
        seen = set(members)
        for i in list(members):
            for j in neighbours(ctx, i):
                if j not in seen:
                    if len(seen) >= limit + min(limit, 200):
                        truncated = True
                        break
                    seen.add(j)
        heading = f"hierviz · focus on subgraph {clean(name, 60)} and its boundary"
    drawn = sorted(seen)
    if truncated:
        heading += f" (truncated at max_nodes={limit})"
    info = draw_nodes_and_edges(ctx, w, drawn, center, labels=edge_labels(ctx, drawn), focus_cluster=cluster)
    # Stubs: how many neighbours of a drawn node are not drawn.
    drawn_set = set(drawn)
    for i in drawn:
        hidden_in = sum(1 for a in t.inputs[i] if ctx.drawable(a) and a not in drawn_set)
        hidden_out = sum(1 for u in t.users[i] if ctx.drawable(u) and u not in drawn_set)
        if hidden_in:
            w.node(f"stub_in_{i}", label=f"{plural(hidden_in, 'more input')}", shape="plaintext",
                   fontsize=8, fontcolor="#555555", height=0.2, **{"class": "hv-stub"})
            w.edge(f"stub_in_{i}", f"n{i}", style="dashed", color="#AAAAAA")
        if hidden_out:
            w.node(f"stub_out_{i}", label=f"{plural(hidden_out, 'more user')}", shape="plaintext",
                   fontsize=8, fontcolor="#555555", height=0.2, **{"class": "hv-stub"})
            w.edge(f"n{i}", f"stub_out_{i}", style="dashed", color="#AAAAAA")
    title(ctx, w, heading)
    info.update({"focus": name, "focus_kind": kind, "truncated": truncated})
    return info


__all__ = ["resolve_focus", "neighbours", "focus_view"]
