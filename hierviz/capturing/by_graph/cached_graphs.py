"""torch.compile's capture kept on disk: a model's DynamoCapture taken from the capture cache
(hierviz.capturing.disk_cache) when an entry under its key holds one and no source file dynamo
traced for it changed since, else captured graph by graph and kept; a capture packed into the
store's graphs, tensors and payload, and unpacked again."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch.fx import GraphModule

from hierviz.capturing import disk_cache as capture_cache
from hierviz.capturing.capture_key import capture_key, file_digest
from hierviz.capturing.by_graph.dynamo_capture import NOTES, DynamoCapture, DynamoGraph, capture_by_graph_break
from hierviz.capturing.forced_causal import FORCED_CAUSAL, forced_of
from hierviz.capturing.provenance import SOURCE_META
from hierviz.capturing.target_device import DEFAULT_TARGET, TARGET_META, target_key


def capture_graphs(model: torch.nn.Module, args: tuple, kwargs: dict | None, inputs_key: Any,
                   cache: bool, target: str = DEFAULT_TARGET) -> DynamoCapture:
    """torch.compile's capture of `model` (hierviz.capturing.by_graph.dynamo_capture), or the one kept on disk under
    the same key (hierviz.capturing.disk_cache: the model's code, weights, plain attributes, modes, the
    inputs' structure, shapes and dtypes, the device it is lowered for, the versions). An entry that
    cannot be read is a CacheWarning and a fresh capture; an entry traced from a source file that changed since (a
    function the forward calls, in a file the key does not cover) is stale: captured again, as
    its `notes` say. A capture that fails is not kept."""
    # SOURCE_META in the key: an entry kept before captures recorded each node's source op has none
    key = capture_key(model, ("torch_compile", SOURCE_META, inputs_key), None, target_key(target)) \
        if capture_cache.enabled(cache) else None
    store = capture_cache.CaptureStore() if key is not None else None
    notes: tuple[str, ...] = ()
    if store is not None and key is not None:
        entry = store.load_graphs(key, model)
        if store.not_read is not None:  # it names a custom op this process cannot register
            notes = (store.not_read,)
        if entry is not None:
            changed = [path for path, digest in dict(entry[2].get("files", {})).items()
                       if file_digest(path) != digest]
            if changed:
                notes = (f"capture: the cached capture was stale ({changed[0]} changed since"
                         + (f", and {len(changed) - 1} other file(s)" if len(changed) > 1 else "")
                         + "), so the model was captured again",)
            else:
                try:
                    return _unpacked(*entry, note=f"capture: from the disk cache ({store.folder})")
                except capture_cache.UNREADABLE as exc:  # an entry of another shape: captured again
                    store.unreadable(key, exc)
    captured = capture_by_graph_break(model, args, kwargs, target)
    if store is not None and key is not None:
        store.save_graphs(key, *_packed(captured), model)
    return dataclasses.replace(captured, notes=notes) if notes else captured


def _traced_files(cap: DynamoCapture) -> dict[str, str]:
    """The digest of every source file dynamo traced for the capture (each graph's frames,
    DynamoGraph.traced_files, and the breaks'): a change there makes the kept capture stale."""
    files: set[str] = set()
    for g in cap.graphs:
        files.add(g.file)
        files.update(g.traced_files)
    for b in cap.breaks:
        files.add(b.file)
        files.update(frame.rsplit(":", 1)[0] for frame in (f.rsplit(" in ", 1)[0] for f in b.stack))
    return {path: file_digest(path) for path in sorted(files) if path}


_OWN = ("graph", "example_inputs")  # a DynamoGraph's fields kept apart from the payload


def _packed(cap: DynamoCapture) -> tuple[list[GraphModule], dict[str, Any], dict]:
    """A DynamoCapture as (graphs, tensors, payload) for CaptureStore.save_graphs: each graph's
    first-call tensors named 'g<k>.<j>', everything else in the payload (one pickle, so the
    break a graph ended is the same object as the capture's)."""
    tensors: dict[str, Any] = {}
    graphs = []
    for g in cap.graphs:
        values = []
        for j, value in enumerate(g.example_inputs):
            if isinstance(value, torch.Tensor):
                tensors[f"g{g.index}.{j}"] = value
                values.append(("tensor", f"g{g.index}.{j}"))
            else:
                values.append(("value", value))
        fields = {f.name: getattr(g, f.name) for f in dataclasses.fields(g) if f.name not in _OWN}
        graphs.append({"fields": fields, "values": values,
                       "graph_meta": {NOTES: tuple(g.graph.meta.get(NOTES, ())),
                                      TARGET_META: g.graph.meta.get(TARGET_META, ()),
                                      FORCED_CAUSAL: forced_of(g.graph)}})
    payload = {"graphs": graphs, "breaks": cap.breaks, "model": cap.model, "input_specs": cap.input_specs,
               "files": _traced_files(cap), "traced_for": cap.traced_for}
    return [g.graph for g in cap.graphs], tensors, payload


def _unpacked(graphs: list[GraphModule], tensors: dict[str, Any], payload: dict, note: str) -> DynamoCapture:
    """The DynamoCapture `_packed` kept (ValueError when the entry does not fit together)."""
    if len(graphs) != len(payload["graphs"]):
        raise ValueError("the entry's graphs and their records differ in number")
    out: list[DynamoGraph] = []
    for gm, record in zip(graphs, payload["graphs"]):
        example = tuple(tensors[v] if kind == "tensor" else v for kind, v in record["values"])
        placeholders = sum(1 for n in gm.graph.nodes if n.op == "placeholder")
        if len(example) != placeholders:
            raise ValueError(f"graph {len(out)} has {placeholders} inputs and {len(example)} values")
        gm.meta.update({k: v for k, v in record["graph_meta"].items() if v})
        out.append(DynamoGraph(graph=gm, example_inputs=example, **record["fields"]))
    return DynamoCapture(tuple(out), tuple(payload["breaks"]), str(payload["model"]),
                         input_specs=tuple(payload["input_specs"]), notes=(note,),
                         traced_for=tuple(payload.get("traced_for", ())))


__all__ = ["capture_graphs"]
