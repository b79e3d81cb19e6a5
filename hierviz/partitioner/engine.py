"""The hierarchical adjacency partitioner: hierviz's own implementation of the seed's algorithm.

Four passes over a read-only graph index, each linear in the graph (up to a log factor for
the ready queues):

1. `assign`     each callable node's eligible backend (first in priority whose support takes
                it, unless it is in torch_executed_ops; non-compute nodes follow their producer)
2. `fusions`    groups of accelerated nodes that pass non-tensor data (as torch.fx's
                FxNetAccFusionsFinder), kept together unless skip_fusion
3. `traverse`   a topological walk that grows maximal same-backend runs; among ready nodes it
                prefers one that continues the current subgraph, ties broken by graph order
4. `merge_small` the seed's remove_small_acc_subgraphs, unchanged

The input graph is never modified; every pass works on integer node indices.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import heapq
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch.fx import GraphModule, Node

from hierviz.config import Config
from hierviz.errors import ConfigError
from hierviz.opnames import packet_name, qualname

FALLBACK = "torch"  # the backend name of nodes that run in PyTorch (upstream: "None")
CALLABLE_OPS = ("call_function", "call_method", "call_module")
NON_COMPUTE_OPS = frozenset({"_operator.getitem"})
NON_COMPUTE_PACKETS = frozenset({"torch.ops.aten.view"})

# Reason codes, one per node; the text is built on demand from the code and its detail.
SUPPORTED = "supported"
FOLLOWS_PRODUCER = "follows_producer"
TORCH_EXECUTED = "torch_executed_ops"
UNSUPPORTED = "unsupported"
VALIDATOR = "validator_rejected"
DEMOTED = "demoted"
NOT_CALLABLE = "not_callable"


@functools.lru_cache(maxsize=None)
def is_non_compute(name: str) -> bool:
    return name in NON_COMPUTE_OPS or packet_name(name) in NON_COMPUTE_PACKETS


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while a pass allocates a few objects per node: on a
    graph of 10^5 nodes its repeated scans of the live graph cost more than the pass itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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


# graph -> its index, while some Partition still holds that index. The value must be a weak
# reference too: the index holds the graph's nodes, which hold the graph, so a strong value
# would keep every partitioned graph alive for ever.
_INDEX_CACHE: "weakref.WeakKeyDictionary[torch.fx.Graph, weakref.ref[GraphIndex]]" = weakref.WeakKeyDictionary()


def index_graph(gm: GraphModule) -> GraphIndex:
    graph = gm.graph
    ref = _INDEX_CACHE.get(graph)
    cached = ref() if ref is not None else None
    if cached is not None and len(cached.nodes) == len(graph.nodes):
        return cached
    with gc_paused():
        nodes = list(graph.nodes)
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
                           [i for i, c in enumerate(call) if c])
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
    n = len(index.nodes)
    backend: list[str | None] = [None] * n
    code = [NOT_CALLABLE] * n
    detail: list[Any] = [None] * n
    supports = [(b, config.support_for(b)) for b in config.priority]
    teo = config.torch_executed_ops
    teo_packets = frozenset(o for o in teo if o.count(".") == 3 and o.startswith("torch.ops."))
    verdicts: dict[str, tuple[str | None, str, Any]] = {}  # op name -> decision, when per-target
    per_node = any(s.per_node for _, s in supports)

    def decide(i: int) -> tuple[str | None, str, Any]:
        rejections: dict[str, str] = {}
        for b, sup in supports:
            ok, why = sup.check(index.nodes[i])
            if ok:
                return b, SUPPORTED, rejections
            rejections[b] = why
        validator = any("validator" in why for why in rejections.values())
        return None, VALIDATOR if validator else UNSUPPORTED, rejections

    for i in range(n):
        if not index.callable[i]:
            continue
        name = index.ops[i]
        if name in teo or (teo_packets and packet_name(name) in teo_packets):
            code[i], detail[i] = TORCH_EXECUTED, None
            continue
        if index.non_compute[i]:
            producer = next((j for j in index.inputs[i] if index.callable[j]), None)
            if producer is not None:
                backend[i], code[i], detail[i] = backend[producer], FOLLOWS_PRODUCER, producer
                continue
        if per_node:
            backend[i], code[i], detail[i] = decide(i)
        else:
            verdict = verdicts.get(name)
            if verdict is None:
                verdict = verdicts[name] = decide(i)
            backend[i], code[i], detail[i] = verdict
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


def traverse(index: GraphIndex, backend: Sequence[str | None],
             groups: dict[int, frozenset[int]]) -> list[RawSubgraph]:
    """Walk the graph in a topological order, growing one subgraph at a time.

    Like the seed it alternates between accelerated and PyTorch subgraphs and starts a new
    subgraph when the backend changes. Unlike the seed (which takes any ready node from a
    Python set, so its result changes from run to run) it takes a ready node of the current
    subgraph's backend whenever there is one, breaking ties by graph order."""
    callables = index.callable_indices
    if not callables:
        return []
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

    cpu_ready: list[int] = []
    acc_ready: dict[str, list[int]] = {}

    def push(i: int) -> None:
        b = backend[i]
        if b is None:
            heapq.heappush(cpu_ready, i)
        else:
            heapq.heappush(acc_ready.setdefault(b, []), i)

    for i in callables:
        if remaining[i] == 0:
            push(i)

    subgraphs: list[RawSubgraph] = []
    in_acc = not cpu_ready
    current: list[int] = []
    current_backend = FALLBACK
    visited = 0
    total = len(callables)

    def close() -> None:
        nonlocal current
        if current:
            subgraphs.append(RawSubgraph(in_acc, current_backend if in_acc else FALLBACK, current))
            current = []

    while visited < total:
        if in_acc:
            queue = acc_ready.get(current_backend) if current else None
            if not queue:
                close()
                live = [(q[0], b) for b, q in acc_ready.items() if q]
                if not live:
                    if not cpu_ready:
                        raise RuntimeError("partitioner: dependency cycle between nodes")
                    in_acc = False
                    continue
                current_backend = min(live)[1]
                queue = acc_ready[current_backend]
            node = heapq.heappop(queue)
        else:
            if not cpu_ready:
                close()
                in_acc = True
                continue
            node = heapq.heappop(cpu_ready)
        current.append(node)
        visited += 1
        for d in dependents[node]:
            remaining[d] -= 1
            if remaining[d] == 0:
                push(d)
    close()
    return subgraphs


def _add_fusion_deps(index: GraphIndex, deps: dict[int, set[int]],
                     groups: dict[int, frozenset[int]]) -> None:
    """As the seed's splitter: members of a fusion group wait for every outer input of the
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
def merge_small(subgraphs: list[RawSubgraph], min_block_size: int,
                keep_all: bool = False) -> tuple[list[RawSubgraph], dict[int, tuple[str, int]]]:
    """The seed's remove_small_acc_subgraphs. Returns the new list and, for each demoted
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
    return [f"_run_on_acc_{sg.backend}_{i}" if sg.is_acc else f"_run_on_gpu_{i}"
            for i, sg in enumerate(subgraphs)]


# --------------------------------------------------------------------------- the whole run
@dataclass
class EngineResult:
    index: GraphIndex
    assignment: Assignment
    raw: list[RawSubgraph]  # before merge_small (reused by recommend)
    subgraphs: list[RawSubgraph]
    tags: list[str]
    demoted: dict[int, tuple[str, int]]


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
    raw = traverse(index, assignment.backend, groups)
    subgraphs, demoted = merge_small(raw, config.min_block_size, config.require_full_compilation)
    return EngineResult(index, assignment, raw, subgraphs, tags_for(subgraphs), demoted)
