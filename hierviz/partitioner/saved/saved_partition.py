"""Saved partitions: the JSON document `part.save("x.json")` writes, and the `SavedPartition`
it is read back as.

`hv.load_partition` (load.py) reads both this and a graph-by-graph document (saved_graphs.py).
The document (format `hierviz-partition/2`, described in docs/saved-partitions.md) holds the
config, the engine, the stats, every subgraph and the per-node record, and the torch,
torch_tensorrt and hierviz versions it was made with. A loaded partition answers everything
that reads the record (report, render, hv.check, hv.diff, blockers with counts only) and
refuses what needs the graph (compile, measure, the split module) with one SavedPartitionError.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from hierviz.settings.config import Config, derive
from hierviz.errors import ConfigError, SavedPartitionError
from hierviz.foundation.opnames import names_as_saved
from hierviz.capturing.provenance import source_op
from hierviz.partitioner.record import NodeTable, TensorSpec
from hierviz.partitioner.saved.document_check import check_fields
from hierviz.partitioner.saved.old_field import OldField, infer_forced_from
from hierviz.partitioner.partition_result import Partition
from hierviz.partitioner.reasons import TORCH_EXECUTED
from hierviz.partitioner.subgraph import Subgraph
from hierviz.version import __version__

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

FORMAT = "hierviz-partition"
VERSION = 2  # 1: written by hierviz before load_partition existed (no per-node module stacks)


def _spec(s: TensorSpec) -> dict:
    return {"name": s.name, "shape": None if s.shape is None else list(s.shape), "dtype": s.dtype, "count": s.count}


def document(p: Partition) -> dict:
    """The partition as a JSON-safe dict (see docs/saved-partitions.md)."""
    t = p.records
    demoted = p.demotions
    sources = forced_sources(p)
    nodes = []
    for i in range(len(t)):
        name = t.name[i]
        nodes.append({
            "name": name, "kind": t.kind[i], "target": t.target[i], "op": t.op[i], "backend": t.backend[i],
            "tag": t.tag[i], "eligible_backend": t.eligible_backend[i], "reason_code": t.reason_code[i],
            "reason": t.reason(i), "short_reason": t.short_reason(i), "inputs": [t.name[a] for a in t.inputs[i]],
            "shape": None if (shape := t.shape[i]) is None else list(shape), "dtype": t.dtype[i], "count": t.count[i],
            "compute": t.compute[i], "module_path": t.module_path[i], "module_class": t.module_class[i],
            "module_stack": [list(m) for m in t.module_stack[i]],
            "demoted": list(demoted[name]) if name in demoted else None, "forced_from": t.forced_from[i],
            "source_op": sources[i],
        })
    subgraphs = [{"tag": sg.tag, "backend": sg.backend, "is_acc": sg.is_acc, "compute_ops": sg.compute_ops,
                  "nodes": list(sg.nodes), "inputs": [_spec(x) for x in sg.inputs],
                  "outputs": [_spec(x) for x in sg.outputs]} for sg in p.subgraphs]
    return {"format": f"{FORMAT}/{VERSION}", "hierviz_version": __version__, "versions": p.versions,
            "engine": p.engine, "config": p.config.to_dict(), "notes": list(getattr(p, "notes", ())),
            "traced_for": None if p.traced_for is None else list(p.traced_for),
            "stats": p.stats, "subgraphs": subgraphs, "nodes": nodes}


def forced_sources(p: Partition) -> tuple[str | None, ...]:
    """Per node, the op of the exported graph a node forced into PyTorch came from (None for any
    other node, or one that keeps no provenance): with its op, what says which torch_executed_ops
    entries force it, a plain entry and an hv.source_ops entry both where both name it (forced_from
    names the one the partitioner took). A saved partition's are as saved; a file saved before
    hierviz kept them has forced_from's."""
    if isinstance(p, SavedPartition):
        return p._sources
    codes = p.records.reason_code
    return tuple(source_op(n) if c == TORCH_EXECUTED else None for n, c in zip(p.graph.graph.nodes, codes))


def read_document(path: Path) -> Any:
    """The JSON document in `path`; SavedPartitionError when there is none."""
    where = f"{str(path)!r}"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SavedPartitionError(f"no file {where}: save a partition first with part.save('x.json').") from None
    except (OSError, ValueError) as exc:  # unreadable; a NUL in the name; not UTF-8; not JSON
        raise SavedPartitionError(f"{where} is not a saved partition ({type(exc).__name__}: "
                                  f"{str(exc).splitlines()[0]}); write one with part.save('x.json').") from None


def format_version(doc: dict, where: str, name: str, newest: int) -> int:
    """The version of a saved document's "format", "<name>/<version>" (`where`: the file, for
    the message); SavedPartitionError when it cannot be read or is newer than `newest`."""
    fmt = doc["format"]
    try:
        version = int(fmt.split("/", 1)[1])
    except ValueError:
        raise SavedPartitionError(f"{where} has an unknown format {fmt!r}; "
                                  f"this hierviz reads {name}/{newest}.") from None
    if version > newest:
        raise SavedPartitionError(f"{where} was saved by a newer hierviz ({doc.get('hierviz_version', '?')}, "
                                  f"format {name}/{version}); this hierviz {__version__} reads format "
                                  f"{name}/{newest}: upgrade hierviz to load it.")
    return version


def checked_document(doc: Any, where: str) -> dict:
    """`doc` when it is a saved partition this hierviz reads (format, version, its parts, each
    field checked: document_check.py), else the SavedPartitionError saying why not (`where`: the
    file, for the message)."""
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if not isinstance(fmt, str) or not fmt.startswith(FORMAT + "/"):
        raise SavedPartitionError(f"{where} is not a saved partition (no \"format\": \"{FORMAT}/{VERSION}\"); "
                                  "write one with part.save('x.json').")
    version = format_version(doc, where, FORMAT, VERSION)
    if version < VERSION:
        raise SavedPartitionError(f"{where} is format {version}, from a hierviz that did not save the per-node "
                                  f"record in full; partition the model again and save it with this hierviz.")
    missing = [k for k in ("engine", "config", "stats", "subgraphs", "nodes") if k not in doc]
    if missing:
        raise SavedPartitionError(f"{where} is not a complete saved partition: {', '.join(missing)} missing.")
    check_fields(doc, where)
    return doc


def config_of(d: dict, where: str) -> tuple[Config, str]:
    """The saved config, and a note when part of it cannot be rebuilt here. Its op names are
    read as saved (names_as_saved), never looked up in this process."""
    try:
        with names_as_saved():
            return Config.from_dict(d), ""
    except ConfigError as exc:
        try:
            with names_as_saved():
                return Config.from_dict({k: v for k, v in d.items() if k != "support"}), (
                    f"its support setting cannot be rebuilt here ({str(exc).splitlines()[0]}); shown with the defaults")
        except ConfigError as exc2:
            raise SavedPartitionError(f"{where}: its config cannot be read here ({str(exc2).splitlines()[0]}); "
                                      "save the partition again (part.save('x.json')).") from None


def _saved_fact(read: Callable[["SavedPartition"], Any]) -> Any:
    """A cached property read from the saved document: a damaged document (a key missing, a
    value of the wrong kind) is a SavedPartitionError, not the traceback of reading it."""
    @functools.wraps(read)
    def checked(self: "SavedPartition") -> Any:
        try:
            return read(self)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise SavedPartitionError(f"{str(self.saved_from)!r} is a damaged saved partition "
                                      f"({type(exc).__name__}: {exc}); save it again.") from None
    return functools.cached_property(checked)


def traced_for(doc: dict) -> tuple[str, str] | None:
    """The (device, the report's line on it) a saved document records; None for a file saved before it did."""
    saved = doc.get("traced_for")
    if isinstance(saved, list) and len(saved) == 2 and all(isinstance(x, str) for x in saved):
        return saved[0], saved[1]
    return None


class SavedPartition(Partition):
    """A partition read back from its saved JSON: the record, subgraphs and stats as they were
    saved (`.versions` says what made it, `.saved_from` the file); no graph. `.old_fields`: the
    fields a file saved by an older hierviz lacks, inferred or not (OldField; a note each)."""

    def __init__(self, doc: dict, path: Path) -> None:  # not super().__init__: there is no engine result
        config, note = config_of(doc["config"], repr(str(path)))
        self.graph = None  # type: ignore[assignment]  # no graph saved: only a saved partition has None
        self.engine = str(doc["engine"])
        # the engine is a setting: a file saved before it was one says it beside the config
        self.config = (config if config.engine == self.engine
                       else derive(config, {"engine": self.engine}, together=False))
        try:
            self._forced_from, lacked = infer_forced_from(doc["nodes"], self.config.torch_executed_ops)
        except (KeyError, TypeError) as exc:
            raise SavedPartitionError(f"{str(path)!r} is a damaged saved partition ({type(exc).__name__}: {exc}); "
                                      "save it again.") from None
        self._sources = tuple(n.get("source_op", f) for n, f in zip(doc["nodes"], self._forced_from))
        self.old_fields: tuple[OldField, ...] = (lacked,) if lacked else ()
        self.notes = (tuple(doc.get("notes", ())) + ((note,) if note else ())
                      + tuple(f.note(self.config.torch_executed_ops) for f in self.old_fields))
        self.traced_for = traced_for(doc)
        self.saved_from = path
        self.versions = dict(doc.get("versions") or {})
        self._doc = doc
        self._module = None

    # ------------------------------------------------------------------ the saved facts
    @_saved_fact
    def records(self) -> NodeTable:
        return _table(self._doc, self._forced_from)

    @_saved_fact
    def subgraphs(self) -> list[Subgraph]:
        def spec(d: dict) -> TensorSpec:
            return TensorSpec(d["name"], None if d["shape"] is None else tuple(d["shape"]), d["dtype"], d.get("count"))

        return [Subgraph(tag=s["tag"], backend=s["backend"], is_acc=bool(s["is_acc"]), nodes=tuple(s["nodes"]),
                         inputs=tuple(spec(x) for x in s["inputs"]), outputs=tuple(spec(x) for x in s["outputs"]),
                         compute_ops=int(s["compute_ops"])) for s in self._doc["subgraphs"]]

    @_saved_fact
    def stats(self) -> dict:
        return dict(self._doc["stats"])

    @_saved_fact
    def demotions(self) -> dict[str, tuple[str, int]]:
        return {n["name"]: (n["demoted"][0], int(n["demoted"][1])) for n in self._doc["nodes"] if n.get("demoted")}

    def _pos(self, node_name: str) -> int:
        pos = self.records.position.get(node_name) if isinstance(node_name, str) else None
        if pos is None:
            raise ConfigError(f"no node named {node_name!r} in this saved partition; see .nodes().")
        return pos

    def backend_of(self, node_name: str) -> str:
        return self.records.backend[self._pos(node_name)]

    def tag_of(self, node_name: str) -> str | None:
        return self.records.tag[self._pos(node_name)]

    # ------------------------------------------------------------------ what needs the graph
    by_graph = False  # a graph of a graph-by-graph partition (ir="torch_compile")

    def _refuse(self, what: str) -> SavedPartitionError:
        ir = ", ir='torch_compile'" if self.by_graph else ""
        return SavedPartitionError(f"{what} needs the model's graph, and a partition loaded from "
                                   f"{str(self.saved_from)!r} has none: partition the model again "
                                   f"(hv.partition(model, inputs, config{ir})) to compile or measure it.")

    @property
    def module(self) -> Any:
        raise self._refuse("the split module")

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("compile()")

    def build(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("build()")

    def subgraph_counts(self, min_block_size: int) -> dict[str, int]:
        raise self._refuse("re-partitioning at another min_block_size")

    def recommend(self, sizes: Iterable[int] | None = None) -> "pd.DataFrame":
        raise self._refuse("recommend()")

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", saved {self.saved_from}>"


def _table(doc: dict, forced_from: tuple[str | None, ...]) -> NodeTable:
    nodes = doc["nodes"]
    position = {n["name"]: i for i, n in enumerate(nodes)}
    inputs = tuple(tuple(position[a] for a in n["inputs"]) for n in nodes)
    users: list[list[int]] = [[] for _ in nodes]
    for i, ins in enumerate(inputs):
        for a in ins:
            users[a].append(i)
    tags = [s["tag"] for s in doc["subgraphs"]]
    sub_of = {tag: k for k, tag in enumerate(tags)}
    long_reason = [n["reason"] for n in nodes]
    short_reason = [n["short_reason"] for n in nodes]
    return NodeTable(
        name=tuple(n["name"] for n in nodes), op=tuple(n["op"] for n in nodes), kind=tuple(n["kind"] for n in nodes),
        eligible_backend=tuple(n["eligible_backend"] for n in nodes), backend=tuple(n["backend"] for n in nodes),
        subgraph=tuple(-1 if n["tag"] is None else sub_of[n["tag"]] for n in nodes),
        reason_code=tuple(n["reason_code"] for n in nodes), dtype=tuple(n["dtype"] for n in nodes),
        shape=tuple(None if n["shape"] is None else tuple(n["shape"]) for n in nodes),
        count=tuple(n["count"] for n in nodes),
        module_stack=tuple(tuple((str(p), str(c)) for p, c in n["module_stack"]) for n in nodes),
        inputs=inputs, users=tuple(tuple(u) for u in users), compute=tuple(bool(n["compute"]) for n in nodes),
        subgraph_tag=tuple(tags), subgraph_backend=tuple(s["backend"] for s in doc["subgraphs"]),
        subgraph_is_acc=tuple(bool(s["is_acc"]) for s in doc["subgraphs"]),
        subgraph_members=tuple(tuple(sorted(position[m] for m in s["nodes"])) for s in doc["subgraphs"]),
        target=tuple(n["target"] for n in nodes),
        forced_from=forced_from,  # saved since it was a column; inferred for an older file (old_field.py)
        explain=lambda i, short: short_reason[i] if short else long_reason[i],
    )


__all__ = ["SavedPartition", "document", "forced_sources", "read_document", "checked_document", "config_of", "FORMAT",
           "VERSION"]
