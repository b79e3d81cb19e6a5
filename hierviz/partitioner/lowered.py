"""torch_executed_ops entries that match no node of the graph: a ConfigWarning each, saying
what Torch-TensorRT's lowering turned them into and how to force those nodes (the op names
themselves, or `hv.source_ops(...)`), or that the op is not in the model at all.

Torch-TensorRT ignores such an entry silently (its decompositions do not depend on
torch_executed_ops): `torch_executed_ops={"aten.silu.default"}` on a Llama leaves every
SiLU, lowered to sigmoid + mul, on TensorRT.
"""

from __future__ import annotations

import warnings
from collections import Counter

from torch.fx import GraphModule

from hierviz.settings.config import Config
from hierviz.errors import ConfigWarning, user_stacklevel
from hierviz.foundation.opnames import packet_name, packets_in
from hierviz.partitioner.engine.graph_index import index_graph
from hierviz.capturing.provenance import source_op, split_sources


def lowered_away(gm: GraphModule, config: Config) -> dict[str, Counter]:
    """For each torch_executed_ops name that matches no node of `gm`: the lowered ops of the
    nodes it is the source op of, with their counts (in graph order); an empty Counter when it
    is the source of none either (the op is not in the model)."""
    names, _ = split_sources(config.torch_executed_ops)
    if not names:
        return {}
    index = index_graph(gm)
    present = set(index.ops)
    present_packets = {packet_name(o) for o in present if o.startswith("torch.ops.")}
    packets = packets_in(names)
    missing = [o for o in sorted(names) if o not in present and not (o in packets and o in present_packets)]
    found: dict[str, Counter] = {o: Counter() for o in missing}
    if not missing:
        return found
    for i in index.callable_indices:
        src = source_op(index.nodes[i])
        if src is None or src == index.ops[i]:
            continue
        for o in missing:
            if src == o or (o in packets and packet_name(src) == o):
                found[o][index.ops[i]] += 1
    return found


def _plain(name: str) -> str:
    return name[len("torch.ops."):] if name.startswith("torch.ops.") else name


def lowered_away_message(op: str, into: Counter) -> str:
    """The warning for one op: what the lowering turned its nodes into, and the two fixes (or
    that no node comes from it)."""
    count = sum(into.values())
    if not count:
        return (f"{_plain(op)} is not in the graph, and no node was lowered from it: torch_executed_ops="
                f"{{{_plain(op)!r}}} forces nothing here. Check the op name against the graph's ops "
                "(part.ops() lists them).")
    made = " + ".join(_plain(o) for o in into)
    return (f"{_plain(op)} is not in the lowered graph: Torch-TensorRT's lowering turned it into {count} node(s) "
            f"of {made}; force those, or pass source ops with "
            f"torch_executed_ops=hv.source_ops({_plain(op)!r}).")


def warn_lowered_away(gm: GraphModule, config: Config) -> None:
    """A ConfigWarning per torch_executed_ops name that matches no node (see lowered_away)."""
    for op, into in lowered_away(gm, config).items():
        warnings.warn(lowered_away_message(op, into), ConfigWarning, stacklevel=user_stacklevel())


__all__ = ["lowered_away", "lowered_away_message", "warn_lowered_away"]
