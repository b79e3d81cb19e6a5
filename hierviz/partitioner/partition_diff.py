"""hv.diff: how two partitions differ, node by node, matched by node name (a saved partition
and a live one, or two versions of a model); two MultiGraphPartitions graph by graph.

Reads only each Partition's public record (`records`), like every other consumer of a partition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hierviz.errors import ConfigError, checked_arguments
from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition
from hierviz.partitioner.by_graph.per_graph import partitions_of
from hierviz.partitioner.partition_result import Partition

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from hierviz.partitioner.record import NodeTable


COLUMNS = ("node", "op", "change", "backend_a", "backend_b", "tag_a", "tag_b", "reason_a", "reason_b")


@checked_arguments
def diff(a: Partition | MultiGraphPartition, b: Partition | MultiGraphPartition) -> "pd.DataFrame":
    """Nodes whose backend or subgraph differs between two partitions, matched by node name
    (a saved partition and a live one, or two versions of a model, compare too).

    A subgraph is compared by its members (the nodes both partitions have), not its number:
    two partitions that group the same nodes the same way, numbered differently, have no
    difference. `change` says what happened to each listed node: 'backend' (it runs on another
    backend in b), 'split' (same backend, but some of the nodes it ran with in a run elsewhere
    in b), 'merged' (same backend, its subgraph in b holds all of a's and more), 'only_a' / 'only_b'
    (the node exists in one partition only). A node whose backend and subgraph members are the
    same has no row.

    Two MultiGraphPartitions (ir="torch_compile") are compared graph by graph, matched by
    position (graph k with graph k): a `graph` column comes first and `node` is named across
    graphs ('g2/add_3'); a graph only one of them has lists its op nodes as only_a / only_b. A
    MultiGraphPartition of one graph compares with a Partition as that graph; with more graphs
    that is a ConfigError (compare part.graphs[k], or partition both with the same ir)."""
    import pandas as pd

    for which, p in (("first", a), ("second", b)):
        if not isinstance(p, (Partition, MultiGraphPartition)):
            raise ConfigError(f"hv.diff takes two hv.Partition objects (hv.partition or hv.load_partition), or two "
                              f"hv.MultiGraphPartition objects (ir='torch_compile'); the {which} is "
                              f"{type(p).__name__} {p!r:.60}.")
    if not (isinstance(a, MultiGraphPartition) and isinstance(b, MultiGraphPartition)):
        one_a, one_b = _one_graph(a, "first"), _one_graph(b, "second")
        if not _shares_nodes(one_a, one_b) and _has_ops(one_a) and _has_ops(one_b):
            raise ConfigError("hv.diff matches nodes by name, and these two partitions have no op node in common: "
                              "they are of different models.")
        return pd.DataFrame(_rows(one_a, one_b), columns=list(COLUMNS))
    rows = []
    for k in range(max(len(a.graphs), len(b.graphs))):
        ga = a.graphs[k] if k < len(a.graphs) else None
        gb = b.graphs[k] if k < len(b.graphs) else None
        if ga is not None and gb is not None:
            mine = _rows(ga, gb)
        else:
            side, only = ("a", ga) if ga is not None else ("b", gb)
            assert only is not None, "graph k is in one partition at least"
            t = only.records
            mine = [_one_side(t, i, side) for i in range(len(t)) if t.is_callable(i)]
        rows += [{"graph": k, **r, "node": f"g{k}/{r['node']}"} for r in mine]
    pairs = list(zip(a.graphs, b.graphs))
    some = any(_has_ops(g) for g in a.graphs) and any(_has_ops(g) for g in b.graphs)
    if a is not b and some and not any(_shares_nodes(ga, gb) for ga, gb in pairs):
        raise ConfigError("hv.diff matches graph k with graph k and nodes by name, and no graph of these two "
                          "partitions has an op node in common with its match: they are of different models.")
    return pd.DataFrame(rows, columns=["graph", *COLUMNS])


def _one_graph(part: Partition | MultiGraphPartition, which: str) -> Partition:
    """`part` as one graph, compared with a Partition: a MultiGraphPartition of one graph is
    that graph; of more graphs, a ConfigError."""
    graphs = partitions_of(part)
    if len(graphs) != 1:
        raise ConfigError(f"hv.diff: the {which} is a MultiGraphPartition of {len(graphs)} graphs "
                          "(ir='torch_compile'), the other one graph: compare one of its graphs (part.graphs[k]), "
                          "or partition both with the same ir.")
    return graphs[0]


def _has_ops(p: Partition) -> bool:
    """Whether the partition has an op node (a capture with nothing to compare has none)."""
    t = p.records
    return any(t.is_callable(i) for i in range(len(t)))


def _shares_nodes(a: Partition, b: Partition) -> bool:
    ta, tb = a.records, b.records
    return any(ta.is_callable(i) and ta.name[i] in tb.position for i in range(len(ta)))


def _one_side(t: "NodeTable", i: int, side: str) -> dict:
    """Node `i` of the record `t` of partition `side` ('a' or 'b'), which the other one lacks."""
    other = "b" if side == "a" else "a"
    return {"node": t.name[i], "op": t.op[i], "change": f"only_{side}", f"backend_{side}": t.backend[i],
            f"backend_{other}": None, f"tag_{side}": t.tag[i], f"tag_{other}": None, f"reason_{side}": t.reason(i),
            f"reason_{other}": None}


def _rows(a: Partition, b: Partition) -> list[dict]:
    """hv.diff's rows for two partitions of one graph each."""
    ta, tb = a.records, b.records
    rows = []
    for i, change in changes(a, b).items():
        j = tb.position.get(ta.name[i])
        if j is None:
            rows.append(_one_side(ta, i, "a"))
            continue
        rows.append({"node": ta.name[i], "op": ta.op[i], "change": change, "backend_a": ta.backend[i],
                     "backend_b": tb.backend[j], "tag_a": ta.tag[i], "tag_b": tb.tag[j], "reason_a": ta.reason(i),
                     "reason_b": tb.reason(j)})
    rows += [_one_side(tb, j, "b") for j in only_in(b, a)]
    return rows


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
    members_a = [frozenset(ta.name[m] for m in ms if ta.name[m] in common)
                 for ms in ta.subgraph_members] + [frozenset()]
    members_b = [frozenset(tb.name[m] for m in ms if tb.name[m] in common)
                 for ms in tb.subgraph_members] + [frozenset()]
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
