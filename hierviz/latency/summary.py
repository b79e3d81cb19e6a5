"""What a timed split model comes to: its notes (warned once, at the user's line), its
per-subgraph table and the Measurement, for hv.measure of a Partition (measure_call.py) and of a
multi-graph partition (measure_by_graph.py)."""

from __future__ import annotations

import math
import warnings
from typing import Any, Mapping

import torch

from hierviz.errors import user_stacklevel
from hierviz.latency.compiling.compile_plan import names
from hierviz.latency.measurement import (PER_SUBGRAPH_COLUMNS, Measurement, MeasureWarning, SubgraphRecord,
                                    wide_baseline_note)
from hierviz.latency.timing import NOISY_CV, speedup_interval


def finish(split: Any, stats: Any, own: dict[str, Any], base_stats: Any, checked: tuple, table: Any,
           glue_ms: float, notes: list[str], precision: dict, *, iters: int, warmup: int, device: Any,
           config: Any) -> Measurement:
    """The Measurement of a timed split model. `split`: what was compiled (a CompiledSplit, or
    any object with its records, fallbacks, cache counts, compile_s and compile_state);
    `stats` its timing; `own` the model's baselines (Baseline by name: "eager",
    "torch_compile"); `base_stats` the captured graph's eager timing (None when not timed);
    `checked`: (outputs_match, max_abs_error, max_rel_error)."""
    match, max_abs, max_rel = checked
    records = split.records
    eager = own["eager"].stats if own.get("eager") is not None and own["eager"].stats is not None else base_stats
    compile_state = {r.asked: "cached" for r in records.values() if r.status == "cached"}
    compile_state.update(split.compile_state)
    return Measurement(
        median_ms=stats.median_ms, p10_ms=stats.p10_ms, p90_ms=stats.p90_ms, std_ms=stats.std_ms,
        cv=stats.cv, iters=iters, warmup=warmup, device=str(device), compile_s=split.compile_s,
        cache_hits=split.cache_hits, cache_misses=split.cache_misses,
        baseline_ms=eager.median_ms if eager else None,
        baseline_cv=eager.cv if eager else None,
        speedup=(eager.median_ms / stats.median_ms) if eager and stats.median_ms > 0 else None,
        graph_eager_ms=base_stats.median_ms if base_stats else None,
        torch_compile_ms=own["torch_compile"].median_ms if "torch_compile" in own else None,
        torch_compile_s=own["torch_compile"].compile_s if "torch_compile" in own else None,
        max_abs_error=max_abs, max_rel_error=max_rel, outputs_match=match, per_subgraph=table,
        glue_ms=glue_ms, fallbacks=tuple(split.fallbacks), warnings=notes, config=config,
        timing=stats, baseline_timing=base_stats, precision=precision, compile_state=compile_state,
        records=tuple(records.values()),
        speedup_ci=speedup_interval(eager.samples_ms, stats.samples_ms, paired=True) if eager else None,
        eager_timing=eager,
    )


def measurement_notes(warned: list[str], records: Mapping[str, SubgraphRecord], stats: Any, base_stats: Any,
           match: bool | None, problems: list[str], own: dict[str, Any]) -> list[str]:
    """The Measurement's notes: the compile warnings, noisy timings and output differences
    (each also warned, at the user's line), then the noisy subgraphs and failed baselines
    (recorded only: there can be hundreds of small, noisy subgraphs)."""
    notes = list(warned)
    if stats.noisy:
        notes.append(f"split model timing is noisy: coefficient of variation {stats.cv:.1%} > {NOISY_CV:.0%}; "
                     "close other programs, fix GPU clocks, or raise iters")
    eager = own["eager"].stats if own.get("eager") is not None and own["eager"].stats is not None else base_stats
    if eager is not None and eager.wide:
        notes.append(wide_baseline_note(eager))
    elif base_stats is not None and base_stats.noisy:
        notes.append(f"eager baseline timing is noisy: coefficient of variation {base_stats.cv:.1%} > {NOISY_CV:.0%}")
    if match is False:
        notes.append("outputs differ from eager: " + "; ".join(problems[:3]))
    elif problems:
        notes.append("; ".join(problems[:3]))
    if notes:  # one warning per measurement, however many notes
        text = notes[0] if len(notes) == 1 else f"hv.measure: {len(notes)} notes:\n- " + "\n- ".join(notes)
        warnings.warn(text, MeasureWarning, stacklevel=user_stacklevel())
    noisy_subs = [n for n, r in records.items() if r.stats is not None and r.stats.noisy]
    if noisy_subs:
        notes.append(f"{len(noisy_subs)} of {len(records)} subgraph timings are noisy (cv > {NOISY_CV:.0%}): "
                     f"{names(noisy_subs, 5)}")
    for b in own.values():
        if b.error:
            notes.append(f"{b.name} baseline: {b.error}")
    return notes


def float_dtypes(*values: Any) -> set[str]:
    from torch.utils._pytree import tree_leaves

    return {str(x.dtype).replace("torch.", "") for v in values for x in tree_leaves(v)
            if isinstance(x, torch.Tensor) and x.is_floating_point()}


def per_subgraph_table(records: Mapping[str, SubgraphRecord]) -> Any:
    """One row per subgraph: what ran (`backend`), what was asked, its status and timing."""
    import pandas as pd

    rows = []
    total = sum(r.stats.median_ms for r in records.values() if r.stats is not None)
    for r in records.values():
        s = r.stats
        rows.append({
            "tag": r.tag, "backend": r.ran,
            "median_ms": s.median_ms if s else math.nan,
            "share": (s.median_ms / total) if s and total > 0 else math.nan,
            "asked": r.asked, "status": r.status, "compile_s": r.compile_s, "cached": r.cached,
            "p10_ms": s.p10_ms if s else math.nan, "p90_ms": s.p90_ms if s else math.nan,
            "cv": s.cv if s else math.nan, "ops": r.ops, "inputs": r.inputs, "outputs": r.outputs,
            "error": r.error, "key": r.key[:16],
        })
    return pd.DataFrame(rows, columns=PER_SUBGRAPH_COLUMNS)


__all__ = ["finish", "measurement_notes", "per_subgraph_table", "float_dtypes"]
