"""The hierarchical adjacency partitioner: hierviz's own implementation of Torch-TensorRT's algorithm.

Four passes over a read-only graph index, each linear in the graph (up to a log factor for
the ready queues):

1. `assign`     each callable node's eligible backend (first in priority whose support takes
                it, unless it is in torch_executed_ops; a getitem or view stays with its
                producer's backend when that backend's support takes it too)
2. `fusions`    groups of accelerated nodes that pass non-tensor data (as torch.fx's
                FxNetAccFusionsFinder), kept together unless skip_fusion
3. `traverse`   a topological walk in phases: each phase takes every node of one backend that
                becomes ready (a maximal same-backend run); when the backend runs dry, the next
                one is the backend of the ready node with the most backend changes still ahead
                of it (its "switch height"), ties broken by graph order
4. `merge`      merges same-backend subgraphs whenever that creates no cycle between
                subgraphs (TVM BYOC's "merge compiler regions"), checked by a bounded search
                on the subgraph DAG
5. `merge_small` upstream's remove_small_acc_subgraphs, then `merge` again, so that demoted
                blocks join neighbouring PyTorch subgraphs. With `demote_to="next"`, a small
                accelerated subgraph first moves to the next backend in priority that takes
                all its nodes (`demote_to_next`), joins that backend's neighbours where no
                cycle results, and is tested against min_block_size there; PyTorch only when
                no backend is left

The input graph is never modified; every pass works on integer node indices. The passes
stay in one module of about 700 lines because they share the index and the subgraph type
and are meant to be read in order, as one algorithm.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch.fx import GraphModule, Node

from hierviz.config import Config
from hierviz.errors import ConfigError
from hierviz.gcpause import gc_paused
from hierviz.opnames import in_op_set, packets_in, qualname
from hierviz.provenance import source_op, split_sources
from hierviz.partitioner.reasons import (  # the codes this engine gives each node (reasons.py)
    CALLABLE_OPS,
    FALLBACK,
    FOLLOWS_PRODUCER,
    NOT_CALLABLE,
    SUPPORTED,
    TORCH_EXECUTED,
    UNSUPPORTED,
    VALIDATOR,
    make_tag,
)

NON_COMPUTE_OPS = frozenset({"_operator.getitem"})
NON_COMPUTE_PACKETS = frozenset({"torch.ops.aten.view"})


@functools.lru_cache(maxsize=None)
def is_non_compute(name: str) -> bool:
    return in_op_set(name, NON_COMPUTE_OPS, NON_COMPUTE_PACKETS)


@dataclass
class GraphIndex:
    """A read-only, integer-indexed view of a graph, built once per graph and reused."""

    nodes: list[Node]
    names: list[str]
    ops: list[str]  # qualified op name per node ("" for placeholders/get_attr/output)
    callable: list[bool]
    inputs: list[tuple[int, ...]]  # distinct input node indices, in argument order
    users: list[tuple[int, ...]]
    has_tensor_meta: list[bool]
    position: dict[str, int] = field(default_factory=dict)
    non_compute: list[bool] = field(default_factory=list)  # getitem / aten.view.*
    callable_indices: list[int] = field(default_factory=list)  # read-only, in graph order
    fingerprint: int = 0  # `fingerprint(nodes)` when built: the cache's check for in-place changes


# graph -> its index, while some Partition still holds that index. The value must be a weak
# reference too: the index holds the graph's nodes, which hold the graph, so a strong value
# would keep every partitioned graph alive for ever.
_INDEX_CACHE: "weakref.WeakKeyDictionary[torch.fx.Graph, weakref.ref[GraphIndex]]" = weakref.WeakKeyDictionary()


def fingerprint(nodes: Sequence[Node]) -> int:
    """A cheap structural hash of a graph: every node's name, op, target (by identity) and
    inputs. Any in-place change (a node's target, an argument, a rename) changes it."""
    return hash(tuple((n.name, n.op, id(n.target), tuple(map(id, n._input_nodes))) for n in nodes))


def index_graph(gm: GraphModule) -> GraphIndex:
    """The graph's index, cached by graph identity plus `fingerprint`, so that a graph
    changed in place (a node's target, an edge) gets a fresh index."""
    graph = gm.graph
    ref = _INDEX_CACHE.get(graph)
    cached = ref() if ref is not None else None
    nodes = list(graph.nodes)
    with gc_paused():
        key = fingerprint(nodes)
    if cached is not None and cached.fingerprint == key:
        return cached
    with gc_paused():
        pos = {n: i for i, n in enumerate(nodes)}
        names = [n.name for n in nodes]
        op_names: dict[Any, str] = {}  # target -> qualified name, computed once per target
        ops: list[str] = []
        call: list[bool] = []
        inputs: list[tuple[int, ...]] = []
        users: list[tuple[int, ...]] = []
        has_tm: list[bool] = []
        for n in nodes:
            is_call = n.op in CALLABLE_OPS
            call.append(is_call)
            if is_call:
                try:
                    name = op_names[n.target]
                except KeyError:
                    name = op_names[n.target] = qualname(n.target)
                except TypeError:  # an unhashable target
                    name = qualname(n.target)
                ops.append(name)
            else:
                ops.append("")
            inputs.append(tuple(pos[a] for a in n.all_input_nodes))  # distinct, in argument order
            users.append(tuple(pos[u] for u in n.users))
            has_tm.append("tensor_meta" in n.meta)
        index = GraphIndex(nodes, names, ops, call, inputs, users, has_tm,
                           {nm: i for i, nm in enumerate(names)},
                           [c and is_non_compute(o) for c, o in zip(call, ops)],
                           [i for i, c in enumerate(call) if c], key)
    _INDEX_CACHE[graph] = weakref.ref(index)
    return index


# --------------------------------------------------------------------------- 1. assignment
@dataclass
class Assignment:
    """Eligible backend per node (None: PyTorch) and why."""

    backend: list[str | None]
    code: list[str]
    detail: list[Any]  # per code: backend, producer index, {backend: rejection}, ...


def assign(index: GraphIndex, config: Config) -> Assignment:
    """Each callable node's eligible backend. A getitem or view whose producer runs in backend
    b stays with it when b's support takes the node too (or b is PyTorch, which takes
    anything); otherwise it gets its own verdict like every other node."""
    n = len(index.nodes)
    backend: list[str | None] = [None] * n
    code = [NOT_CALLABLE] * n
    detail: list[Any] = [None] * n
    supports = [(b, config.support_for(b)) for b in config.priority]
    support_of = dict(supports)
    teo, sources = split_sources(config.torch_executed_ops)
    teo_packets = packets_in(teo)
    source_packets = packets_in(sources)
    verdicts: dict[str, tuple[str | None, str, Any]] = {}  # op name -> decision, when per-target
    accepted: dict[tuple[str, str], bool] = {}  # (backend, op name) -> its support takes it
    per_node = any(s.per_node for _, s in supports)

    def decide(i: int) -> tuple[str | None, str, Any]:
        rejections: dict[str, str] = {}
        validator = False
        for b, sup in supports:
            v = sup.verdict(index.nodes[i])
            if v.ok:
                return b, SUPPORTED, rejections
            rejections[b] = v.why
            validator = validator or v.code == VALIDATOR
        return None, VALIDATOR if validator else UNSUPPORTED, rejections

    def takes(b: str, i: int) -> bool:
        sup = support_of[b]
        if sup.per_node:
            return sup.verdict(index.nodes[i]).ok
        key = (b, index.ops[i])
        ok = accepted.get(key)
        if ok is None:
            ok = accepted[key] = sup.verdict(index.nodes[i]).ok
        return ok

    def assign_one(i: int) -> None:
        name = index.ops[i]
        if in_op_set(name, teo, teo_packets):
            code[i], detail[i] = TORCH_EXECUTED, None
            return
        if sources:  # hv.source_ops: the op of the exported graph this node came from
            src = source_op(index.nodes[i])
            if src is not None and in_op_set(src, sources, source_packets):
                code[i], detail[i] = TORCH_EXECUTED, src
                return
        if index.non_compute[i]:
            producer = next((j for j in index.inputs[i] if index.callable[j]), None)
            if producer is not None:
                b = backend[producer]
                if b is None or takes(b, i):
                    backend[i], code[i], detail[i] = b, FOLLOWS_PRODUCER, producer
                    return
        if per_node:
            backend[i], code[i], detail[i] = decide(i)
        else:
            verdict = verdicts.get(name)
            if verdict is None:
                verdict = verdicts[name] = decide(i)
            backend[i], code[i], detail[i] = verdict

    with contextlib.ExitStack() as stack:
        for _, sup in supports:  # e.g. the converter registry, set up once for every node
            stack.enter_context(sup.checking())
        for i in range(n):
            if index.callable[i]:
                assign_one(i)
    return Assignment(backend, code, detail)


# --------------------------------------------------------------------------- 2. fusions
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


# --------------------------------------------------------------------------- 3. traversal
@dataclass
class RawSubgraph:
    is_acc: bool
    backend: str
    nodes: list[int]


def dependencies(index: GraphIndex, groups: dict[int, frozenset[int]]) -> tuple[list[int], list[Sequence[int]]]:
    """Per callable node: how many callable nodes it waits for, and which nodes wait for it
    (its callable users, plus upstream's extra edges for fusion groups)."""
    callables = index.callable_indices
    is_call = index.callable
    remaining = [0] * len(index.nodes)
    dependents: list[Sequence[int]] = [()] * len(index.nodes)
    if groups:
        deps: dict[int, set[int]] = {i: {a for a in index.inputs[i] if is_call[a]} for i in callables}
        _add_fusion_deps(index, deps, groups)
        grown: dict[int, list[int]] = {i: [] for i in callables}
        for i, d in deps.items():
            remaining[i] = len(d)
            for a in d:
                grown[a].append(i)
        for i, d in grown.items():
            dependents[i] = d
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


def traverse(index: GraphIndex, backend: Sequence[str | None], groups: dict[int, frozenset[int]],
             deps: tuple[list[int], list[Sequence[int]]] | None = None) -> list[RawSubgraph]:
    """Walk the graph in a topological order, one subgraph (phase) at a time.

    A phase takes every node of its backend that becomes ready, so that each subgraph is as
    large as it can be. When its backend runs dry, the next phase's backend (PyTorch counts
    as one) is that of the ready node with the largest switch height, ties broken by graph
    order. Unlike upstream's partitioner, which takes any ready node from a Python set (so its result
    changes from run to run) and alternates between accelerated and PyTorch subgraphs, the
    result depends only on the graph and the assignment."""
    callables = index.callable_indices
    if not callables:
        return []
    remaining, dependents = deps or dependencies(index, groups)
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
            live = [(q[0], b or "") for b, q in ready.items() if q]
            if not live:
                raise RuntimeError("partitioner: dependency cycle between nodes")
            best = min(live)[0]
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
    preds, succs = _subgraph_edges(index, subgraphs, dependents)
    members: list[list[int] | None] = [list(sg.nodes) for sg in subgraphs]
    keys = [(sg.is_acc, sg.backend) for sg in subgraphs]
    search = _PathSearch(preds, MERGE_SEARCH_BUDGET * len(index.nodes) + 20_000)
    live: dict[tuple[bool, str], list[int]] = {}
    for b in range(len(subgraphs)):
        same = live.setdefault(keys[b], [])
        target = search.merge_target(same, b)
        if target < 0:
            same.append(b)
            continue
        members[target].extend(members[b])  # type: ignore[union-attr]
        members[b] = None
        _move_edges(preds, succs, b, target)
    return _topological(keys, members, preds, succs)


def _subgraph_edges(index: GraphIndex, subgraphs: Sequence[RawSubgraph],
                    dependents: Sequence[Sequence[int]]) -> tuple[list[set[int]], list[set[int]]]:
    """(predecessors, successors) of each subgraph in the subgraph DAG."""
    group_of = [-1] * len(index.nodes)
    for k, sg in enumerate(subgraphs):
        for i in sg.nodes:
            group_of[i] = k
    preds: list[set[int]] = [set() for _ in subgraphs]
    succs: list[set[int]] = [set() for _ in subgraphs]
    for k, sg in enumerate(subgraphs):
        for i in sg.nodes:
            for d in dependents[i]:
                g = group_of[d]
                if g != k:
                    succs[k].add(g)
                    preds[g].add(k)
    return preds, succs


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


def _topological(keys: Sequence[tuple[bool, str]], members: Sequence[list[int] | None],
                 preds: Sequence[set[int]], succs: Sequence[set[int]]) -> list[RawSubgraph]:
    """The merged subgraphs in Kahn's order, the earliest-numbered ready one first."""
    alive = [k for k in range(len(members)) if members[k] is not None]
    waiting = {k: len(preds[k]) for k in alive}
    heap = [k for k in alive if waiting[k] == 0]
    heapq.heapify(heap)
    result: list[RawSubgraph] = []
    while heap:
        k = heapq.heappop(heap)
        result.append(RawSubgraph(keys[k][0], keys[k][1], members[k]))  # type: ignore[arg-type]
        for s in sorted(succs[k]):
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(heap, s)
    if len(result) != len(alive):  # pragma: no cover - the search above rules this out
        raise RuntimeError("partitioner: merging made a cycle between subgraphs")
    return result


def _add_fusion_deps(index: GraphIndex, deps: dict[int, set[int]],
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


# --------------------------------------------------------------------------- 4. small blocks
class NextBackend:
    """`demote_to="next"`: which later backend in priority takes every node of a subgraph.
    Op-level verdicts are cached per (backend, op); per-node supports are asked per node."""

    def __init__(self, index: GraphIndex, config: Config) -> None:
        self.index = index
        self.priority = config.priority
        self.supports = {b: config.support_for(b) for b in config.priority}
        self._verdicts: dict[tuple[str, str], bool] = {}

    def _takes(self, b: str, i: int) -> bool:
        sup = self.supports[b]
        if sup.per_node:
            return bool(sup.check(self.index.nodes[i])[0])
        key = (b, self.index.ops[i])
        ok = self._verdicts.get(key)
        if ok is None:
            ok = self._verdicts[key] = bool(sup.check(self.index.nodes[i])[0])
        return ok

    def after(self, backend: str, nodes: Sequence[int]) -> str | None:
        """The first backend after `backend` in priority that takes all of `nodes`, or None."""
        if backend not in self.priority:
            return None
        for b in self.priority[self.priority.index(backend) + 1:]:
            with self.supports[b].checking():
                if all(self._takes(b, i) for i in nodes):
                    return b
        return None


Moves = dict[int, tuple[tuple[str, str, int], ...]]  # node -> ((from, to, subgraph size), ...)


def demote_to_next(index: GraphIndex, dependents: Sequence[Sequence[int]], subgraphs: list[RawSubgraph],
                   min_block_size: int, nxt: NextBackend) -> tuple[list[RawSubgraph], Moves]:
    """Each accelerated subgraph under `min_block_size` moves to the next backend in priority
    that takes all its nodes; then `merge` joins it with subgraphs of that backend wherever no
    cycle results, and the sizes are tested again, until nothing moves. A backend is only ever
    left for a later one, so this ends after at most len(priority) rounds. What is still small
    afterwards is for upstream's rule (`merge_small`)."""
    moves: dict[int, list[tuple[str, str, int]]] = {}
    while True:
        changed = False
        out: list[RawSubgraph] = []
        for sg in subgraphs:
            if sg.is_acc and len(sg.nodes) < min_block_size:
                target = nxt.after(sg.backend, sg.nodes)
                if target is not None:
                    for m in sg.nodes:
                        moves.setdefault(m, []).append((sg.backend, target, len(sg.nodes)))
                    sg = RawSubgraph(True, target, list(sg.nodes))
                    changed = True
            out.append(sg)
        if not changed:
            return out, {i: tuple(m) for i, m in moves.items()}
        subgraphs = merge(index, out, dependents)


def merge_small(subgraphs: list[RawSubgraph], min_block_size: int,
                keep_all: bool = False) -> tuple[list[RawSubgraph], dict[int, tuple[str, int]]]:
    """Upstream's remove_small_acc_subgraphs. Returns the new list and, for each demoted
    node, (the backend it was eligible for, the size of the subgraph it was in)."""
    result: list[RawSubgraph] = []
    demoted: dict[int, tuple[str, int]] = {}
    for sg in subgraphs:
        sg = RawSubgraph(sg.is_acc, sg.backend, list(sg.nodes))
        if sg.is_acc:
            if len(sg.nodes) >= min_block_size or keep_all:
                result.append(sg)
            elif result and (not result[-1].is_acc or result[-1].backend == sg.backend):
                if not result[-1].is_acc:
                    for m in sg.nodes:
                        demoted[m] = (sg.backend, len(sg.nodes))
                result[-1].nodes.extend(sg.nodes)
            else:
                for m in sg.nodes:
                    demoted[m] = (sg.backend, len(sg.nodes))
                result.append(RawSubgraph(False, FALLBACK, sg.nodes))
        elif result and not result[-1].is_acc:
            result[-1].nodes.extend(sg.nodes)
        else:
            result.append(sg)
    return result, demoted


def tags_for(subgraphs: Sequence[RawSubgraph]) -> list[str]:
    """Upstream's submodule names: _run_on_acc_<backend>_<i> / _run_on_gpu_<i>."""
    return [make_tag(sg.is_acc, sg.backend, i) for i, sg in enumerate(subgraphs)]


# --------------------------------------------------------------------------- the whole run
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
    next_backend: NextBackend | None = None  # demote_to="next": set; None: upstream's rule

    def at_min_block_size(self, min_block_size: int,
                          keep_all: bool = False) -> tuple[list[RawSubgraph], dict[int, tuple[str, int]]]:
        """The final subgraphs and demoted nodes at another min_block_size, re-running only
        the small-block pass and the merge after it (assignment and traversal are kept)."""
        if self.deps is None:  # upstream's result: only upstream's pass
            return merge_small(self.raw, min_block_size, keep_all)
        subgraphs, demoted, _ = small_blocks(self.index, self.deps, self.raw, min_block_size, keep_all,
                                             self.next_backend)
        return subgraphs, demoted


def small_blocks(index: GraphIndex, deps: tuple[list[int], list[Sequence[int]]],
                 raw: list[RawSubgraph], min_block_size: int, keep_all: bool,
                 nxt: NextBackend | None = None) -> tuple[list[RawSubgraph], dict[int, tuple[str, int]], Moves]:
    """Upstream's small-block pass, then `merge`, so that demoted blocks join PyTorch
    subgraphs they can reach without a cycle; with `nxt` (demote_to="next"), small blocks try
    the later backends in priority first (`demote_to_next`). (Traversing again with the
    demoted nodes in PyTorch was tried: on no zoo model and config did it give fewer subgraphs.)"""
    moved: Moves = {}
    if nxt is not None and not keep_all:
        raw, moved = demote_to_next(index, deps[1], raw, min_block_size, nxt)
    subgraphs, demoted = merge_small(raw, min_block_size, keep_all)
    if demoted:
        subgraphs = merge(index, subgraphs, deps[1])
    return subgraphs, demoted, moved


def check_full_compilation(index: GraphIndex, assignment: Assignment) -> None:
    missing = [i for i in index.callable_indices if assignment.backend[i] is None]
    if not missing:
        return
    from collections import Counter

    counts = Counter(index.ops[i] for i in missing)
    listed = ", ".join(f"{op} x{c}" for op, c in counts.most_common(8))
    raise ConfigError(
        f"require_full_compilation=True, but {len(missing)} node(s) would run in PyTorch: {listed}. "
        "Give those ops a backend (support={...}), drop them from torch_executed_ops, or set "
        "require_full_compilation=False."
    )


def run(gm: GraphModule, config: Config) -> EngineResult:
    with gc_paused():
        return _run(gm, config)


def _run(gm: GraphModule, config: Config) -> EngineResult:
    index = index_graph(gm)
    assignment = assign(index, config)
    if config.require_full_compilation:
        check_full_compilation(index, assignment)
    acc = [b is not None for b in assignment.backend]
    groups = {} if config.skip_fusion else fusions(index, acc)
    deps = dependencies(index, groups)
    raw = merge(index, traverse(index, assignment.backend, groups, deps), deps[1])
    nxt = NextBackend(index, config) if config.demote_to == "next" and len(config.priority) > 1 else None
    subgraphs, demoted, moved = small_blocks(index, deps, raw, config.min_block_size,
                                             config.require_full_compilation, nxt)
    return EngineResult(index, assignment, raw, subgraphs, tags_for(subgraphs), demoted, deps,
                        moved=moved, next_backend=nxt)
