"""Pass 3, traversal: a topological walk in phases, each taking every ready node of one backend
(a maximal same-backend run); when the backend runs dry, the next is that of the ready node
with the most backend changes still ahead of it (its "switch height"), ties broken by graph
order. Also each node's dependencies, which merging and demotion reuse, and the switch heights."""

from __future__ import annotations

import heapq
from typing import Callable, Sequence

from hierviz.partitioner.engine.graph_index import GraphIndex
from hierviz.partitioner.engine.passes.fusion import add_fusion_deps
from hierviz.partitioner.engine.plan import RawSubgraph
from hierviz.partitioner.reasons import FALLBACK


def dependencies(index: GraphIndex, groups: dict[int, frozenset[int]]) -> tuple[list[int], list[Sequence[int]]]:
    """Per callable node: how many callable nodes it waits for, and which nodes wait for it
    (its callable users, plus upstream's extra edges for fusion groups)."""
    callables = index.callable_indices
    is_call = index.callable
    remaining = [0] * len(index.nodes)
    dependents: list[Sequence[int]] = [()] * len(index.nodes)
    if groups:
        deps: dict[int, set[int]] = {i: {a for a in index.inputs[i] if is_call[a]} for i in callables}
        add_fusion_deps(index, deps, groups)
        grown: dict[int, list[int]] = {i: [] for i in callables}
        for i, d in deps.items():
            remaining[i] = len(d)
            for a in d:
                grown[a].append(i)
        for i, users in grown.items():
            dependents[i] = users
    else:  # a node waits for its callable inputs; its callable users wait for it
        for i in callables:
            remaining[i] = sum(1 for a in index.inputs[i] if is_call[a])
            dependents[i] = [u for u in index.users[i] if is_call[u]]
    return remaining, dependents


def switch_heights(index: GraphIndex, backend: Sequence[str | None], remaining: Sequence[int],
                   dependents: Sequence[Sequence[int]]) -> list[int]:
    """For each callable node, the most backend changes on any dependency path from it to
    the end of the graph. 1 + the largest is a lower bound on the number of subgraphs; a
    node with a large height lies on the path that needs the most subgraphs, so it should
    not wait."""
    left = list(remaining)
    order = [i for i in index.callable_indices if left[i] == 0]
    k = 0
    while k < len(order):
        for d in dependents[order[k]]:
            left[d] -= 1
            if left[d] == 0:
                order.append(d)
        k += 1
    if len(order) != len(index.callable_indices):
        raise RuntimeError("partitioner: dependency cycle between nodes")
    height = [0] * len(index.nodes)
    for i in reversed(order):
        b = backend[i]
        h = 0
        for d in dependents[i]:
            hd = height[d] + (backend[d] != b)
            if hd > h:
                h = hd
        height[i] = h
    return height


Ready = list[tuple[tuple[int, int], str]]  # per backend with ready nodes: (its first node's key, backend)


def traverse(index: GraphIndex, backend: Sequence[str | None], groups: dict[int, frozenset[int]],
             deps: tuple[list[int], list[Sequence[int]]] | None = None,
             choose: Callable[[Ready], tuple[int, int]] | None = None,
             height: Sequence[int] | None = None) -> list[RawSubgraph]:
    """Walk the graph in a topological order, one subgraph (phase) at a time.

    A phase takes every node of its backend that becomes ready, so that each subgraph is as
    large as it can be. When its backend runs dry, the next phase's backend (PyTorch counts
    as one) is that of the ready node with the largest switch height, ties broken by graph
    order. Unlike upstream's partitioner, which takes any ready node from a Python set (so its result
    changes from run to run) and alternates between accelerated and PyTorch subgraphs, the
    result depends only on the graph and the assignment.

    `choose` (the search's restarts, search.py) picks the next phase instead, from the ready
    backends sorted by their first node's key (-switch height, index): it returns one key.
    `height`: the switch heights, when already computed."""
    callables = index.callable_indices
    if not callables:
        return []
    remaining, dependents = deps or dependencies(index, groups)
    if height is None:
        height = switch_heights(index, backend, remaining, dependents)
    remaining = list(remaining)
    ready: dict[str | None, list[tuple[int, int]]] = {}

    def push(i: int) -> None:
        heapq.heappush(ready.setdefault(backend[i], []), (-height[i], i))

    for i in callables:
        if remaining[i] == 0:
            push(i)

    subgraphs: list[RawSubgraph] = []
    current: list[int] = []
    label: str | None = None
    visited = 0
    total = len(callables)
    while visited < total:
        queue = ready.get(label) if current else None
        if not queue:
            if current:
                subgraphs.append(RawSubgraph(label is not None, FALLBACK if label is None else label, current))
                current = []
            live = sorted((q[0], b or "") for b, q in ready.items() if q)
            if not live:
                raise RuntimeError("partitioner: dependency cycle between nodes")
            best = live[0][0] if choose is None else choose(live)
            label = backend[best[1]]
            queue = ready[label]
        _, node = heapq.heappop(queue)
        current.append(node)
        visited += 1
        for d in dependents[node]:
            remaining[d] -= 1
            if remaining[d] == 0:
                push(d)
    if current:
        subgraphs.append(RawSubgraph(label is not None, FALLBACK if label is None else label, current))
    return subgraphs
