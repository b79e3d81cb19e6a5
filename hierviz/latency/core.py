"""hv.measure, the entry point: compile the split model (compiled_split.py), time it interleaved with
the user's model run eagerly (or the unsplit graph; timing.time_paired) once TorchInductor's
compile workers are idle (quiet.py), check its outputs (output_match.py), and report a Measurement.

The partition is never modified.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Mapping

import torch

from hierviz.capturing import source_of, updates_of
from hierviz.config import whole_number
from hierviz.errors import MeasureError, checked_arguments, user_stacklevel
from hierviz.inputs import check as check_inputs
from hierviz.latency import compile_cache as cache_mod
from hierviz.latency.output_match import TOLERANCES, compare
from hierviz.latency.compiling import Progress, short
from hierviz.latency.lift import lift
from hierviz.latency.compile_plan import names, resolve_device
from hierviz.latency.precision import fp32_precision, record as precision_record
from hierviz.latency.baselines import Baseline, eager_call, time_compiled
from hierviz.latency.quiet import wait_for_idle_workers
from hierviz.latency.result import (PER_SUBGRAPH_COLUMNS, Measurement, MeasureWarning, SubgraphRecord,
                                    wide_baseline_note)
from hierviz.latency.compiled_split import ON_ERROR, check_trt_settings, compile_split
from hierviz.latency.timing import NOISY_CV, speedup_interval, time_fn, time_paired, time_submodules


@checked_arguments
def measure(partition: Any, example_inputs: Any, *, device: Any = None, warmup: int = 10, iters: int = 100,
            check: bool = True, on_error: str = "raise", cache_dir: str | Path | None = None,
            trt_settings: Any = None, progress: Any = None, inductor_options: dict | None = None,
            compilers: Mapping[str, Any] | None = None, cache: cache_mod.CompileCache | None = None,
            baseline: bool = True, per_subgraph: bool = True, rtol: float | None = None,
            atol: float | None = None, tf32: bool = False, model: Any = None,
            torch_compile: bool = False) -> Measurement:
    """Compile each subgraph of `partition` with its backend, time the split model and the
    eager model, check the outputs.

    - `device`: "cuda" when a GPU is there, else "cpu". TensorRT subgraphs need a CUDA GPU that
      the installed TensorRT builds for, else hv.TensorRTUnavailableError (a MeasureError) says
      why and the fix; with on_error="fallback" they run in eager PyTorch instead (`.fallbacks`).
    - `warmup`, `iters`: untimed and timed calls, for the whole model and for each subgraph.
    - `check`: compare the split model's outputs with eager (dtype-aware tolerances, see
      TOLERANCES; `rtol` / `atol` override them). A mismatch is reported, not raised.
    - `on_error`: "raise" (MeasureError naming the subgraph and the backend's message) or
      "fallback" (run that subgraph eagerly; listed in `.fallbacks`, `.warnings` and as
      status "fallback" in `.per_subgraph`, whose `backend` then says "torch").
    - `tf32`: False (default) measures strict FP32 on every backend (torch, TorchInductor and
      TensorRT alike); True allows TF32 on all of them. Recorded in `.precision`.
    - `cache_dir`: also keep compiled artifacts on disk there (TorchInductor artifacts need
      torch >= 2.8's standalone_compile; TensorRT engines are saved through their state_dict).
    - `trt_settings`: a dict of Torch-TensorRT CompilationSettings fields that act at
      conversion (hierviz.trt.CONVERSION_FIELDS; others are a ConfigError saying where they
      belong); `inductor_options`: a dict for `torch._inductor.compile(options=)`.
    - `compilers`: {backend: fn(gm, example_inputs) -> callable} for backends of your own
      (or to replace a built-in one for this call).
    - `progress`: True for a progress bar, or a callable (stage, done, total).
    - `cache`: a CompileCache; the process-wide one by default.
    - `model`: the nn.Module timed as the eager baseline (`baseline_ms`, `speedup`); by default
      the one the partition's graph was captured from. It is never modified (a copy is timed
      when it is in train mode or on another device). `graph_eager_ms` is the captured graph's.
    - `torch_compile`: also time the whole model through torch.compile (`torch_compile_ms`).
    """
    if not whole_number(iters, 1):
        raise MeasureError(f"iters must be a positive integer, not {iters!r}")
    if not whole_number(warmup, 0):
        raise MeasureError(f"warmup must be a non-negative integer, not {warmup!r}")
    if on_error not in ON_ERROR:
        raise MeasureError(f"on_error must be one of {ON_ERROR}, not {on_error!r}")
    if not all(hasattr(partition, a) for a in ("module", "subgraphs", "graph")):
        raise MeasureError(f"measure takes a hv.Partition (from hv.partition), not {type(partition).__name__}")
    check_trt_settings(trt_settings, tf32 if isinstance(tf32, bool) else False)
    dev = resolve_device(device, partition)
    check_inputs(partition.graph, example_inputs, who="hv.measure", error=MeasureError)
    n_subgraphs = sum(n.op == "call_module" for n in partition.module.graph.nodes)
    bar = Progress(progress, n_subgraphs + 1 + int(baseline) + (n_subgraphs if per_subgraph else 0))
    try:
        split = compile_split(partition, example_inputs, dev, on_error=on_error, cache=cache, cache_dir=cache_dir,
                              trt_settings=trt_settings, inductor_options=inductor_options, compilers=compilers,
                              tf32=tf32, progress=bar, who="hv.measure")
        inputs, top = split.inputs, split.module
        with torch.no_grad(), fp32_precision(split.tf32):
            base = lift(partition.graph, dev) if (baseline or check) else None
            split_call = lambda: top(*inputs)  # noqa: E731
            base_call = (lambda: base.gm(*inputs, *base.weights)) if base is not None else None  # noqa: E731

            base_stats = reference = None
            if base_call is not None:
                try:
                    reference = base_call()
                except Exception as exc:
                    raise MeasureError(f"the unsplit graph (partition.graph) failed to run eagerly on "
                                       f"{dev}: {short(exc)}") from exc
            own: dict[str, Any] = {}
            ready = _eager_model(partition, model, example_inputs, dev) if baseline else None
            if ready is not None and ready.call is None:
                own["eager"] = Baseline("eager", None, error=ready.error)
            # the split model is timed interleaved with what it is compared with (the nn.Module,
            # else the captured graph), once TorchInductor's compile workers are idle
            against = ready.call if ready is not None and ready.call is not None else \
                (base_call if baseline else None)
            wait_for_idle_workers()
            if against is not None:
                eager_stats, stats = time_paired(against, split_call, dev, warmup=warmup, iters=iters)
                if against is base_call:
                    base_stats = eager_stats
                else:
                    own["eager"] = Baseline("eager", eager_stats, outputs=ready.outputs)
                bar.step("eager baseline timed")
            else:
                stats = time_fn(split_call, dev, warmup=warmup, iters=iters)
            bar.step("split model timed")
            if baseline and base_call is not None and base_stats is None:  # the captured graph's own figure
                base_stats = time_fn(base_call, dev, warmup=warmup, iters=iters)
            if torch_compile and ready is not None and ready.module is not None:
                own["torch_compile"] = time_compiled(ready.module, ready.inputs, dev, warmup, iters)

            match = max_abs = max_rel = None
            problems: list[str] = []
            if check and base_call is not None:
                match, max_abs, max_rel, problems = compare(split_call(), reference, rtol, atol)

            if per_subgraph:
                timed = time_submodules(top, list(split.records), inputs, dev, warmup=warmup, iters=iters,
                                        step=lambda name: bar.step(f"{name} timed"))
                for name, s in timed.items():
                    split.records[name].stats = s
            precision = precision_record(split.tf32, _dtypes(inputs, reference),
                                         {r.ran for r in split.records.values()})
    finally:
        bar.close()

    notes = _notes(split, stats, base_stats, match, problems, own)
    records = split.records
    eager = own["eager"].stats if own.get("eager") is not None and own["eager"].stats is not None else base_stats
    table = per_subgraph_table(records)
    sub_total = float(table["median_ms"].sum()) if per_subgraph and len(table) else 0.0
    compile_state = {r.asked: "cached" for r in records.values() if r.status == "cached"}
    compile_state.update(split.compile_state)
    return Measurement(
        median_ms=stats.median_ms, p10_ms=stats.p10_ms, p90_ms=stats.p90_ms, std_ms=stats.std_ms,
        cv=stats.cv, iters=iters, warmup=warmup, device=str(dev), compile_s=split.compile_s,
        cache_hits=split.cache_hits, cache_misses=split.cache_misses,
        baseline_ms=eager.median_ms if eager else None,
        baseline_cv=eager.cv if eager else None,
        speedup=(eager.median_ms / stats.median_ms) if eager and stats.median_ms > 0 else None,
        graph_eager_ms=base_stats.median_ms if base_stats else None,
        torch_compile_ms=own["torch_compile"].median_ms if "torch_compile" in own else None,
        torch_compile_s=own["torch_compile"].compile_s if "torch_compile" in own else None,
        max_abs_error=max_abs, max_rel_error=max_rel, outputs_match=match, per_subgraph=table,
        glue_ms=(stats.median_ms - sub_total) if per_subgraph else math.nan,
        fallbacks=split.fallbacks, warnings=notes, config=getattr(partition, "config", None),
        timing=stats, baseline_timing=base_stats, precision=precision, compile_state=compile_state,
        records=tuple(records.values()),
        speedup_ci=speedup_interval(eager.samples_ms, stats.samples_ms, paired=True) if eager else None,
        eager_timing=eager,
    )


def _notes(split: Any, stats: Any, base_stats: Any, match: bool | None, problems: list[str],
           own: dict[str, Any]) -> list[str]:
    """The Measurement's notes: the compile warnings, noisy timings and output differences
    (each also warned, at the user's line), then the noisy subgraphs and failed baselines
    (recorded only: there can be hundreds of small, noisy subgraphs)."""
    notes = list(split.warnings)
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
    records = split.records
    noisy_subs = [n for n, r in records.items() if r.stats is not None and r.stats.noisy]
    if noisy_subs:
        notes.append(f"{len(noisy_subs)} of {len(records)} subgraph timings are noisy (cv > {NOISY_CV:.0%}): "
                     f"{names(noisy_subs, 5)}")
    for b in own.values():
        if b.error:
            notes.append(f"{b.name} baseline: {b.error}")
    return notes


def _eager_model(partition: Any, model: Any, example_inputs: Any, device: Any) -> Any:
    """The user's model ready to run eagerly (hierviz.latency.baselines.eager_call): `model`,
    else the one the partition's graph was captured from; None when there is none."""
    source = model if model is not None else source_of(partition.graph)
    if source is None:
        return None
    return eager_call(source, example_inputs, device, updates_of(partition.graph))


def _dtypes(*values: Any) -> set[str]:
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


__all__ = ["measure", "compare", "resolve_device", "TOLERANCES", "per_subgraph_table"]
