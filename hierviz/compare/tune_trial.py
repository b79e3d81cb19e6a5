"""Measuring hv.tune's trials: one setting timed (a quick, prunable timing checked against
eager, then the full timing; as a Ray task too), a duplicate's figures copied, the final
measurement of the best, and eager PyTorch (the captured graph) as a baseline.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import torch
from torch.utils._pytree import tree_leaves

from hierviz.compare.rows import partition_of
from hierviz.compare.tensorrt_kept import own_fallbacks
from hierviz.latency.baseline_names import EAGER, GRAPH_EAGER, OUTPUTS_DIFFER
from hierviz.settings.config import Config
from hierviz.errors import HiervizError
from hierviz.latency.measure_call import measure_with
from hierviz.latency.measure_options import MeasureOptions
from hierviz.latency.measurement import Measurement
from hierviz.latency.compiling.subgraph_compiling import short
from hierviz.latency.compiling.lift import lift
from hierviz.latency.numerics import with_mismatch
from hierviz.latency.timing import time_fn
from hierviz.partitioner import Partition

# what running the captured graph can raise: hierviz's own refusals, and torch's errors (its C++
# errors map to RuntimeError, out of memory and NotImplementedError included, or to IndexError,
# ValueError and TypeError; its Python decompositions assert; scalar arithmetic divides by zero)
RUN_ERRORS: tuple[type[Exception], ...] = (HiervizError, RuntimeError, TypeError, ValueError, IndexError,
                                           AssertionError, ArithmeticError)

QUICK = {"warmup": 1, "iters": 5}     # the first, prunable timing
FULL = {"warmup": 3, "iters": 30}     # the full timing of trials that are not pruned


@dataclass
class Outcome:
    status: str
    quick: Any = None
    full: Any = None
    error: str | None = None
    seconds: float = 0.0


def mismatch_text(m: Measurement) -> str:
    """What a trial whose outputs differ from eager reports, from the measurement's errors."""
    errors = [f"{what} {value:.3g}" for what, value in (("max abs error", m.max_abs_error),
                                                          ("max rel error", m.max_rel_error)) if value is not None]
    return OUTPUTS_DIFFER + (f" ({', '.join(errors)})" if errors else "")


def measure_trial(part: Partition, example_inputs: Any, device: Any, options: MeasureOptions,
                  prune: Any = None, untimed: bool = False) -> Outcome:
    """Measure one partition on `device` with hv.tune's `options`: a quick timing (checked
    against eager), `prune(median_ms)` asked whether to stop there, then the full timing. Never
    raises for a HiervizError. `untimed`: TensorRT is kept but cannot be timed here
    (compare/tensorrt_kept.py): its subgraphs running in eager PyTorch is no fallback of the
    trial's."""
    start = time.perf_counter()
    try:
        quick_opts = options.replace(device=device, warmup=QUICK["warmup"], iters=min(QUICK["iters"], options.iters),
                                     check=True, baseline=False, per_subgraph=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quick = measure_with(part, example_inputs, quick_opts)
            if quick.outputs_match is False:
                quick = with_mismatch(part, example_inputs, quick, quick_opts)
                where = quick.mismatch_at
                return Outcome("mismatch", quick, None, (f"the error starts in {where}; " if where else "")
                               + mismatch_text(quick), time.perf_counter() - start)
            fell = own_fallbacks(quick, untimed)
            if quick.nothing_accelerated and len(fell) == len(quick.fallbacks):
                # every accelerated subgraph fell back: the eager model in pieces
                return Outcome("nothing accelerated", quick, None, quick.nothing_accelerated_text() + ": "
                               f"{', '.join(quick.fallbacks)[:200]}", time.perf_counter() - start)
            if fell:
                return Outcome("fallback", quick, None, f"{len(fell)} subgraph(s) fell back to {EAGER}: "
                                f"{', '.join(fell)[:200]}", time.perf_counter() - start)
            if prune is not None and prune(quick.median_ms):
                return Outcome("pruned", quick, None, None, time.perf_counter() - start)
            full = measure_with(part, example_inputs, timing_only(options).replace(device=device))
    except HiervizError as exc:
        return Outcome("failed", None, None, str(exc), time.perf_counter() - start)
    return Outcome("measured", quick, full, None, time.perf_counter() - start)


def timing_only(options: MeasureOptions) -> MeasureOptions:
    """`options` timing the split model alone: outputs not checked, no baseline, no subgraph timed."""
    return options.replace(check=False, baseline=False, per_subgraph=False)


def remote_trial(gm: Any, example_inputs: Any, config: Config, device: Any, options: MeasureOptions,
                 untimed: bool = False) -> Outcome:
    """A trial as a Ray task: partition the worker's copy of the graph, measure (no pruning)."""
    try:
        part = partition_of(gm, config)
    except HiervizError as exc:
        return Outcome("invalid", error=str(exc))
    return measure_trial(part, example_inputs, device, options, untimed=untimed)


def final_measure(gm: Any, config: Config, example_inputs: Any, device: Any, options: MeasureOptions,
                  notes: list[str]) -> Any:
    """The full hv.measure of `config` (its baseline timed in the same call), or None with a note."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return measure_with(partition_of(gm, config), example_inputs, options.replace(device=device))
        except HiervizError as exc:
            notes.append(f"the final measurement of {config.label()} failed: {exc}")
            return None


def graph_eager(gm: Any, example_inputs: Any, device: Any, timing: Mapping[str, int],
                notes: list[str] | None = None) -> Any:
    """Stats of eager PyTorch (the captured graph), the baseline when there is no nn.Module, or None
    with a note in `notes` saying why it failed (the tune result's notes, shown with its verdict)."""
    try:
        base = lift(gm, device)
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in tree_leaves(example_inputs)]
        with torch.no_grad():
            return time_fn(lambda: base.gm(*inputs, *base.weights), device, warmup=max(1, timing["warmup"]),
                           iters=timing["iters"])
    except RUN_ERRORS as exc:  # the user's graph failed: no baseline, and the note says why
        if notes is not None:
            notes.append(f"{GRAPH_EAGER} baseline: the captured graph failed to run eagerly on {device}: {short(exc)}; "
                         "without a baseline no setting is crowned")
        return None


def copy_outcome(outcomes: dict[int, Outcome], k: int, source: int) -> None:
    o = outcomes[source]
    outcomes[k] = Outcome("duplicate" if o.status in ("measured", "pruned") else o.status, o.quick, o.full,
                           o.error, 0.0)


__all__ = ["QUICK", "FULL", "Outcome", "measure_trial", "timing_only", "remote_trial", "final_measure", "graph_eager",
           "copy_outcome"]
