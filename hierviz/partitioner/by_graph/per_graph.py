"""One graph-by-graph path: a layer's single-graph function applied to every graph of a partition.

A MultiGraphPartition (hv.partition(..., ir="torch_compile")) is a sequence of hv.Partitions,
one per dynamo graph in execution order, plus the graph breaks between them. A layer that
does something to one Partition (draws it, saves it, plans its compile, finds its blockers)
does it to every graph through `per_graph`, rather than keeping a copy of itself for several
graphs; `per_graph_table` stacks each graph's table under a `graph` column; `partitions_of`
is the one place that tells a Partition from a partition graph by graph.

    >>> per_graph(lambda p: p.stats["subgraphs"], mp)          # one value per graph
    >>> per_graph(render, mp, views, measurements)              # graph k gets views[k], measurements[k]
    >>> per_graph_table(Partition.summary, mp)                  # the tables, with a `graph` column
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

from hierviz.errors import ConfigError, HiervizError
from hierviz.partitioner.partition_result import Partition

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

T = TypeVar("T")

GRAPH_COLUMN = "graph"


def partitions_of(part: Partition | Sequence[Partition]) -> list[Partition]:
    """The Partition of each graph, in execution order: a MultiGraphPartition's graphs, or a
    Partition as the only graph."""
    return [part] if isinstance(part, Partition) else list(part)


def per_graph(fn: Callable[..., T], part: Partition | Sequence[Partition], *per_graph_args: Sequence[Any],
              name_errors: bool = False) -> list[T]:
    """`fn(graph_k, a[k], b[k], ...)` for each graph k of `part` (as `map` does), one result per
    graph in execution order; each of `per_graph_args` holds one value per graph. With
    `name_errors`, a hv.HiervizError raised for graph k says so first ('graph g2: ...') when
    `part` is graph by graph."""
    graphs = partitions_of(part)
    for values in per_graph_args:
        if len(values) != len(graphs):
            raise ConfigError(f"{len(values)} value(s) given for {len(graphs)} graph(s): pass one per graph, in "
                              "execution order.")
    out: list[T] = []
    for k, args in enumerate(zip(graphs, *per_graph_args)):
        try:
            out.append(fn(*args))
        except HiervizError as exc:
            if name_errors and not isinstance(part, Partition) and exc.args and isinstance(exc.args[0], str):
                exc.args = (f"graph g{k}: {exc.args[0]}", *exc.args[1:])
            raise
    return out


def stacked(tables: Sequence["pd.DataFrame"], graphs: Sequence[int], columns: Sequence[str] = ()) -> "pd.DataFrame":
    """The tables one after the other, each with its graph's index (`graphs[k]`) in a first
    `graph` column; with no table, the columns alone (`graph`, then `columns`)."""
    import pandas as pd

    frames = []
    for table, k in zip(tables, graphs, strict=True):
        frame = table.copy(deep=False)
        frame.insert(0, GRAPH_COLUMN, k)
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=[GRAPH_COLUMN, *columns])
    return pd.concat(frames, ignore_index=True)


def per_graph_table(fn: Callable[[Partition], "pd.DataFrame"],
                    part: Partition | Sequence[Partition]) -> "pd.DataFrame":
    """`fn` of each graph (a table), one after the other, with the graph's index first (`graph`)."""
    tables = per_graph(fn, part)
    return stacked(tables, range(len(tables)))


__all__ = ["partitions_of", "per_graph", "per_graph_table", "stacked", "GRAPH_COLUMN"]
