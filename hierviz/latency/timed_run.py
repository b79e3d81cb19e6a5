"""TimedRun: what one hv.measure compiled, timed and checked, as one record for summary.finish
(of a Partition, measure_call.py, and of a multi-graph partition, by_graph/measure_by_graph.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import torch

    from hierviz.latency.baselines import Baseline
    from hierviz.latency.timing import Stats

# (outputs_match, max_abs_error, max_rel_error, problems), as output_match.compare gives them
Compared = tuple[bool | None, float | None, float | None, list[str]]
NOT_CHECKED: Compared = (None, None, None, [])


@dataclass(frozen=True)
class TimedRun:
    """One measured split model. `split`: what was compiled (a CompiledSplit, or any object with
    its records, fallbacks, warnings, cache counts, compile_s and compile_state); `stats` its
    timing; `own` the model's baselines by name ("eager", "torch_compile"); `base_stats` the
    captured graph's eager timing (None when not timed); `checked` the outputs against eager
    (NOT_CHECKED when they were not compared); `table` the per-subgraph table; `glue_ms` what
    the model costs beyond its subgraphs; `precision` the TF32 record."""

    split: Any
    stats: Stats
    own: Mapping[str, Baseline]
    base_stats: Stats | None
    checked: Compared
    table: pd.DataFrame
    glue_ms: float
    precision: dict[str, Any]
    device: torch.device
    config: Any


__all__ = ["TimedRun", "Compared", "NOT_CHECKED"]
