"""The graph index: a read-only, integer-indexed view of a captured graph (`GraphIndex`), built
once per graph and cached while a Partition holds it. Every engine (hierviz's passes,
upstream/hierarchical.py, compile_partitioners.py), the Partition's record and the split
module read nodes through it."""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch.fx import GraphModule, Node

from hierviz.foundation.gcpause import gc_paused
from hierviz.foundation.opnames import in_op_set, qualname
from hierviz.partitioner.reasons import CALLABLE_OPS

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
