"""Random ops a TensorRT engine freezes.

Torch-TensorRT converts aten.rand, aten.randn and aten.randperm by evaluating them once, with
numpy.random, while it builds the engine (torch_tensorrt/dynamo/conversion/ops_evaluators.py,
2.14): every run of the engine gives the values drawn then, where PyTorch draws new ones each
call (ViTMAE's random masking, noise added in forward). numpy's values are float64, so such an
engine builds only with truncate_double=True, the setting the conversion error names and the
fix search adds. The build and its fix say so from `FrozenRandom` records, never from words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.partition_result import Partition

# the ops Torch-TensorRT's converters evaluate at build time with numpy.random
FROZEN_AT_BUILD = frozenset({"torch.ops.aten.rand.default", "torch.ops.aten.randn.default",
                             "torch.ops.aten.randperm.default"})


@dataclass(frozen=True)
class FrozenRandom:
    """A random op inside TensorRT subgraph `subgraph` (node `node`, op `op`; `graph` names the
    dynamo graph across graphs, "" for one graph): its engine holds the values drawn at build."""

    subgraph: str
    node: str
    op: str
    graph: str = ""

    def text(self) -> str:
        """What it means for the user, and what to do to keep the values random."""
        where = f"{self.graph}/" if self.graph else ""
        short = self.op.removeprefix("torch.ops.")
        return (f"{where}{self.subgraph}'s engine holds {short} (node {self.node}), which Torch-TensorRT evaluates "
                "once while it builds the engine: every run gives the values drawn then, where PyTorch draws new "
                f"ones each call; to keep them random, add {self.op!r} to torch_executed_ops")


def frozen_random(part: Partition, tags: Iterable[str], graph: str = "") -> tuple[FrozenRandom, ...]:
    """The random ops of `part`'s TensorRT subgraphs `tags` whose values their engines freeze, in order."""
    found = []
    for tag in tags:
        for name in part.subgraph(tag).nodes:
            op = str(part.record(name).op)
            if op in FROZEN_AT_BUILD:
                found.append(FrozenRandom(tag, name, op, graph))
    return tuple(found)


__all__ = ["FROZEN_AT_BUILD", "FrozenRandom", "frozen_random"]
