"""The plan every engine produces: the per-node assignment (`Assignment`), subgraphs of node
indices (`RawSubgraph`), the run's result (`EngineResult`) and their tags, plus the subgraph
DAG's edges and topological order. hierviz's engine (hierviz_engine.py),
upstream/hierarchical.py and compile_partitioners.py build an `EngineResult`;
partition_result.py and splitter.py read it."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from hierviz.partitioner.engine.graph_index import GraphIndex
from hierviz.partitioner.reasons import make_tag

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.engine.support_verdicts import SupportVerdicts


@dataclass
class Assignment:
    """Eligible backend per node (None: PyTorch) and why."""

    backend: list[str | None]
    code: list[str]
    detail: list[Any]  # per code: backend, producer index, {backend: rejection}, ...


@dataclass
class RawSubgraph:
    """One subgraph as the engines build it: accelerated or not, its backend, its node indices."""

    is_acc: bool
    backend: str
    nodes: list[int]


Moves = dict[int, tuple[tuple[str, str, int], ...]]  # node -> ((from, to, subgraph size), ...)


@dataclass
class EngineResult:
    """What a run produced. `raw` are the subgraphs before small blocks were demoted (after
    traversal and merging); `subgraphs`, `tags` and `demoted` the final ones."""

    index: GraphIndex
    assignment: Assignment
    raw: list[RawSubgraph]
    subgraphs: list[RawSubgraph]
    tags: list[str]
    demoted: dict[int, tuple[str, int]]  # node -> (its eligible backend, its small subgraph's size)
    deps: tuple[list[int], list[Sequence[int]]] | None = None  # the traversal's dependencies
    early_return: int | None = None  # engine="fast"/"global": compile kept the whole graph in PyTorch
    moved: Moves = field(default_factory=dict)  # demote_to="next": the backends each node moved through
    next_backend: "SupportVerdicts | None" = None  # demote_to="next": set; None: upstream's rule


def tags_for(subgraphs: Sequence[RawSubgraph]) -> list[str]:
    """Upstream's submodule names: _run_on_acc_<backend>_<i> / _run_on_gpu_<i>."""
    return [make_tag(sg.is_acc, sg.backend, i) for i, sg in enumerate(subgraphs)]


def subgraph_edges(node_count: int, groups: Sequence[Sequence[int]],
                   dependents: Sequence[Sequence[int]]) -> tuple[list[set[int]], list[set[int]]]:
    """(predecessors, successors) of each group of node indices in the DAG between groups, where
    node i's `dependents[i]` wait for it; nodes in no group are left out."""
    group_of = [-1] * node_count
    for k, members in enumerate(groups):
        for i in members:
            group_of[i] = k
    preds: list[set[int]] = [set() for _ in groups]
    succs: list[set[int]] = [set() for _ in groups]
    for k, members in enumerate(groups):
        for i in members:
            for d in dependents[i]:
                g = group_of[d]
                if g >= 0 and g != k:
                    succs[k].add(g)
                    preds[g].add(k)
    return preds, succs


def topological_order(alive: Sequence[int], preds: Sequence[set[int]], succs: Sequence[set[int]]) -> list[int]:
    """The `alive` groups in Kahn's order, the lowest-numbered ready one first. Shorter than
    `alive` when the groups depend on each other in a cycle."""
    waiting = {k: len(preds[k]) for k in alive}
    heap = [k for k in alive if waiting[k] == 0]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        k = heapq.heappop(heap)
        order.append(k)
        for s in succs[k]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(heap, s)
    return order
