"""Where each node of a captured graph came from: the op of the exported graph that
Torch-TensorRT's lowering turned into it (SiLU into sigmoid + mul, `softmax.int` into
`_softmax.default`, views into `_reshape_copy`).

torch.fx keeps the provenance in `node.meta["from_node"]`: a chain of the nodes each pass
replaced, back to the exported program. `source_op(node)` reads the oldest op of that
chain. A graph dynamo compiled (`ir="torch_compile"`) is lowered from torch-level calls, with
no exported program behind it: its capture records, in `node.meta[SOURCE_META]`, the aten op
the model called before Torch-TensorRT's decompositions (`recorded_sources`), and `source_op`
reads that where no chain is kept. `hv.source_ops(...)` names source ops in `torch_executed_ops`
(as `"source:torch.ops.aten.silu.default"`), which forces every node that came from them.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterable, Iterator

import torch
from torch.fx.traceback import preserve_node_meta

from hierviz.foundation.opnames import SOURCE_PREFIX, normalize, qualname

# how deep a from_node chain is followed (real chains are a few passes long)
_MAX_DEPTH = 64
# node.meta key: the qualified name of the aten op a node of a graph-by-graph capture came from
# (a string, so the capture cache keeps it; torch's own "original_aten" is an OpOverload)
SOURCE_META = "hierviz_source_op"
# what tracing with preserved node meta adds to each node besides original_aten (dropped again)
_TRACED_META = ("original_aten", "seq_nr")


def source_op(node: torch.fx.Node) -> str | None:
    """The qualified name of the exported graph's op that `node` came from
    ("torch.ops.aten.silu.default" for the sigmoid and mul of a SiLU), or None when the node
    keeps no provenance (a graph built by hand)."""
    chain = node.meta.get("from_node")
    found: str | None = None
    depth = 0
    while chain and depth < _MAX_DEPTH:
        src = chain[0]
        target = getattr(src, "target", None)
        if isinstance(target, str) and "." in target and not target.startswith(("<", "_operator")):
            found = target
        chain = getattr(src, "from_node", None)
        depth += 1
    if found is None:
        recorded = node.meta.get(SOURCE_META)
        return recorded if isinstance(recorded, str) else None
    return found if found.startswith("torch.ops.") else "torch.ops." + found


@contextlib.contextmanager
def recorded_sources() -> Iterator[list[torch.fx.GraphModule]]:
    """Trace inside the block with torch's node-meta preservation, under which make_fx notes on
    each node the aten op dispatched before decompositions (`original_aten`: aten.silu.default
    for a SiLU's sigmoid and mul); append the traced GraphModule to the yielded list and each of
    its nodes gets that op's name in `meta[SOURCE_META]` when the block ends (the meta the
    tracing added besides is dropped, so the graph is otherwise as traced without it)."""
    traced: list[torch.fx.GraphModule] = []
    with preserve_node_meta():
        yield traced
    for gm in traced:
        for node in gm.graph.nodes:
            original = node.meta.get("original_aten")
            for key in _TRACED_META:
                node.meta.pop(key, None)
            if node.op == "call_function" and isinstance(original, torch._ops.OpOverload):
                node.meta[SOURCE_META] = qualname(original)


def source_ops(*ops: Any) -> frozenset[str]:
    """For `torch_executed_ops`: force every node that came from these source ops, the ops of
    the model as exported (`hv.source_ops("aten.silu.default")` forces the sigmoid and mul
    Torch-TensorRT's lowering makes of each SiLU). Names as for torch_executed_ops; combine
    with plain names by union: `hv.source_ops("silu.default") | {"aten.add.Tensor"}`."""
    names: list[Any] = []
    for op in ops:
        names.extend(op if isinstance(op, (list, tuple, set, frozenset)) else [op])
    return frozenset(SOURCE_PREFIX + normalize(str(o)[len(SOURCE_PREFIX):] if str(o).startswith(SOURCE_PREFIX)
                                               else o, "hv.source_ops") for o in names)


def decomposed_first(entry: str) -> tuple[str, ...]:
    """The overloads an hv.source_ops entry (an op or a packet, without its prefix) names that
    torch decomposes before any tracing graph by graph sees them (CompositeImplicitAutograd:
    softmax.int, linear): no node of an ir='torch_compile' graph records them as its source."""
    path = entry[len("torch.ops."):] if entry.startswith("torch.ops.") else entry
    found: Any = torch.ops
    for part in path.split("."):
        found = getattr(found, part, None)
        if found is None:
            return ()
    overloads = [getattr(found, o) for o in found.overloads()] if isinstance(found, torch._ops.OpOverloadPacket) \
        else [found] if isinstance(found, torch._ops.OpOverload) else []
    return tuple(qualname(o) for o in overloads
                 if torch._C._dispatch_has_kernel_for_dispatch_key(o.name(), "CompositeImplicitAutograd"))


def lowered_sources(nodes: Iterable[torch.fx.Node]) -> dict[str, int]:
    """The source ops the lowering replaced, as torch_executed_ops entries
    ("source:torch.ops.aten.silu.default"), each with how many lowered nodes came from it."""
    counts: dict[str, int] = {}
    for node in nodes:
        if node.op != "call_function":
            continue
        src = source_op(node)
        if src is not None and src != qualname(node.target):
            counts[SOURCE_PREFIX + src] = counts.get(SOURCE_PREFIX + src, 0) + 1
    return counts


def split_sources(names: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(plain op names, source op names without their prefix) of a torch_executed_ops set."""
    plain, sources = set(), set()
    for n in names:
        (sources.add(n[len(SOURCE_PREFIX):]) if n.startswith(SOURCE_PREFIX) else plain.add(n))
    return frozenset(plain), frozenset(sources)


def short_op(name: str) -> str:
    """'torch.ops.aten.silu.default' -> 'aten.silu' (the default overload), else 'aten.add.Scalar'."""
    op = name[len("torch.ops."):] if name.startswith("torch.ops.") else name
    return op[:-len(".default")] if op.endswith(".default") else op


__all__ = ["SOURCE_META", "recorded_sources", "decomposed_first", "source_op", "source_ops", "lowered_sources",
           "split_sources", "short_op"]
