"""One graph's part of a graph-by-graph measurement, for the picture's time overlay.

`hv.measure` of a MultiGraphPartition gives one Measurement for the whole model whose
`per_subgraph` has a `graph` column (the capture's index) and tags that are per graph; each
frame of the picture (frames.py) overlays the rows of its own graph, as a Measurement of that
graph's Partition would give them. Everything else is the whole model's Measurement.
"""

from __future__ import annotations

from typing import Any


class GraphTimes:
    """The rows of `measurement.per_subgraph` for graph `k` (without the `graph` and `calls`
    columns); every other attribute is the measurement's own."""

    def __init__(self, measurement: Any, k: int) -> None:
        per = measurement.per_subgraph
        self.per_subgraph = per[per["graph"] == k].drop(columns=["graph", "calls"]).reset_index(drop=True)
        self._measurement = measurement

    def __getattr__(self, name: str) -> Any:
        return getattr(self._measurement, name)

    @staticmethod
    def of_graphs(measurement: Any) -> bool:
        """Whether `measurement` measured a model graph by graph (its per_subgraph has a `graph` column)."""
        per = getattr(measurement, "per_subgraph", None)
        return per is not None and hasattr(per, "columns") and "graph" in per.columns


__all__ = ["GraphTimes"]
