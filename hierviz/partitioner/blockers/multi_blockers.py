"""`MultiGraphPartition.blockers()`: what keeps a model's graphs from fewer, larger engines, graph
breaks included, ranked together by what fixing each gives.

Two kinds of rows, in one table ranked as `Partition.blockers()` ranks (hierviz.partitioner.blockers.blocker_causes:
improvements first, then trade-offs, no gain; each by subgraphs saved, then ops gained):

- An op cause (no converter, validator rejected, forced, demoted, no backend) found in each
  graph by `find_causes`. The settings are the model's, one Config for every graph, so a cause
  is one row however many graphs have it (its `graph` cell lists them, its `nodes` are counted
  over them); its figures come from re-partitioning every graph with the cause removed
  (`hv.partition(part, config=row.config, ir="torch_compile")`, as a user runs it by hand), the
  totals against today's.
- A graph break (`kind` "graph break"): what removing the break gives. Graphs `k` and `k + 1`
  (the graph the break ended and the one after it) are joined into the graph dynamo would have
  made without it (hierviz.partitioner.by_graph.joined_graphs: each input of graph `k + 1` that was a
  tensor graph `k` returned reads that output; the other inputs stay inputs), the joined graph is
  partitioned with the same settings and engine, and `subgraphs_saved` is graph `k`'s subgraphs
  plus graph `k + 1`'s less the joined graph's (`accelerated_ops_gained` likewise, from
  accelerated ops: a graph left whole in PyTorch may reach min_block_size once joined).
  The eager Python between the graphs is taken as free to trace and adds no op. A TensorRT block
  at the end of graph `k` feeding a TensorRT block at the start of graph `k + 1` is one engine
  in the joined graph, so such a break saves at least one subgraph. A break that ended no graph
  (another break at the same place keeps the graphs apart), or with no graph after it, gives
  nothing alone (0 and 0, said in its note). `change` says where the break is (the user's
  file:line and code), `note` dynamo's hints; `nodes` is 0 and `config` None (no setting
  removes a break).

The combined row joins the first `top` op causes (a break is not a setting). `graph` is the
graphs a row concerns, as text: "g1", "g0, g2" (an op cause in both), "g0, g1" (a break between
them).
"""

from __future__ import annotations

import contextlib
import warnings
from typing import TYPE_CHECKING, Any, Callable

from hierviz.settings.config import derive
from hierviz.errors import ConfigError, HiervizError
from hierviz.capturing.by_graph.graph_break import GraphBreak
from hierviz.foundation.opnames import names_as_saved
from hierviz.partitioner.engine_dispatch import partition_graph
from hierviz.partitioner.blockers.blocker_causes import (COLUMNS, DEFAULT_TOP, DEMOTED_KIND, FORCED, KINDS, Cause,
                                                         check_top, counted, find_causes, forced_note, join_notes,
                                                         parse_kinds, ranked_rows)
from hierviz.partitioner.blockers.known_tables import keep_table, known_table
from hierviz.partitioner.by_graph.joined_graphs import join, wired_inputs
from hierviz.partitioner.by_graph.per_graph import per_graph
from hierviz.partitioner.partition_result import Partition

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition
    import pandas as pd

BREAK_KIND = "graph break"
MULTI_KINDS = (*KINDS, BREAK_KIND)
MULTI_COLUMNS = ("graph", *COLUMNS)


def _names(graphs: list[int]) -> str:
    return ", ".join(f"g{k}" for k in sorted(set(graphs)))


def merged_causes(part: MultiGraphPartition) -> list[Cause]:
    """Every graph's causes, one per change (the same setting fixes it in every graph); members
    are named across graphs ('g2/add_3')."""
    by_change: dict[str, Cause] = {}
    for k, found in enumerate(per_graph(_causes, part)):
        for c in found:
            members = [f"g{k}/{m}" for m in c.members]
            known = by_change.get(c.change)
            if known is None:
                by_change[c.change] = Cause(c.op, c.kind, c.nodes, c.change, c.config, c.note, members,
                                            c.support, c.dropped, c.block_size,
                                            {f"g{k}/{m}": e for m, e in c.shared.items()})
                continue
            known.nodes += c.nodes
            known.members += members
            known.shared.update({f"g{k}/{m}": e for m, e in c.shared.items()})
            if known.op != c.op and c.kind == DEMOTED_KIND:  # each graph names its blocks' ops
                known.op = f"blocks of {c.block_size}"
    for c in by_change.values():
        if c.kind == FORCED:  # the nodes it forces with other entries, in every graph
            c.note = forced_note(next(iter(c.dropped)), c.shared)
    return list(by_change.values())


def _causes(p: Partition) -> list[Cause]:
    """find_causes of one graph; a saved partition's op names are as saved: its what-if settings
    never look them up here."""
    with names_as_saved() if p.graph is None else contextlib.nullcontext():
        return find_causes(p)


def _quietly(run: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():  # the user saw the current setting's warnings already
        warnings.simplefilter("ignore")
        return run()


def break_row(part: MultiGraphPartition, b: GraphBreak, base: dict) -> dict:
    """A graph break's row: what removing it gives (see the module's docstring)."""
    k = b.after_graph
    n = len(part.graphs)
    hints = "; ".join(f"Hint: {h}" for h in b.hints)
    where = f" at {b.location}" if b.location else ""
    code = f" ({b.code})" if b.code else ""
    out = {"graph": _names([k, k + 1] if 0 <= k < n - 1 else [max(k, 0)]) if n else "", "op": b.short,
           "kind": BREAK_KIND, "nodes": 0, "subgraphs_if_fixed": None, "subgraphs_saved": None,
           "accelerated_ops_gained": None, "verdict": None, "change": f"remove the graph break{where}{code}",
           "note": hints, "config": None, "_cause": None}
    alone = (None if b.ended_graph and 0 <= k < n - 1 else
             "another graph break at the same place keeps the graphs apart" if b.ended_graph is False and 0 <= k
             else "no graph runs before it" if k < 0 else "no graph runs after it")
    if n == 0:  # the model runs entirely in Python: this break is why, and no count says what removing it gives
        out["note"] = join_notes("nothing captured: the whole forward runs in Python, because of this break; "
                                 "removing it lets dynamo capture the frame", hints)
        return out
    if alone is not None:
        out["note"] = join_notes(f"removing it alone joins no graphs: {alone}", hints)
        return counted(out, base, base)
    first, second = part.graphs[k], part.graphs[k + 1]
    if first.graph is None or second.graph is None or getattr(part, "capture", None) is None:
        out["note"] = join_notes(hints, "a saved partition: no graphs to join")
        return out
    sources = part.capture.graphs[k + 1].sources
    try:
        joined = _quietly(lambda: partition_graph(
            join(first.graph, second.graph, sources, k), derive(part.config, {"engine": part.engine})))
    except HiervizError as exc:
        out["note"] = join_notes(hints, f"cannot partition the joined graphs: {str(exc).splitlines()[0]}")
        return out
    s = joined.stats
    pair = [first.stats, second.stats]
    after = {"subgraphs": base["subgraphs"] - sum(p["subgraphs"] for p in pair) + s["subgraphs"],
             "accelerated_ops": (base["accelerated_ops"] - sum(p["accelerated_ops"] for p in pair)
                                 + s["accelerated_ops"])}
    wired = wired_inputs(second.graph, sources, k)
    out["note"] = join_notes(f"g{k} and g{k + 1} joined: {wired} input(s) of g{k + 1} read g{k}'s outputs", hints)
    return counted(out, base, after)


def multi_blockers_table(part: MultiGraphPartition, *, kind: Any = None, top: int = DEFAULT_TOP) -> "pd.DataFrame":
    """The blockers DataFrame of a MultiGraphPartition (see the module's docstring)."""
    import pandas as pd

    kinds = parse_kinds(kind, MULTI_KINDS)
    check_top(top)
    causes = [c for c in merged_causes(part) if kinds is None or c.kind in kinds]
    base = part.stats
    live = all(p.graph is not None for p in part.graphs) and getattr(part, "capture", None) is not None
    fixed = (lambda cfg: _quietly(lambda: part.repartitioned(cfg))) if live else None
    breaks = [break_row(part, b, base) for b in part.breaks] if kinds is None or BREAK_KIND in kinds else []

    def graphs_of(r: dict, cause: Cause | None) -> None:
        if cause is not None:  # an op cause, or the combined row: the graphs of its nodes (those it forces
            # with other entries too: its note counts them)
            r["graph"] = _names([int(m.split("/", 1)[0][1:]) for m in [*cause.members, *cause.shared]])

    rows = ranked_rows(causes, base, part.config, fixed, top, breaks, annotate=graphs_of)
    return pd.DataFrame(rows, columns=list(MULTI_COLUMNS))


def multi_blockers_of(part: MultiGraphPartition, *, measure: bool = False, device: Any = None, kind: Any = None,
                      top: int = DEFAULT_TOP) -> "pd.DataFrame":
    """`MultiGraphPartition.blockers()`: the table, the default one (kind None, top DEFAULT_TOP)
    made once and kept beside `part` (known_tables.py); measuring is refused (it is per graph)."""
    if measure or device is not None:
        refuse_measure()
    default = kind is None and top == DEFAULT_TOP
    known = known_table(part) if default else None
    if known is None:
        made = multi_blockers_table(part, kind=kind, top=top)
        known = keep_table(part, made) if default else made
    return known.copy()


def refuse_measure() -> None:
    """blockers(measure=True) times one graph's what-ifs; across graphs it is not built."""
    raise ConfigError("blockers(measure=True) times what-ifs of one graph: call part.graphs[k].blockers(measure=True, "
                      "example_inputs=part.capture.graphs[k].example_inputs) for graph k; across graphs the table's "
                      "counts come from re-partitioning.")


__all__ = ["multi_blockers_of", "multi_blockers_table", "merged_causes", "break_row", "refuse_measure", "BREAK_KIND",
           "MULTI_KINDS", "MULTI_COLUMNS"]
