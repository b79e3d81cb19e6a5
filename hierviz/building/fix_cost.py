"""What a fix costs: the ops it moves out of TensorRT, and the accelerated ops and subgraphs
before and after it (`Builds.fix_cost`, said in every fix's words)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition
from hierviz.partitioner.partition_result import Partition
from hierviz.partitioner.by_graph.per_graph import partitions_of

TENSORRT = "tensorrt"


def tensorrt_ops(part: Partition | MultiGraphPartition) -> int:
    """The compute ops the partition's TensorRT subgraphs run (every graph's, across graphs)."""
    return sum(sg.compute_ops for p in partitions_of(part) for sg in p.subgraphs if sg.backend == TENSORRT)


@dataclass(frozen=True)
class FixCost:
    """`added`: the ops the fix moves to PyTorch (torch_executed_ops it adds; none for a fix
    that only sets a build setting); `moved`: the compute ops TensorRT ran before and no longer
    runs; `tensorrt_ops`, `accelerated_ops`, `subgraphs`: (before, after); `by_backend`: the
    subgraphs per backend after it."""

    added: tuple[str, ...]
    moved: int
    tensorrt_ops: tuple[int, int]
    accelerated_ops: tuple[int, int]
    subgraphs: tuple[int, int]
    by_backend: dict[str, int] = field(default_factory=dict, compare=False)

    @classmethod
    def between(cls, before: Partition | MultiGraphPartition, after: Partition | MultiGraphPartition,
                added: tuple[str, ...]) -> FixCost:
        """The cost of going from `before` to `after` (the fix applied), moving `added`."""
        b, a = before.stats, after.stats
        trt = (tensorrt_ops(before), tensorrt_ops(after))
        return cls(added, max(trt[0] - trt[1], 0), trt, (b["accelerated_ops"], a["accelerated_ops"]),
                   (b["subgraphs"], a["subgraphs"]),
                   {k: v for k, v in a["subgraphs_by_backend"].items() if v})

    def text(self) -> str:
        """'it moves 2 compute ops out of TensorRT: accelerated ops 211 → 209, subgraphs 5 → 9
        (tensorrt=5, torch=4)'."""
        moved = ("it moves no compute op out of TensorRT" if not self.moved else
                 f"it moves {self.moved} compute op{'s' if self.moved != 1 else ''} out of TensorRT")
        backends = ", ".join(f"{k}={v}" for k, v in self.by_backend.items())
        return (f"{moved}: accelerated ops {self.accelerated_ops[0]} → {self.accelerated_ops[1]}, subgraphs "
                f"{self.subgraphs[0]} → {self.subgraphs[1]}" + (f" ({backends})" if backends else ""))


__all__ = ["FixCost", "tensorrt_ops"]
