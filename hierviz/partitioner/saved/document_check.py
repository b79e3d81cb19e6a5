"""A saved partition's document checked field by field when it is loaded, so that nothing that
reads a loaded partition (report, render, hv.check, hv.diff, blockers) meets a value of the wrong
kind or a name that points nowhere: each field of the top level, of `stats`, of every subgraph and
every node has the kind docs/saved-partitions.md gives it, node and subgraph names are unique,
what refers to a node or a subgraph finds it, and the counts in `stats` agree with the subgraphs
and nodes saved. A file that breaks any of it is one SavedPartitionError naming the field.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from hierviz.errors import SavedPartitionError
from hierviz.foundation.opnames import CALLABLE_OPS
from hierviz.partitioner.reasons import DEMOTED, DEMOTED_NEXT, REASON_CODES

FX_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")
INT_STATS = ("nodes", "compute_ops", "supported_ops", "accelerated_ops", "subgraphs", "acc_subgraphs",
             "boundary_tensors")
SHARE_STATS = ("coverage", "accelerated_coverage")

Kind = tuple[str, Callable[[Any], bool]]  # (what it is, in words; whether a value is one)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _or_none(kind: Kind) -> Kind:
    return (f"{kind[0]} or null", lambda v: v is None or kind[1](v))


def _list_of(kind: Kind) -> Kind:
    return (f"list of {kind[0]}s", lambda v: isinstance(v, list) and all(kind[1](x) for x in v))


STR: Kind = ("string", lambda v: isinstance(v, str))
INT: Kind = ("whole number", lambda v: _int(v) and v >= 0)
NUMBER: Kind = ("number", lambda v: (_int(v) or isinstance(v, float)) and v >= 0)
BOOL: Kind = ("true or false", lambda v: isinstance(v, bool))
OBJECT: Kind = ("JSON object", lambda v: isinstance(v, dict))
LIST: Kind = ("list", lambda v: isinstance(v, list))
SIZE: Kind = ("size", lambda v: _int(v) or isinstance(v, str))
SHAPE = _or_none(_list_of(SIZE))
PAIR: Kind = ("[path, class] pair",
              lambda v: isinstance(v, list) and len(v) == 2 and all(isinstance(s, str) for s in v))
DEMOTION: Kind = ("[backend, size] pair", lambda v: isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)
                 and _int(v[1]))
REASON: Kind = ("reason code", lambda v: v in REASON_CODES)
FX_OP: Kind = ("fx op", lambda v: v in FX_OPS)
OP_NAME: Kind = ("qualified op name or ''", lambda v: isinstance(v, str) and (
    v == "" or "." in v and all(p.isidentifier() for p in v.split("."))))

SPEC = {"name": STR, "shape": SHAPE, "dtype": _or_none(STR), "count": _or_none(INT)}
SUBGRAPH = {"tag": STR, "backend": STR, "is_acc": BOOL, "compute_ops": INT, "nodes": _list_of(STR),
            "inputs": LIST, "outputs": LIST}
NODE = {"name": STR, "kind": FX_OP, "target": STR, "op": OP_NAME, "backend": STR, "tag": _or_none(STR),
        "eligible_backend": _or_none(STR), "reason_code": REASON, "reason": STR, "short_reason": STR,
        "inputs": _list_of(STR), "shape": SHAPE, "dtype": _or_none(STR), "count": _or_none(INT), "compute": BOOL,
        "module_path": STR, "module_class": STR, "module_stack": _list_of(PAIR), "demoted": _or_none(DEMOTION)}
# saved by hierviz since NodeTable.forced_from; source_op since forced blockers count a node two entries force
OPTIONAL_NODE = {"forced_from": _or_none(OP_NAME), "source_op": _or_none(OP_NAME)}
TOP = {"engine": STR, "config": OBJECT, "stats": OBJECT, "subgraphs": LIST, "nodes": LIST}
VERSIONS: Kind = ("map of names to versions", lambda v: v is None or isinstance(v, dict) and all(
    isinstance(x, str) or x is None for x in v.values()))
OPTIONAL_TOP = {"notes": _list_of(STR), "versions": VERSIONS, "hierviz_version": STR}


def _damaged(where: str, field: str, what: str) -> SavedPartitionError:
    return SavedPartitionError(f"{where} is a damaged saved partition: {field} {what}; save the partition again "
                               "(part.save('x.json')).")


def _fields(record: Any, kinds: dict[str, Kind], field: str, where: str, optional: dict[str, Kind] | None = None
            ) -> None:
    if not isinstance(record, dict):
        raise _damaged(where, field, f"is {record!r:.40}, not a JSON object")
    for key, (what, ok) in {**kinds, **(optional or {})}.items():
        if key not in record:
            if key in kinds:
                raise _damaged(where, f"{field}.{key}", "is missing")
            continue
        if not ok(record[key]):
            raise _damaged(where, f"{field}.{key}", f"is {record[key]!r:.40}, not a {what}")


def _stats(stats: dict, where: str) -> None:
    for key, kind in [*((k, INT) for k in INT_STATS), *((k, NUMBER) for k in SHARE_STATS)]:
        if key not in stats:
            raise _damaged(where, f"stats.{key}", "is missing")
        if not kind[1](stats[key]):
            raise _damaged(where, f"stats.{key}", f"is {stats[key]!r:.40}, not a {kind[0]}")
    if "subgraphs_by_backend" not in stats:
        raise _damaged(where, "stats.subgraphs_by_backend", "is missing")
    by_backend = stats["subgraphs_by_backend"]
    if not isinstance(by_backend, dict) or not all(isinstance(k, str) and INT[1](v) for k, v in by_backend.items()):
        raise _damaged(where, "stats.subgraphs_by_backend", f"is {by_backend!r:.40}, not a map of backend to count")


def _agree(doc: dict, where: str) -> None:
    """The counts `stats` holds are those of the subgraphs and nodes saved."""
    stats, subgraphs = doc["stats"], doc["subgraphs"]
    counts = {"nodes": sum(1 for n in doc["nodes"] if n["kind"].startswith("call_")),
              "compute_ops": sum(1 for n in doc["nodes"] if n["kind"].startswith("call_") and n["compute"]),
              "subgraphs": len(subgraphs),
              "acc_subgraphs": sum(1 for s in subgraphs if s["is_acc"])}
    for key, have in counts.items():
        if stats[key] != have:
            raise _damaged(where, f"stats.{key}", f"says {stats[key]} where the file holds {have}")
    by_backend = Counter(s["backend"] for s in subgraphs)
    if {k: v for k, v in stats["subgraphs_by_backend"].items() if v} != dict(by_backend):
        raise _damaged(where, "stats.subgraphs_by_backend", f"says {stats['subgraphs_by_backend']} where the file "
                       f"holds {dict(by_backend)}")


def check_fields(doc: dict, where: str) -> None:
    """SavedPartitionError naming the first field of `doc` (a `hierviz-partition/2` document;
    `where`: the file, for the message) that is not what the format says (module docstring)."""
    _fields(doc, TOP, "the document", where, OPTIONAL_TOP)
    _stats(doc["stats"], where)
    tags: set[str] = set()
    for k, sub in enumerate(doc["subgraphs"]):
        _fields(sub, SUBGRAPH, f"subgraphs[{k}]", where)
        for side in ("inputs", "outputs"):
            for j, spec in enumerate(sub[side]):
                _fields(spec, SPEC, f"subgraphs[{k}].{side}[{j}]", where)
        if sub["tag"] in tags:
            raise _damaged(where, f"subgraphs[{k}].tag", f"{sub['tag']!r} is used twice")
        tags.add(sub["tag"])
    names: set[str] = set()
    for i, node in enumerate(doc["nodes"]):
        _fields(node, NODE, f"nodes[{i}]", where, OPTIONAL_NODE)
        missing = [a for a in node["inputs"] if a not in names]
        if missing:
            raise _damaged(where, f"nodes[{i}].inputs", f"names {missing[0]!r}, which is not an earlier node")
        if node["tag"] is not None and node["tag"] not in tags:
            raise _damaged(where, f"nodes[{i}].tag", f"{node['tag']!r} is not a subgraph of the file")
        if node["kind"] in CALLABLE_OPS and node["reason_code"] in (DEMOTED, DEMOTED_NEXT) \
                and node["eligible_backend"] is None:
            raise _damaged(where, f"nodes[{i}].eligible_backend", "is null for a node demoted from a backend")
        if node["name"] in names:
            raise _damaged(where, f"nodes[{i}].name", f"{node['name']!r} is used twice")
        names.add(node["name"])
    for k, sub in enumerate(doc["subgraphs"]):
        missing = [n for n in sub["nodes"] if n not in names]
        if missing:
            raise _damaged(where, f"subgraphs[{k}].nodes", f"names {missing[0]!r}, which is not a node of the file")
    _agree(doc, where)


__all__ = ["check_fields"]
