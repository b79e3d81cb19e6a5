"""`Partition.blockers(measure=True)`: each blocker's what-if, timed with hv.measure against
the current setting.

The current partition is measured once; then every row whose what-if can run: forced ops
(dropped from torch_executed_ops), demotions (a smaller min_block_size), the combined row
when it holds only those, and on a GPU with TensorRT the ops whose converter exists but whose
validator refused them. An op with no converter (or no backend) cannot run: its row keeps its
counts and says why. Each measured row gets `median_ms`, `speedup` (current median / its
median) and `speedup_low` / `speedup_high`, the bootstrap interval over both sets of samples.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hierviz.errors import HiervizError
from hierviz.latency.measure_call import measure_with
from hierviz.latency.measure_options import MeasureOptions
from hierviz.capturing.example_inputs import example_from_graph
from hierviz.latency.compiling.compile_plan import resolve_device
from hierviz.latency.timing import speedup_interval
from hierviz.partitioner.blockers.blocker_causes import NO_BACKEND, NO_CONVERTER, REJECTED, repartition

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from hierviz.partitioner import Partition

MEASURED_COLUMNS = ("median_ms", "speedup", "speedup_low", "speedup_high", "measured")
DEFAULTS = {"warmup": 3, "iters": 20}


def why_not(kind: str, device: str) -> str:
    """Why a row's what-if cannot be timed here ('' when it can)."""
    if kind in (NO_CONVERTER, NO_BACKEND):
        return "not measured: the op has no converter, so the backend cannot run it (counts only)"
    if kind == REJECTED and not device.startswith("cuda"):
        return "not measured: whether the validator's refusal holds shows only when TensorRT builds it on a GPU"
    return ""


def _combined_runs(table: "pd.DataFrame", row: Any, device: str) -> str:
    """A combined row runs when every row it joins runs."""
    joined = table[table.kind != "combined"].head(int(row.op.split()[1]))
    for other in joined.itertuples():
        reason = why_not(other.kind, device)
        if reason:
            return f"not measured: it joins {other.op}, which cannot run ({reason.split(': ', 1)[1]})"
    return ""


def measure_blockers(p: "Partition", table: "pd.DataFrame", *, device: Any = None, example_inputs: Any = None,
                     **options: Any) -> "pd.DataFrame":
    """`table` (Partition.blockers()) with each runnable what-if measured against `p`.
    `options` are hv.measure's (warmup, iters, on_error, compilers, ...): one record, checked
    once, times the current setting and every what-if."""
    if p.graph is None:
        p.compile()  # a saved partition: raises SavedPartitionError, saying why
    table = table.copy()
    dev = str(resolve_device(device, p))
    inputs = example_inputs if example_inputs is not None else example_from_graph(p.graph)
    record = MeasureOptions.of({**DEFAULTS, "baseline": False, **options, "device": dev})
    current = measure_with(p, inputs, record)
    medians: list[float | None] = []
    speedups: list[float | None] = []
    lows: list[float | None] = []
    highs: list[float | None] = []
    notes: list[str] = []
    for row in table.itertuples():
        reason = (_combined_runs(table, row, dev) if row.kind == "combined"
                  else why_not(row.kind, dev))
        if not reason and row.subgraphs_if_fixed is None:
            reason = "not measured: " + (row.note or "it could not be re-partitioned")
        result = None
        if not reason:
            try:
                result = measure_with(repartition(p, row.config), inputs, record)
            except HiervizError as exc:
                reason = f"not measured: {str(exc).splitlines()[0]}"
        if result is None:
            for column in (medians, speedups, lows, highs):
                column.append(None)
            notes.append(reason)
            continue
        ci = speedup_interval(current.timing.samples_ms, result.timing.samples_ms) if current.timing and result.timing \
            else None
        medians.append(result.median_ms)
        speedups.append(current.median_ms / result.median_ms if result.median_ms else None)
        lows.append(ci[0] if ci else None)
        highs.append(ci[1] if ci else None)
        notes.append(f"measured on {dev} against the current setting ({current.median_ms:.3f} ms)")
    table["median_ms"], table["speedup"], table["speedup_low"], table["speedup_high"] = medians, speedups, lows, highs
    table["measured"] = notes
    return table


__all__ = ["measure_blockers", "MEASURED_COLUMNS", "why_not"]
