"""What a timed split model comes to: its notes (warned once, at the user's line), its
per-subgraph table and the Measurement, for hv.measure of a Partition (measure_call.py) and of a
multi-graph partition (measure_by_graph.py)."""

from __future__ import annotations

import math
import warnings
from typing import Any, Mapping

import torch

from hierviz.errors import user_stacklevel
from hierviz.latency.baseline_names import EAGER_MODULE, GRAPH_EAGER, OUTPUTS_DIFFER
from hierviz.latency.compiling.compile_plan import names
from hierviz.latency.measurement import (PER_SUBGRAPH_COLUMNS, Measurement, MeasureWarning, SubgraphRecord,
                                    wide_baseline_note)
from hierviz.latency.measure_options import MeasureOptions
from hierviz.latency.timed_run import TimedRun
from hierviz.latency.timing import NOISY_CV, Stats, speedup_interval


def finish(run: TimedRun, options: MeasureOptions) -> Measurement:
    """The Measurement of a timed split model (`run`, see TimedRun) measured with `options`;
    its notes are warned once (measurement_notes)."""
    split, stats, base_stats = run.split, run.stats, run.base_stats
    match, max_abs, max_rel, _ = run.checked
    notes = measurement_notes(run)
    records = split.records
    eager = _eager_stats(run)
    compile_state = {r.asked: "cached" for r in records.values() if r.status == "cached"}
    compile_state.update(split.compile_state)
    return Measurement(
        median_ms=stats.median_ms, p10_ms=stats.p10_ms, p90_ms=stats.p90_ms, std_ms=stats.std_ms,
        cv=stats.cv, iters=options.iters, warmup=options.warmup, device=str(run.device), compile_s=split.compile_s,
        cache_hits=split.cache_hits, cache_misses=split.cache_misses,
        baseline_ms=eager.median_ms if eager else None,
        baseline_cv=eager.cv if eager else None,
        speedup=(eager.median_ms / stats.median_ms) if eager and stats.median_ms > 0 else None,
        graph_eager_ms=base_stats.median_ms if base_stats else None,
        torch_compile_ms=run.own["torch_compile"].median_ms if "torch_compile" in run.own else None,
        torch_compile_s=run.own["torch_compile"].compile_s if "torch_compile" in run.own else None,
        max_abs_error=max_abs, max_rel_error=max_rel, outputs_match=match, per_subgraph=run.table,
        glue_ms=run.glue_ms, fallbacks=tuple(split.fallbacks), warnings=notes, config=run.config,
        timing=stats, baseline_timing=base_stats, precision=run.precision, compile_state=compile_state,
        records=tuple(records.values()),
        speedup_ci=speedup_interval(eager.samples_ms, stats.samples_ms, paired=True) if eager else None,
        eager_timing=eager,
        against=_against(run),
        frozen_random=tuple(split.frozen_random),
    )


def _eager_stats(run: TimedRun) -> Stats | None:
    """The eager timing the split model is compared with: the nn.Module's, else the captured graph's."""
    eager = run.own.get("eager")
    return eager.stats if eager is not None and eager.stats is not None else run.base_stats


def _against(run: TimedRun) -> str | None:
    """The name of what `_eager_stats` timed (hierviz.latency.baseline_names); None when nothing was."""
    eager = run.own.get("eager")
    if eager is not None and eager.stats is not None:
        return EAGER_MODULE
    return GRAPH_EAGER if run.base_stats is not None else None


def measurement_notes(run: TimedRun) -> list[str]:
    """The Measurement's notes: the compile warnings, noisy timings and output differences
    (each also warned, at the user's line), then the noisy subgraphs and failed baselines
    (recorded only: there can be hundreds of small, noisy subgraphs)."""
    stats, base_stats, records = run.stats, run.base_stats, run.split.records
    match, _, _, problems = run.checked
    notes = list(run.split.warnings)
    if stats.noisy:
        notes.append(f"split model timing is noisy: coefficient of variation {stats.cv:.1%} > {NOISY_CV:.0%}; "
                     "close other programs, fix GPU clocks, or raise iters")
    eager = _eager_stats(run)
    if eager is not None and eager.wide:
        notes.append(wide_baseline_note(eager))
    elif base_stats is not None and base_stats.noisy:
        notes.append(f"{GRAPH_EAGER} timing is noisy: coefficient of variation {base_stats.cv:.1%} > {NOISY_CV:.0%}")
    if match is False:
        notes.append(f"{OUTPUTS_DIFFER}: " + "; ".join(problems[:3]))
    elif problems:
        notes.append("; ".join(problems[:3]))
    if notes:  # one warning per measurement, however many notes
        text = notes[0] if len(notes) == 1 else f"hv.measure: {len(notes)} notes:\n- " + "\n- ".join(notes)
        warnings.warn(text, MeasureWarning, stacklevel=user_stacklevel())
    noisy_subs = [n for n, r in records.items() if r.stats is not None and r.stats.noisy]
    if noisy_subs:
        notes.append(f"{len(noisy_subs)} of {len(records)} subgraph timings are noisy (cv > {NOISY_CV:.0%}): "
                     f"{names(noisy_subs, 5)}")
    for b in run.own.values():
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
