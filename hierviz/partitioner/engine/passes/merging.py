"""Pass 4, merging: same-backend subgraphs join whenever that creates no cycle between subgraphs
(TVM BYOC's "merge compiler regions"), checked by a bounded search on the subgraph DAG."""

from __future__ import annotations

from typing import Sequence

from hierviz.partitioner.engine.graph_index import GraphIndex
from hierviz.partitioner.engine.plan import RawSubgraph, subgraph_edges, topological_order

MERGE_SEARCH_BUDGET = 2  # subgraphs a whole merge pass may visit, per graph node (+ 20000)
MERGE_QUERY_BUDGET = 256  # subgraphs one cycle check may visit before it gives up (no merge)
MERGE_CANDIDATES = 4  # earlier same-backend subgraphs tried for each subgraph, latest first


def merge(index: GraphIndex, subgraphs: list[RawSubgraph],
          dependents: Sequence[Sequence[int]]) -> list[RawSubgraph]:
    """Merge same-backend subgraphs whenever the merge creates no cycle between subgraphs.

    One sweep in subgraph order: each subgraph joins the latest earlier subgraph of its
    backend (trying up to MERGE_CANDIDATES of them) that it has no path to through a third
    subgraph. Paths are looked for backwards over the subgraph DAG; one check visits at most
    MERGE_QUERY_BUDGET subgraphs and the whole sweep MERGE_SEARCH_BUDGET per graph node
    (plus 20000, so that small graphs are searched fully), and
    a check cut short counts as a path (no merge), so the pass stays linear and never makes
    a cycle. The result is in a topological order (Kahn's, earliest first subgraph first)."""
    if len(subgraphs) < 2:
        return subgraphs
    preds, succs = subgraph_edges(len(index.nodes), [sg.nodes for sg in subgraphs], dependents)
    members = {k: list(sg.nodes) for k, sg in enumerate(subgraphs)}  # the subgraphs not merged away
    keys = [(sg.is_acc, sg.backend) for sg in subgraphs]
    search = _PathSearch(preds, MERGE_SEARCH_BUDGET * len(index.nodes) + 20_000)
    live: dict[tuple[bool, str], list[int]] = {}
    for b in range(len(subgraphs)):
        same = live.setdefault(keys[b], [])
        target = search.merge_target(same, b)
        if target < 0:
            same.append(b)
            continue
        members[target].extend(members.pop(b))
        _move_edges(preds, succs, b, target)
    alive = list(members)  # in subgraph order
    order = topological_order(alive, preds, succs)
    if len(order) != len(alive):  # pragma: no cover - the search above rules this out
        raise RuntimeError("partitioner: merging made a cycle between subgraphs")
    return [RawSubgraph(keys[k][0], keys[k][1], members[k]) for k in order]


class _PathSearch:
    """merge's cycle checks over the subgraph DAG, within the pass's and each check's budget."""

    def __init__(self, preds: list[set[int]], budget: int) -> None:
        self.preds = preds
        self.budget = budget

    def merge_target(self, same: Sequence[int], b: int) -> int:
        """The latest of the last MERGE_CANDIDATES subgraphs in `same` that `b` can join, or -1."""
        if self.budget > 0:
            for g in reversed(same[-MERGE_CANDIDATES:]):
                if not self.path_between(g, b):
                    return g
        return -1

    def path_between(self, g: int, b: int) -> bool:
        """Whether b depends on g through some third subgraph (True when unsure)."""
        preds = self.preds
        stack = [p for p in preds[b] if p != g]
        seen = set(stack)
        visits = 0
        while stack:
            visits += 1
            if visits > MERGE_QUERY_BUDGET:
                break
            x = stack.pop()
            for p in preds[x]:
                if p == g:
                    self.budget -= visits
                    return True
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        self.budget -= visits
        return bool(stack)


def _move_edges(preds: list[set[int]], succs: list[set[int]], b: int, target: int) -> None:
    """Subgraph b joined `target`: b's edges become target's."""
    for p in preds[b]:
        succs[p].discard(b)
        if p != target:
            succs[p].add(target)
            preds[target].add(p)
    for s in succs[b]:
        preds[s].discard(b)
        preds[s].add(target)
        succs[target].add(s)
    preds[b] = succs[b] = set()
