"""What the explorer's "torch_tensorrt.compile today" line shows of the fast partition: its
counts and notes, small enough to cross from the worker process (today_worker.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hierviz.partitioner import Partition


@dataclass(frozen=True)
class TodayCounts:
    """The fast partition's `stats` and `notes` (as `Partition` has them), and its engine,
    "fast", so the line reads it as it reads a Partition."""

    stats: dict[str, Any]
    notes: tuple[str, ...] = ()
    engine: str = "fast"


def counts_of(part: Partition) -> TodayCounts:
    """The line's part of `part` (a fast partition)."""
    return TodayCounts(dict(part.stats), tuple(getattr(part, "notes", ())), part.engine)


__all__ = ["TodayCounts", "counts_of"]
