"""hv.diff: how two partitions differ, node by node, matched by node name (a saved partition
and a live one, or two versions of a model).

Reads only each Partition's public record (`records`), like every other consumer of a partition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hierviz.errors import ConfigError, checked_arguments
from hierviz.partitioner.result import Partition

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


@checked_arguments
def diff(a: Partition, b: Partition) -> "pd.DataFrame":
    """Nodes whose backend or subgraph differs between two partitions, matched by node name
    (a saved partition and a live one, or two versions of a model, compare too).

    A subgraph is compared by its members (the nodes both partitions have), not its number:
    two partitions that group the same nodes the same way, numbered differently, have no
    difference. `change` says what happened to each listed node: 'backend' (it runs on another
    backend in b), 'split' (same backend, but some of the nodes it ran with in a run elsewhere
    in b), 'merged' (same backend, its subgraph in b holds all of a's and more), 'only_a' / 'only_b'
    (the node exists in one partition only). A node whose backend and subgraph members are the
    same has no row."""
    import pandas as pd

    for which, p in (("first", a), ("second", b)):
        if not isinstance(p, Partition):
            raise ConfigError(f"hv.diff takes two hv.Partition objects (hv.partition or hv.load_partition); the "
                              f"{which} is {type(p).__name__} {p!r:.60}.")
    ta, tb = a.records, b.records
    if not any(ta.is_callable(i) and ta.name[i] in tb.position for i in range(len(ta))):
        raise ConfigError("hv.diff matches nodes by name, and these two partitions have no op node in common: "
                          "they are of different models.")
    rows = []
    for i, change in changes(a, b).items():
        j = tb.position.get(ta.name[i])
        rows.append({"node": ta.name[i], "op": ta.op[i], "change": change, "backend_a": ta.backend[i],
                     "backend_b": None if j is None else tb.backend[j], "tag_a": ta.tag[i],
                     "tag_b": None if j is None else tb.tag[j], "reason_a": ta.reason(i),
                     "reason_b": None if j is None else tb.reason(j)})
    for j in only_in(b, a):
        rows.append({"node": tb.name[j], "op": tb.op[j], "change": "only_b", "backend_a": None,
                     "backend_b": tb.backend[j], "tag_a": None, "tag_b": tb.tag[j], "reason_a": None,
                     "reason_b": tb.reason(j)})
    return pd.DataFrame(rows, columns=["node", "op", "change", "backend_a", "backend_b", "tag_a", "tag_b",
                                       "reason_a", "reason_b"])


CHANGES = ("backend", "split", "merged", "only_a", "only_b")


def only_in(a: Partition, b: Partition) -> list[int]:
    """Indices of a's op nodes (graph order) that b has no node of that name for."""
    ta, names_b = a.records, b.records.position
    return [i for i in range(len(ta)) if ta.is_callable(i) and ta.name[i] not in names_b]


def changes(a: Partition, b: Partition) -> dict[int, str]:
    """Node index in a -> 'backend' / 'split' / 'merged' / 'only_a' for every op node of a
    (graph order) whose backend or subgraph differs in b, or that b lacks; nodes are matched by
    name, subgraphs by their members among the nodes both have."""
    ta, tb = a.records, b.records
    pos_b = tb.position
    common = {n for n in ta.name if n in pos_b}
    # a subgraph's identity is its member set (common nodes); -1 (no subgraph: dead code) is the empty set
    members_a = [frozenset(ta.name[m] for m in ms if ta.name[m] in common) for ms in ta.subgraph_members] + [frozenset()]
    members_b = [frozenset(tb.name[m] for m in ms if tb.name[m] in common) for ms in tb.subgraph_members] + [frozenset()]
    out: dict[int, str] = {}
    for i in range(len(ta)):
        if not ta.is_callable(i):
            continue
        j = pos_b.get(ta.name[i])
        if j is None:
            out[i] = "only_a"
            continue
        ma, mb = members_a[ta.subgraph[i]], members_b[tb.subgraph[j]]
        if ta.backend[i] != tb.backend[j]:
            out[i] = "backend"
        elif ma != mb:
            out[i] = "split" if ma - mb else "merged"
    return out


__all__ = ["diff", "CHANGES", "only_in", "changes"]
