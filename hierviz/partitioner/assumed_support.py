"""What a what-if partition assumes of TensorRT: the nodes it places in TensorRT that
Torch-TensorRT's own converters would not take (no converter, or the validator refuses the node),
found with hv.support.tensorrt() itself. Only a config whose TensorRT support is not Torch-TensorRT's
default (a Blockers what-if, `any_chain(tensorrt(), ops([...]))`) can place such a node; the
repr, the report and the explorer's stats line say so, since Torch-TensorRT would not run it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hierviz.capturing.provenance import short_op
from hierviz.support.sources import tensorrt
from hierviz.support.verdict import UNSUPPORTED, VALIDATOR

if TYPE_CHECKING:  # pragma: no cover
    from torch.fx import Node

    from hierviz.partitioner.record import NodeTable
    from hierviz.settings.config import Config

TENSORRT = "tensorrt"


@dataclass(frozen=True)
class AssumedNode:
    """A node the partition places in TensorRT that Torch-TensorRT would not convert: its `node`
    name, `op` (as Partition.nodes() names it), `reason_code` (unsupported: no converter;
    validator_rejected) and `why` (Torch-TensorRT's support in words)."""

    node: str
    op: str
    reason_code: str
    why: str


def assumed_nodes(config: "Config", records: "NodeTable", nodes: "list[Node] | None") -> tuple[AssumedNode, ...]:
    """The nodes of a partition (its `config` and `records`) in TensorRT subgraphs that
    hv.support.tensorrt() refuses; () when the config's TensorRT support is Torch-TensorRT's default.
    `nodes`: the graph's, in record order; None for a saved partition (no graph kept), whose ops are
    checked by converter name only."""
    default = tensorrt()
    if TENSORRT not in config.priority or config.support_for(TENSORRT) == default:
        return ()
    found = []
    with default.checking():
        for i, backend in enumerate(records.backend):
            if backend != TENSORRT:
                continue
            if nodes is None:
                if not default.accepts_name(records.op[i]):
                    found.append(AssumedNode(records.name[i], records.op[i], UNSUPPORTED, "no TensorRT converter"))
                continue
            verdict = default.verdict(nodes[i])
            if not verdict.ok:
                found.append(AssumedNode(records.name[i], records.op[i], verdict.code, verdict.why))
    return tuple(found)


def assumed_text(assumed: tuple[AssumedNode, ...]) -> str:
    """'ASSUMED: TensorRT converts histc (no converter in Torch-TensorRT)': the ops, each once."""
    by_op: dict[str, str] = {}
    for a in assumed:
        reason = "validator rejects it" if a.reason_code == VALIDATOR else "no converter"
        by_op.setdefault(short_op(a.op).removeprefix("aten."), reason)
    ops = ", ".join(f"{op} ({why} in Torch-TensorRT)" for op, why in by_op.items())
    return f"ASSUMED: TensorRT converts {ops}"


def assumed_ops_text(assumed: tuple[AssumedNode, ...]) -> str:
    """'histc, ...': the assumed ops, each once, for the explorer's warning."""
    return ", ".join(dict.fromkeys(short_op(a.op).removeprefix("aten.") for a in assumed))


__all__ = ["AssumedNode", "assumed_nodes", "assumed_text", "assumed_ops_text"]
