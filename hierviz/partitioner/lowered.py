"""torch_executed_ops entries that Torch-TensorRT's lowering removed from the graph: a
ConfigWarning saying what the lowering turned them into and how to force those nodes
(the op names themselves, or `hv.source_ops(...)`).

Torch-TensorRT ignores such an entry silently (its decompositions do not depend on
torch_executed_ops): `torch_executed_ops={"aten.silu.default"}` on a Llama leaves every
SiLU, lowered to sigmoid + mul, on TensorRT.
"""

from __future__ import annotations

import warnings
from collections import Counter

from torch.fx import GraphModule

from hierviz.config import Config
from hierviz.errors import ConfigWarning, user_stacklevel
from hierviz.opnames import packet_name, packets_in
from hierviz.partitioner.graph_index import index_graph
from hierviz.provenance import source_op, split_sources


def lowered_away(gm: GraphModule, config: Config) -> dict[str, Counter]:
    """For each torch_executed_ops name that matches no node of `gm` but names the source op
    of some: the lowered ops those nodes are, with their counts (in graph order)."""
    names, _ = split_sources(config.torch_executed_ops)
    if not names:
        return {}
    index = index_graph(gm)
    present = set(index.ops)
    present_packets = {packet_name(o) for o in present if o.startswith("torch.ops.")}
    packets = packets_in(names)
    missing = [o for o in sorted(names) if o not in present and not (o in packets and o in present_packets)]
    found: dict[str, Counter] = {}
    if not missing:
        return found
    for i in index.callable_indices:
        src = source_op(index.nodes[i])
        if src is None or src == index.ops[i]:
            continue
        for o in missing:
            if src == o or (o in packets and packet_name(src) == o):
                found.setdefault(o, Counter())[index.ops[i]] += 1
    return found


def _plain(name: str) -> str:
    return name[len("torch.ops."):] if name.startswith("torch.ops.") else name


def lowered_away_message(op: str, into: Counter) -> str:
    """The warning for one op: what the lowering turned its nodes into, and the two fixes."""
    count = sum(into.values())
    made = " + ".join(_plain(o) for o in into)
    return (f"{_plain(op)} is not in the lowered graph: Torch-TensorRT's lowering turned it into {count} node(s) "
            f"of {made}; force those, or pass source ops with "
            f"torch_executed_ops=hv.source_ops({_plain(op)!r}).")


def warn_lowered_away(gm: GraphModule, config: Config) -> None:
    """A ConfigWarning per torch_executed_ops name the lowering removed (see lowered_away)."""
    for op, into in lowered_away(gm, config).items():
        warnings.warn(lowered_away_message(op, into), ConfigWarning, stacklevel=user_stacklevel())


__all__ = ["lowered_away", "lowered_away_message", "warn_lowered_away"]
