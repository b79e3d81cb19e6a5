"""The rows of the shown partition's blockers table (`Partition.blockers()`, made in the worker)
with the nodes each row keeps out of the accelerated backends, so the explorer can mark the top
blocker's nodes in its diagram and tell a selected node's row.

The table has no node names: they are the causes' members, found again here from the partition's
records as `render(highlight="blockers")` finds them (no re-partition), and matched to the rows by
op and kind (each cause is one row). The combined row ("top 3 together") is no node's own row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from hierviz.partitioner.blockers.blocker_causes import COMBINED, find_causes

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from hierviz.partitioner import Partition


@dataclass(frozen=True)
class BlockerRows:
    """`table` (ranked, as the Blockers tab lists it) and, per row, the node names it keeps out."""

    table: "pd.DataFrame"
    members: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, part: "Partition", table: "pd.DataFrame") -> "BlockerRows":
        causes = {(c.op, c.kind): tuple(c.members) for c in find_causes(part)}
        members = tuple(() if kind == COMBINED else causes.get((op, kind), ())
                        for op, kind in zip(table["op"], table["kind"]))
        return cls(table, members)

    def row(self, k: int) -> Any:
        """Row `k` of the table (a pandas Series: op, kind, nodes, ..., change, config)."""
        return self.table.iloc[k]

    def top(self) -> int | None:
        """The first ranked row that keeps nodes of the shown partition out (what blocks the
        most); None when none does."""
        return next((k for k, names in enumerate(self.members) if names), None)

    def of_node(self, name: str) -> int | None:
        """The first ranked row that keeps node `name` out; None when none does."""
        return self.of_nodes([name])

    def of_nodes(self, names: Iterable[str]) -> int | None:
        """The first ranked row that keeps any of the nodes `names` out (a subgraph's, a box's)."""
        wanted = set(names)
        return next((k for k, kept in enumerate(self.members) if wanted.intersection(kept)), None)

    def kept(self, k: int, names: Iterable[str]) -> int:
        """How many of the nodes `names` row `k` keeps out."""
        return len(set(names).intersection(self.members[k]))


__all__ = ["BlockerRows"]
