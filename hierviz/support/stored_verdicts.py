"""TensorRT verdicts stored with a captured graph, so that a graph re-opened in a new process
partitions with the default support without importing torch_tensorrt (about 5 s: it pulls in
torch._inductor and torch._dynamo).

A record is plain data, kept in the graph's `meta[META]` and in its capture-cache entry:

- `stamp`: the record format, the installed Torch-TensorRT distribution (name and version, from
  its metadata), torch's and hierviz's versions;
- `support`: the support the verdicts answer for (`tensorrt(validate=True)`'s `to_dict()`);
- `digest`: the graph's digest (`digest`: every node's name, op, target, arguments and value
  spec; the same in every process for the same graph);
- `registry`: the converter registry's op names and its version (what `hv.support.tensorrt()`
  describes itself with);
- `verdicts`: node name -> (ok, code, why), for every callable node.

`held(graph, support)` answers the verdicts only while all of these still hold: another
install, torch or hierviz, another support, or a graph changed since its record was made
(checked by identity in this process, by digest otherwise) gets None, and the support asks the
validators as before. `hierviz.support.tensorrt_support` makes and reads records;
`hierviz.capturing.aten_capture` stores them.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.fx.node import map_arg

from hierviz import trt
from hierviz.foundation.digests import PartsDigest
from hierviz.foundation.opnames import qualname
from hierviz.version import __version__

FORMAT = "hierviz-trt-verdicts/2"  # /2: the graph digest is the digests module's SHA-256 (older records are not used)
META = "hierviz_trt_verdicts"  # the graph module's meta key of its record

# graph -> (its in-process fingerprint, the record it was checked against) once the record held
_CHECKED: "weakref.WeakKeyDictionary[torch.fx.Graph, tuple[int, int]]" = weakref.WeakKeyDictionary()
_REGISTRY: dict[str, Any] = {}  # the converter registry's names and version, from a record that held


def stamp() -> tuple:
    """What a record is valid for: its format, the installed Torch-TensorRT distribution (name,
    version, read from its metadata), torch's and hierviz's versions."""
    return (FORMAT, trt.installed_distribution(), torch.__version__, __version__)


def _spec(val: Any) -> Any:
    """A node value as the digest sees it: a tensor's shape, stride and dtype; plain values as
    they are; anything else None (what a graph read back from the capture cache holds)."""
    if isinstance(val, torch.Tensor):
        try:
            return ("tensor", tuple(int(d) for d in val.shape), tuple(int(s) for s in val.stride()), str(val.dtype))
        except (TypeError, RuntimeError):  # symbolic sizes
            return None
    if type(val) in (list, tuple):
        return tuple(_spec(v) for v in val)
    if isinstance(val, (int, float, bool, str)) or val is None:
        return val
    return None


def digest(graph: torch.fx.Graph) -> str:
    """The graph's digest, equal in every process for the same graph: each node's name, op,
    target, arguments (other nodes by name) and value spec."""
    h = PartsDigest()
    for n in graph.nodes:
        target = qualname(n.target) if callable(n.target) else str(n.target)
        args = map_arg((n.args, n.kwargs), lambda m: f"%{m.name}")
        h.add((n.name, n.op, target, args, _spec(n.meta.get("val"))))
    return h.hexdigest()


def _fingerprint(graph: torch.fx.Graph) -> int:
    """A cheap in-process check that a graph is unchanged: each node's name, op, target (by
    identity), arguments (other nodes by identity, constants by value) and value (by identity)."""
    parts = []
    for n in graph.nodes:
        try:
            args = hash((n.args, n.kwargs))
        except TypeError:  # an unhashable constant
            args = hash(repr((n.args, n.kwargs)))
        parts.append((n.name, n.op, id(n.target), args, id(n.meta.get("val"))))
    return hash(tuple(parts))


def make(graph: torch.fx.Graph, support: dict, names: frozenset[str], version: str,
         verdicts: dict[str, tuple[bool, str, str]]) -> dict[str, Any]:
    """The record of `verdicts` (node name -> (ok, code, why)) that `support` (its to_dict())
    gave on `graph`, with the converter registry's op `names` and `version`."""
    return {"stamp": stamp(), "support": dict(support), "digest": digest(graph),
            "registry": {"names": sorted(names), "version": version}, "verdicts": dict(verdicts)}


def attach(gm: torch.fx.GraphModule, record: dict[str, Any]) -> None:
    """Keep `record` with `gm` (its meta), checked against it now, so that its support finds it."""
    gm.meta[META] = record
    held(gm.graph, record.get("support"))


def _record_of(graph: torch.fx.Graph) -> dict[str, Any] | None:
    gm = graph.owning_module
    record = gm.meta.get(META) if gm is not None else None
    return record if isinstance(record, dict) else None


def held(graph: torch.fx.Graph, support: dict | None) -> dict[str, tuple[bool, str, str]] | None:
    """The verdicts stored with `graph` for `support` (its to_dict()), or None when it has
    none or they may be stale: made by another install, torch or hierviz, for another support,
    or on a graph that has changed since."""
    record = _record_of(graph)
    if record is None or record.get("stamp") != stamp() or record.get("support") != support:
        return None
    known = _CHECKED.get(graph)
    now = _fingerprint(graph)
    if known != (now, id(record)):
        if record.get("digest") != digest(graph):
            return None
        _CHECKED[graph] = (now, id(record))
    registry = record.get("registry") or {}
    if _REGISTRY.get("stamp") != record["stamp"] and "names" in registry:
        _REGISTRY.update(stamp=record["stamp"], names=frozenset(registry["names"]),
                         version=str(registry.get("version")))
    return record["verdicts"]


def registry() -> tuple[frozenset[str], str] | None:
    """The converter registry's (op names, version) from a record that held in this process
    (the same install: its stamp says so), or None before one did."""
    if _REGISTRY.get("stamp") != stamp():
        return None
    return _REGISTRY["names"], _REGISTRY["version"]


__all__ = ["FORMAT", "META", "stamp", "digest", "make", "attach", "held", "registry"]
