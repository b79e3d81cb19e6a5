"""A partition as a graph JSON for Google's Model Explorer (`pip install hierviz[model-explorer]`).

For graphs too large for graphviz to be pleasant: Model Explorer lays out tens of thousands of
nodes in the browser, folds them into layers by namespace and overlays per-node numbers.

    p.save("part.json", format="model_explorer")        # then: model-explorer part.json
    p.save("part.json", format="model_explorer", measurement=m)   # + part.latency.json

The document is a graph collection, `{"label": ..., "graphs": [...]}`, built from Model
Explorer's own typed schema (`model_explorer.graph_builder`; the node data from its
`node_data_builder`) and written as its dataclasses' fields, those left None dropped (read by
its built-in JSON loader). So the export needs the optional extra; without it, saving raises a
RenderError that says `pip install "hierviz[model-explorer]"`. Two graphs:

- `modules`: nodes grouped by the model's module hierarchy (`nn_module_stack`), each layer
  named `<Class>_<attribute>` as Model Explorer's own PyTorch adapter names them;
- `subgraphs`: the same nodes grouped by subgraph first (`_run_on_acc_tensorrt_0/...`).

Each node carries its backend, subgraph tag, reason, op, module, dtype and shape as attributes
and is filled with its backend's color; subgraph layers get their backend's color too.
Overlays come through the one `Overlay` interface (overlays.py) the diagrams read: each adds
its node attributes and, beside the graph, a node-data file (Model Explorer's "per-node data"
overlay) of its per-node values. With a measurement, each node gets its subgraph's time
(`subgraph_ms`, `subgraph_share`) and `part.latency.json` holds each subgraph's median time
split over its compute ops by estimated work, so a layer's sum is its time; with `numerics=`,
`isolated_err` / `isolated_ratio` and `part.numerics.json`; with `against=`, `against_change`
/ `against_backend` / `against_tag` and `part.diff.json`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hierviz.drawing import palette
from hierviz.drawing.context import make_overlays
from hierviz.drawing.overlays import Overlay, fell_back, ran_on
from hierviz.drawing.text import op_short
from hierviz.errors import RenderError
from hierviz.foundation.gcpause import gc_paused
from hierviz.partitioner import FALLBACK
from hierviz.partitioner.record import short_dtype

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.record import NodeTable
    from hierviz.latency.measurement import Measurement
    from hierviz.partitioner.partition_result import Partition

INPUTS_NAMESPACE = "inputs"
GRAPH_IDS = ("modules", "subgraphs")
NODE_DATA_SUFFIX = ".latency.json"


def _layer(path: str, cls: str) -> str:
    """One namespace level: 'LlamaAttention_self_attn' (no '/', which separates levels)."""
    return f"{cls}_{path.rsplit('.', 1)[-1]}".replace("/", "_")


def _module_namespace(t: NodeTable, i: int) -> str:
    if t.kind[i] == "placeholder":
        return INPUTS_NAMESPACE
    return "/".join(_layer(path, cls.rsplit(".", 1)[-1]) for path, cls in t.module_stack[i] if path)


def _drop_shared_prefix(namespaces: list[str]) -> list[str]:
    """Namespaces without the levels every module node shares (wrappers such as a model
    inside an output adapter), so Model Explorer opens on the model's own top modules."""
    inside = [ns.split("/") for ns in namespaces if ns and ns != INPUTS_NAMESPACE]
    if not inside:
        return namespaces
    shared = 0
    first = inside[0]
    while shared < len(first) - 1 and all(len(x) > shared + 1 and x[shared] == first[shared] for x in inside):
        shared += 1
    if not shared:
        return namespaces
    return [ns if ns == INPUTS_NAMESPACE or not ns else "/".join(ns.split("/")[shared:]) for ns in namespaces]


def _label(t: NodeTable, i: int) -> str:
    """What Model Explorer writes on the node: the op's short name, or the input's name."""
    if t.kind[i] in ("placeholder", "output"):
        return t.name[i]
    return op_short(t.op[i]) or t.name[i]


def _shape_text(shape: Any) -> str:
    if shape is None or (isinstance(shape, float) and math.isnan(shape)):
        return ""
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _builders() -> tuple[Any, Any]:
    """Model Explorer's own typed schema (`graph_builder`, `node_data_builder`): the export is
    built from it, so it needs the optional extra."""
    try:
        from model_explorer import graph_builder, node_data_builder
    except ImportError as exc:
        raise RenderError("the Model Explorer export is written with Model Explorer's own graph schema: "
                          "pip install \"hierviz[model-explorer]\" (make setup installs it); or save another "
                          f"format (.svg, .html, .json) ({type(exc).__name__}: {exc})") from exc
    return graph_builder, node_data_builder


_SCALARS = frozenset({str, int, float, bool})


def _plain(obj: Any, done: dict[int, Any]) -> Any:
    """A graph_builder / node_data_builder value as JSON-ready dicts and lists, its fields left
    None dropped (as Model Explorer's node_data_builder writes them). `done` keeps what is already
    converted by id, so a part both graphs share (a node's attributes, a backend's style) is
    converted once; the caller keeps the objects alive while `done` lives."""
    if type(obj) in _SCALARS:
        return obj
    out = done.get(id(obj))
    if out is not None:
        return out
    if isinstance(obj, list):
        out = [x if type(x) in _SCALARS else _plain(x, done) for x in obj]
    elif isinstance(obj, dict):
        out = {k: v if type(v) in _SCALARS else _plain(v, done) for k, v in obj.items()}
    else:
        out = {k: v if type(v) in _SCALARS else _plain(v, done) for k, v in vars(obj).items() if v is not None}
    done[id(obj)] = out
    return out


def collection(label: str, graphs: list[dict]) -> dict:
    """A graph collection (`graph_builder.GraphCollection`) of graphs already made by
    `to_model_explorer` (the graph-by-graph export joins each dynamo graph's two)."""
    gb, _ = _builders()
    return {**_plain(gb.GraphCollection(label=label), {}), "graphs": graphs}


def to_model_explorer(p: "Partition", measurement: "Measurement | None" = None, *,
                      label: str | None = None, against: Any = None, numerics: Any = None) -> dict:
    """The partition as a Model Explorer graph collection `{"label", "graphs": [modules, subgraphs]}`,
    with each overlay's node attributes (`measurement=`, `numerics=`, `against=`, as `render`).
    Needs the model-explorer extra (RenderError without it)."""
    return _graphs(p, make_overlays(p, measurement, against, numerics), label)


def _graphs(p: "Partition", overlays: tuple[Overlay, ...], label: str | None) -> dict:
    with gc_paused():  # a few schema objects per node: the collector's scans would cost more
        return _build(p, overlays, label)


def _build(p: "Partition", overlays: tuple[Overlay, ...], label: str | None) -> dict:
    gb, _ = _builders()
    t = p.records
    backend_of_tag = {sg.tag: sg.backend for sg in p.subgraphs}  # what ran, below
    keep = [i for i in range(len(t)) if t.kind[i] != "get_attr"]
    kept = set(keep)
    weights = [sum(1 for a in t.inputs[i] if t.kind[a] == "get_attr") for i in range(len(t))]

    base = []
    styles: dict[str, Any] = {}  # one style per backend
    fell = fell_back(overlays, len(t.subgraph_tag))  # measured fallbacks: filled as PyTorch, which ran them
    ran = ran_on(t.backend, t.subgraph, fell, FALLBACK)
    for i in keep:
        backend = ran[i]
        attrs = [("op", t.op[i]), ("backend", t.backend[i]), ("tag", t.tag[i] or ""),
                 ("reason", t.reason(i)), ("eligible_backend", t.eligible_backend[i] or ""),
                 ("module", t.module_path[i]),
                 ("module_class", t.module_class[i]), ("dtype", short_dtype(t.spec[i].dtype)),
                 ("shape", _shape_text(t.spec[i].shape))]
        if weights[i]:
            attrs.append(("weights", str(weights[i])))
        for overlay in overlays:
            attrs += overlay.node_attrs(i)
        base.append(gb.GraphNode(
            id=t.name[i],
            label=_label(t, i),
            attrs=[gb.KeyValue(key=k, value=str(v)) for k, v in attrs],
            incomingEdges=[gb.IncomingEdge(sourceNodeId=t.name[a], sourceNodeOutputId="0", targetNodeInputId=str(n))
                           for n, a in enumerate(x for x in t.inputs[i] if x in kept)],
            outputsMetadata=[gb.MetadataItem(id="0", attrs=[
                gb.KeyValue(key="tensor_shape", value=t.spec[i].full()),
                gb.KeyValue(key="__tensor_tag", value=t.name[i])])],
            style=styles.get(backend) or styles.setdefault(backend, gb.GraphNodeStyle(
                backgroundColor=palette.fill(backend), borderColor=palette.border(backend),
                hoveredBorderColor=palette.color(backend))),
        ))

    backend_of_tag.update({t.subgraph_tag[k]: FALLBACK for k in fell})
    module_ns = _drop_shared_prefix([_module_namespace(t, i) for i in keep])
    collection = gb.GraphCollection(label=label or f"hierviz {p.config.label()}")
    for gid in GRAPH_IDS:
        nodes = []
        for node, i, ns in zip(base, keep, module_ns):
            if gid == "subgraphs" and (tag := t.tag[i]) is not None:
                ns = tag + ("/" + ns if ns else "")
            nodes.append(dataclasses.replace(node, namespace=ns))  # shares the node's parts
        configs = [gb.GroupNodeConfig(namespaceRegex=f"^{tag}$", backgroundColor=palette.cluster_fill(b),
                                      borderColor=palette.color(b)) for tag, b in backend_of_tag.items()] \
            if gid == "subgraphs" else []
        attributes = {"": {"config": p.config.label(), **{k: str(v) for k, v in p.stats.items()}}}
        collection.graphs.append(gb.Graph(id=gid, nodes=nodes, groupNodeConfigs=configs or None,
                                          groupNodeAttributes=attributes))
    done: dict[int, Any] = {}
    return _plain(collection, done)


def node_data(p: "Partition", measurement: "Measurement") -> dict:
    """Model Explorer node data (one entry per graph id) of a measurement: each subgraph's median
    ms split over its nodes by estimated work (as the time overlay does, drawing/work_estimate.py), with a
    white-to-red gradient."""
    if measurement is None:
        raise RenderError("node_data needs the hv.Measurement of this partition: hv.measure(p, inputs).")
    return overlay_node_data(p, make_overlays(p, measurement)[0])


def overlay_node_data(p: "Partition", overlay: Overlay) -> dict:
    """Model Explorer node data (one entry per graph id) of one overlay: its per-node values, as
    Model Explorer's `node_data_builder.GraphNodeData`."""
    _, ndb = _builders()
    t = p.records
    results = {}
    for i in range(len(t)):
        value = overlay.node_value(i)
        if value is not None:
            results[t.name[i]] = ndb.NodeDataResult(value=value)
    one = ndb.GraphNodeData(name=overlay.data_name, results=results,
                            gradient=[ndb.GradientItem(**stop) for stop in overlay.gradient])
    done: dict[int, Any] = {}
    return _plain(ndb.ModelNodeData(graphsData={gid: one for gid in GRAPH_IDS}), done)["graphsData"]


def save(p: "Partition", path: str | Path, measurement: "Measurement | None" = None, *,
         against: Any = None, numerics: Any = None) -> Path:
    """Write `to_model_explorer(p)` to `path` and, for each overlay (`measurement=`, `numerics=`,
    `against=`), its node data beside it (`<stem>.latency.json`, `.numerics.json`, `.diff.json`);
    returns the graph file's path."""
    path = Path(path)
    overlays = make_overlays(p, measurement, against, numerics)
    doc = _graphs(p, overlays, None)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, separators=(",", ":"), ensure_ascii=False), encoding="utf-8",
                        errors="backslashreplace")
        for overlay in overlays:
            node_data_path(path, overlay.data_suffix).write_text(json.dumps(overlay_node_data(p, overlay)),
                                                                 encoding="utf-8")
    except OSError as exc:
        raise RenderError(f"cannot save {str(path)!r}: {exc}") from exc
    return path


def node_data_path(path: str | Path, suffix: str = NODE_DATA_SUFFIX) -> Path:
    """Where `save` writes an overlay's node data beside the graph file `path`: `part.json` ->
    `part.latency.json` (the measurement's; `suffix` for another overlay's)."""
    path = Path(path)
    return path.with_name(path.stem + suffix)


__all__ = ["to_model_explorer", "collection", "node_data", "overlay_node_data", "save", "node_data_path", "GRAPH_IDS"]
