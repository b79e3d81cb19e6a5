"""One subgraph of a partition: its tag, backend, nodes and boundary tensors (`Partition.subgraphs`)."""

from __future__ import annotations

from dataclasses import dataclass

from hierviz.partitioner.record import TensorSpec


@dataclass(frozen=True)
class Subgraph:
    """One subgraph of a partition; `nodes` are node names in graph order."""

    tag: str
    backend: str
    is_acc: bool
    nodes: tuple[str, ...]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    compute_ops: int = 0

    def __len__(self) -> int:
        return len(self.nodes)
