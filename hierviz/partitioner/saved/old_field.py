"""Fields a saved document lacks when an older hierviz wrote it, inferred where the document's
typed fields settle them, else said once.

`forced_from` (NodeTable.forced_from, which torch_executed_ops entry forced a node: a plain op,
or a source op through the lowering) and graph-by-graph `start_kind` (DynamoGraph.start_kind)
were added as optional fields, the format number unchanged. Without `forced_from`, a node forced
by an `hv.source_ops` entry would show as plain torch_executed_ops; without `start_kind`, a
graph's start is drawn as "other". The config's torch_executed_ops and each node's `reason_code`
and `op` settle `forced_from` when the node's op is a plain entry (none) or the config has one
source entry naming an overload (that op); nothing typed in an old file says how a graph after
the first starts. Free text (reasons, `starts`) is never read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Literal, Sequence

from hierviz.foundation.opnames import SOURCE_PREFIX, in_op_set, packets_in
from hierviz.partitioner.reasons import TORCH_EXECUTED

FieldName = Literal["forced_from", "start_kind"]
_SHOWN = 8


def _listed(names: Sequence[str]) -> str:
    more = len(names) - _SHOWN
    return ", ".join(names[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class OldField:
    """A field (`field`) a document saved before hierviz kept it lacks: the nodes, or graphs
    ('g1'), it was inferred for from the document's typed fields (`inferred`), and those it could
    not be (`unknown`: shown as a file without the field reads, and said so in `note()`)."""

    field: FieldName
    inferred: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()

    def note(self, sources: Iterable[str] = ()) -> str:
        """The loaded partition's note, once; `sources`: the config's torch_executed_ops (its
        hv.source_ops entries are named)."""
        if self.field == "start_kind":
            return ("saved before hierviz kept how each graph starts (start_kind): the starts of "
                    f"{_listed(self.unknown)} are drawn as 'other'; partition the model again (ir='torch_compile') "
                    "and save it to see them")
        said = ["saved before hierviz kept which torch_executed_ops entry forced each node (forced_from)"]
        if self.inferred:
            said.append(f"inferred for {_listed(self.inferred)} from the config's torch_executed_ops")
        if self.unknown:
            entries = ", ".join(sorted(s.removeprefix(SOURCE_PREFIX) for s in sources if s.startswith(SOURCE_PREFIX)))
            said.append(f"{_listed(self.unknown)} may come from a source op (hv.source_ops: {entries}) the file does "
                        "not name, so they show as plain torch_executed_ops; partition the model again and save it to "
                        "see which")
        return "; ".join(said)


def infer_forced_from(nodes: Sequence[dict[str, Any]], torch_executed_ops: Iterable[str]
                      ) -> tuple[tuple[str | None, ...], OldField | None]:
    """Each node's forced_from, as saved or inferred (see the module docstring), and the
    OldField of the nodes that lacked it (None when none did, or nothing needed inferring)."""
    plain = frozenset(e for e in torch_executed_ops if not e.startswith(SOURCE_PREFIX))
    sources = frozenset(e[len(SOURCE_PREFIX):] for e in torch_executed_ops if e.startswith(SOURCE_PREFIX))
    only = next(iter(sources)) if len(sources) == 1 and not packets_in(sources) else None
    plain_packets = packets_in(plain)
    found: list[str | None] = []
    inferred: list[str] = []
    unknown: list[str] = []
    for n in nodes:
        if "forced_from" in n:
            found.append(n["forced_from"])
            continue
        if not sources or n["reason_code"] != TORCH_EXECUTED:
            found.append(None)
            continue
        by_plain = in_op_set(n["op"], plain, plain_packets)
        found.append(None if by_plain else only)
        (inferred if by_plain or only is not None else unknown).append(n["name"])
    lacked = OldField("forced_from", tuple(inferred), tuple(unknown)) if inferred or unknown else None
    return tuple(found), lacked


def unknown_starts(graphs: Sequence[dict[str, Any]]) -> OldField | None:
    """The OldField of the graphs after the first whose saved document lacks start_kind (the
    first's is '' by definition); None when every graph has it."""
    lacking = tuple(f"g{k}" for k, g in enumerate(graphs) if k > 0 and "start_kind" not in g)
    return OldField("start_kind", unknown=lacking) if lacking else None


__all__ = ["OldField", "infer_forced_from", "unknown_starts"]
