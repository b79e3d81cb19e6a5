"""Saved graph-by-graph partitions: `part.save("x.json")` of a MultiGraphPartition
(hv.partition(..., ir="torch_compile")) and what `hv.load_partition` reads back from it.

The document (format `hierviz-graphs/1`, docs/saved-partitions.md) holds the settings, the
engine, the totals, each graph's source (function, file, line, calls, ops, inputs, outputs)
and its partition as a whole saved-partition document (saved_partition.py's `hierviz-partition/2`), and
the graph breaks with dynamo's text. A loaded one is a `SavedMultiGraphPartition`: every graph a
`SavedPartition`, so its report, render, hv.check and hv.diff work; compiling, measuring or
re-partitioning it needs the model and raises SavedPartitionError. Op names are read as saved,
never looked up in the running process (saved_partition.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hierviz.errors import SavedPartitionError
from hierviz.capturing.by_graph.dynamo_graph import NEW_FRAME, RESUMED, StartKind
from hierviz.capturing.by_graph.graph_break import GraphBreak
from hierviz.capturing.by_graph.graph_source import GraphSource
from hierviz.capturing.by_graph.graph_value import GraphValue
from hierviz.capturing.by_graph.graphs_and_breaks import GraphsAndBreaks
from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition
from hierviz.partitioner.by_graph.per_graph import per_graph
from hierviz.partitioner.saved.old_field import OldField, unknown_starts
from hierviz.partitioner.saved.saved_partition import (SavedPartition, checked_document, config_of, document,
                                                       format_version, traced_for)
from hierviz.version import __version__

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

FORMAT = "hierviz-graphs"
VERSION = 1


def _value(v: GraphValue) -> dict:
    return {"name": v.name, "shape": list(v.shape), "dtype": v.dtype}


def document_graphs(mp: MultiGraphPartition) -> dict:
    """The graph-by-graph partition as a JSON-safe dict (docs/saved-partitions.md)."""
    graphs = [{"index": g.index, "function": g.function, "file": g.file, "line": g.line, "calls": g.calls,
               "ops": list(g.ops), "inputs": [_value(v) for v in g.inputs], "outputs": [_value(v) for v in g.outputs],
               "starts": getattr(g, "starts", ""), "start_kind": getattr(g, "start_kind", ""),
               "fell_back": getattr(g, "fell_back", ""), "partition": saved}
              for g, saved in zip(mp.capture.graphs, per_graph(document, mp))]
    breaks = [{**asdict(b), "hints": list(b.hints), "stack": list(b.stack)} for b in mp.breaks]
    return {"format": f"{FORMAT}/{VERSION}", "hierviz_version": __version__, "model": mp.capture.model,
            "engine": mp.engine, "config": mp.config.to_dict(), "notes": list(mp.notes), "stats": mp.stats,
            "traced_for": None if mp.traced_for is None else list(mp.traced_for),
            "graphs": graphs, "breaks": breaks}


def is_graphs_document(doc: Any) -> bool:
    """Whether a saved document is a graph-by-graph one."""
    return isinstance(doc, dict) and isinstance(doc.get("format"), str) and doc["format"].startswith(FORMAT + "/")


@dataclass(frozen=True)
class SavedGraph(GraphSource):
    """One graph of a saved graph-by-graph partition: its source as DynamoGraph says it,
    without the graph itself (`graph` is None)."""

    graph: None = None
    starts: str = ""  # why the graph starts where it does, as the capture said (DynamoGraph.starts)
    start_kind: StartKind = ""  # DynamoGraph.start_kind ('' in a file saved before it was kept)
    fell_back: str = ""  # why Torch-TensorRT's backend runs it eagerly, as the capture said (DynamoGraph.fell_back)


@dataclass(frozen=True, eq=False)
class SavedCapture(GraphsAndBreaks[SavedGraph]):
    """A saved partition's capture: the graphs' sources and the breaks (no graph, no model)."""


def _read_graphs(doc: dict, path: Path) -> tuple[SavedCapture, list[SavedPartition]]:
    where = repr(str(path))
    format_version(doc, where, FORMAT, VERSION)
    missing = [k for k in ("engine", "config", "stats", "graphs", "breaks") if k not in doc]
    if missing:
        raise SavedPartitionError(f"{where} is not a complete saved partition: {', '.join(missing)} missing.")
    try:
        breaks = tuple(GraphBreak(**{**b, "hints": tuple(b["hints"]), "stack": tuple(b["stack"])})
                       for b in doc["breaks"])
        ended = {b.after_graph: b for b in breaks if b.ended_graph}
        graphs, parts = [], []
        for k, g in enumerate(doc["graphs"]):
            values = [tuple(GraphValue(v["name"], tuple(v["shape"]), v["dtype"]) for v in g[key])
                      for key in ("inputs", "outputs")]
            graphs.append(SavedGraph(index=k, inputs=values[0], outputs=values[1], ops=tuple(g["ops"]),
                                     function=str(g["function"]), file=str(g["file"]), line=int(g["line"]),
                                     calls=int(g["calls"]), ended_by=ended.get(k), starts=str(g.get("starts", "")),
                                     start_kind=_start_kind(g.get("start_kind", "")),
                                     fell_back=str(g.get("fell_back", ""))))
            part = SavedPartition(checked_document(g["partition"], where), path)
            part.by_graph = True
            part.backend_failed = graphs[-1].fell_back
            parts.append(part)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise SavedPartitionError(f"{where} is a damaged saved partition ({type(exc).__name__}: {exc}); "
                                  "save it again.") from None
    _check_counts(doc, len(graphs), len(breaks), where)
    return SavedCapture(tuple(graphs), breaks, str(doc.get("model", "model"))), parts


def _start_kind(value: Any) -> StartKind:
    """A saved DynamoGraph.start_kind; ValueError (a damaged file) for any other value."""
    for kind in ("", RESUMED, NEW_FRAME):
        if value == kind:
            return kind
    raise ValueError(f"start_kind {value!r} is not 'resumed', 'new-frame' or ''")


def _check_counts(doc: dict, graphs: int, breaks: int, where: str) -> None:
    """SavedPartitionError when the saved totals disagree with the graphs and breaks saved."""
    stats = doc.get("stats") or {}
    for name, have in (("graphs", graphs), ("graph_breaks", breaks)):
        said = stats.get(name)
        if said is not None and said != have:
            raise SavedPartitionError(f"{where} is inconsistent: its stats say {said} {name.replace('_', ' ')}, but it "
                                      f"holds {have}; it was changed after it was saved: save it again.")


def _forced_across(parts: list[SavedPartition]) -> tuple[OldField, ...]:
    """The graphs' forced_from OldFields as one, its nodes named across graphs ('g1/mul')."""
    lacked = [(k, f) for k, p in enumerate(parts) for f in p.old_fields if f.field == "forced_from"]
    if not lacked:
        return ()
    return (OldField("forced_from", tuple(f"g{k}/{n}" for k, f in lacked for n in f.inferred),
                     tuple(f"g{k}/{n}" for k, f in lacked for n in f.unknown)),)


class SavedMultiGraphPartition(MultiGraphPartition):
    """A graph-by-graph partition read back from its saved JSON: `.graphs` are SavedPartitions,
    `.capture` the graphs' sources and breaks (no graph); `.saved_from` the file; `.old_fields`
    the fields a file saved by an older hierviz lacks (OldField): start_kind, said in a note, and
    each graph's forced_from with its nodes named 'g1/<node>' (each graph's report says it)."""

    def __init__(self, doc: dict, path: Path) -> None:
        capture, parts = _read_graphs(doc, path)
        config, note = config_of(doc["config"], repr(str(path)))
        starts = unknown_starts(doc["graphs"])
        notes = tuple(doc.get("notes", ())) + ((note,) if note else ()) + ((starts.note(),) if starts else ())
        self.old_fields: tuple[OldField, ...] = ((starts,) if starts else ()) + _forced_across(parts)
        # a SavedCapture and SavedPartitions stand in for the DynamoCapture and Partitions: no graph to run
        self._setup(capture, parts, config, notes)  # type: ignore[arg-type]  # saved stand-ins (above)
        self.traced_for = traced_for(doc)
        self.engine = str(doc["engine"])
        self.saved_from = path
        self.versions = dict(doc["graphs"][0]["partition"].get("versions") or {}) if doc["graphs"] else {}

    def _refuse(self, what: str) -> SavedPartitionError:
        return SavedPartitionError(f"{what} needs the model, and a partition loaded from {str(self.saved_from)!r} "
                                   "has none: partition it again (hv.partition(model, inputs, config, "
                                   "ir='torch_compile')) to compile or measure it.")

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("compile()")

    def build(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("build()")

    def recommend(self, sizes: Any = None) -> "pd.DataFrame":
        raise self._refuse("recommend()")

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", saved {self.saved_from}>"


__all__ = ["document_graphs", "is_graphs_document", "SavedMultiGraphPartition", "SavedCapture", "SavedGraph",
           "FORMAT", "VERSION"]
