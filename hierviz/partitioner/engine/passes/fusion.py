"""Pass 2, fusion: groups of accelerated nodes that pass non-tensor data (as torch.fx's
FxNetAccFusionsFinder builds them), kept together unless skip_fusion, and the extra
dependencies upstream's splitter gives their members."""

from __future__ import annotations

from typing import Sequence

from hierviz.partitioner.engine.graph_index import GraphIndex


def fusions(index: GraphIndex, acc: Sequence[bool]) -> dict[int, frozenset[int]]:
    """Fusion groups: connected accelerated nodes that pass non-tensor data (no
    `tensor_meta`), closed under paths between their members, as torch.fx's
    FxNetAccFusionsFinder builds them, visiting seeds in graph order."""
    acc_set = {i for i, a in enumerate(acc) if a and index.callable[i]}
    result: dict[int, frozenset[int]] = {}
    for seed in range(len(index.nodes)):
        if seed not in acc_set or seed in result or index.has_tensor_meta[seed]:
            continue
        group = _grow_fusion(index, seed)
        if group <= acc_set:
            frozen = frozenset(group)
            for m in group:
                result[m] = frozen
        else:
            acc_set -= group
    return result


def _grow_fusion(index: GraphIndex, seed: int) -> set[int]:
    group = {seed}
    top = seed
    todo = [seed]
    while True:
        while todo:
            m = todo.pop()
            if not index.has_tensor_meta[m]:
                for u in index.users[m]:
                    if index.callable[u] and u not in group:
                        group.add(u)
                        todo.append(u)
            for a in index.inputs[m]:
                if index.callable[a] and not index.has_tensor_meta[a] and a not in group:
                    group.add(a)
                    todo.append(a)
                    top = min(top, a)
        added = _path_closure(index, group, top)
        if not added:
            return group
        group |= added
        todo.extend(added)


def _path_closure(index: GraphIndex, group: set[int], top: int) -> set[int]:
    """Nodes at or after `top` that lie on a path from one group member to another."""
    bottom = max(group)
    down: set[int] = set()
    stack = list(group)
    while stack:
        m = stack.pop()
        for u in index.users[m]:
            if u <= bottom and u not in down and u not in group and index.callable[u]:
                down.add(u)
                stack.append(u)
    if not down:
        return set()
    up: set[int] = set()
    stack = list(group)
    while stack:
        m = stack.pop()
        for a in index.inputs[m]:
            if a >= top and a not in up and a not in group and index.callable[a]:
                up.add(a)
                stack.append(a)
    return down & up


def add_fusion_deps(index: GraphIndex, deps: dict[int, set[int]],
                    groups: dict[int, frozenset[int]]) -> None:
    """As upstream's splitter: members of a fusion group wait for every outer input of the
    group, and outer users of any member wait for the whole group."""
    seen: set[frozenset[int]] = set()
    for i in sorted(groups):
        group = groups[i]
        if group in seen:
            continue
        seen.add(group)
        outer: set[int] = set()
        for m in group:
            outer |= deps[m]
        outer -= group
        for m in group:
            deps[m] |= outer
            for u in index.users[m]:
                if u in deps and u not in group:
                    deps[u] |= group
