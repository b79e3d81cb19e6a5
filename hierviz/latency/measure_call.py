"""hv.measure, the entry point: compile the split model (compiled_split.py), time it interleaved with
the user's model run eagerly (or the unsplit graph; timing.time_paired) once TorchInductor's
compile workers are idle (idle_workers.py), check its outputs (output_match.py), and report a Measurement.

The partition is never modified.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

import torch

from hierviz.capturing.aten_capture import source_of, updates_of
from hierviz.errors import MeasureError, checked_arguments
from hierviz.capturing.inputs import check as check_inputs
from hierviz.latency.compiling import compile_cache as cache_mod
from hierviz.latency.output_match import TOLERANCES, compare
from hierviz.latency.compiling.subgraph_compiling import Progress, short
from hierviz.latency.compiling.lift import lift
from hierviz.latency.compiling.compile_plan import resolve_device
from hierviz.latency.precision import fp32_precision, record as precision_record
from hierviz.latency.baselines import Baseline, eager_call, time_compiled
from hierviz.latency.idle_workers import wait_for_idle_workers
from hierviz.latency.measurement import Measurement
from hierviz.latency.measure_options import MeasureOptions
from hierviz.latency.summary import finish, float_dtypes, per_subgraph_table
from hierviz.latency.timed_run import NOT_CHECKED, Compared, TimedRun
from hierviz.latency.compiling.compiled_split import build_split
from hierviz.partitioner import MultiGraphPartition, Partition
from hierviz.latency.timing import time_fn, time_paired, time_submodules


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
    return measure_with(partition, example_inputs, MeasureOptions(
        device=device, warmup=warmup, iters=iters, check=check, on_error=on_error, cache_dir=cache_dir,
        trt_settings=trt_settings, progress=progress, inductor_options=inductor_options, compilers=compilers,
        cache=cache, baseline=baseline, per_subgraph=per_subgraph, rtol=rtol, atol=atol, tf32=tf32, model=model,
        torch_compile=torch_compile))


def measure_with(partition: Partition | MultiGraphPartition, example_inputs: Any,
                 options: MeasureOptions) -> Measurement:
    """hv.measure with its options as one checked record (what hv.sweep and hv.tune call with
    the record they made once)."""
    if isinstance(partition, MultiGraphPartition):  # the whole model through torch.compile, graph by graph
        from hierviz.latency.by_graph.measure_by_graph import measure_graphs

        return measure_graphs(partition, example_inputs, options)
    if not all(hasattr(partition, a) for a in ("module", "subgraphs", "graph")):
        raise MeasureError(f"measure takes a hv.Partition (from hv.partition), not {type(partition).__name__}")
    dev = resolve_device(options.device, partition)
    check_inputs(partition.graph, example_inputs, who="hv.measure", error=MeasureError)
    n_subgraphs = sum(n.op == "call_module" for n in partition.module.graph.nodes)
    bar = Progress(options.progress, n_subgraphs + 1 + int(options.baseline)
                   + (n_subgraphs if options.per_subgraph else 0))
    warmup, iters = options.warmup, options.iters
    try:
        split = build_split(partition, example_inputs, dev, options, bar=bar)
        inputs, top = split.inputs, split.module
        with torch.no_grad(), fp32_precision(split.tf32):
            base = lift(partition.graph, dev) if (options.baseline or options.check) else None
            split_call = lambda: top(*inputs)  # noqa: E731
            base_call = (lambda: base.gm(*inputs, *base.weights)) if base is not None else None

            base_stats = reference = None
            if base_call is not None:
                try:
                    reference = base_call()
                except Exception as exc:
                    raise MeasureError(f"the unsplit graph (partition.graph) failed to run eagerly on "
                                       f"{dev}: {short(exc)}") from exc
            own: dict[str, Any] = {}
            ready = _eager_model(partition, options.model, example_inputs, dev) if options.baseline else None
            if ready is not None and ready.call is None:
                own["eager"] = Baseline("eager", None, error=ready.error)
            # the split model is timed interleaved with what it is compared with (the nn.Module,
            # else the captured graph), once TorchInductor's compile workers are idle
            against = ready.call if ready is not None and ready.call is not None else \
                (base_call if options.baseline else None)
            wait_for_idle_workers()
            if against is not None:
                eager_stats, stats = time_paired(against, split_call, dev, warmup=warmup, iters=iters)
                if against is base_call:
                    base_stats = eager_stats
                else:
                    assert ready is not None, "against is ready's call here"
                    own["eager"] = Baseline("eager", eager_stats, outputs=ready.outputs)
                bar.step("eager baseline timed")
            else:
                stats = time_fn(split_call, dev, warmup=warmup, iters=iters)
            bar.step("split model timed")
            if options.baseline and base_call is not None and base_stats is None:  # the captured graph's own figure
                base_stats = time_fn(base_call, dev, warmup=warmup, iters=iters)
            if options.torch_compile and ready is not None and ready.module is not None:
                own["torch_compile"] = time_compiled(ready.module, ready.inputs, dev, warmup, iters)

            checked: Compared = NOT_CHECKED
            if options.check and base_call is not None:
                checked = compare(split_call(), reference, options.rtol, options.atol)

            if options.per_subgraph:
                timed = time_submodules(top, list(split.records), inputs, dev, warmup=warmup, iters=iters,
                                        step=lambda name: bar.step(f"{name} timed"))
                for name, s in timed.items():
                    split.records[name].stats = s
            precision = precision_record(split.tf32, float_dtypes(inputs, reference),
                                         {r.ran for r in split.records.values()})
    finally:
        bar.close()

    table = per_subgraph_table(split.records)
    sub_total = float(table["median_ms"].sum()) if options.per_subgraph and len(table) else 0.0
    return finish(TimedRun(split=split, stats=stats, own=own, base_stats=base_stats, checked=checked, table=table,
                           glue_ms=(stats.median_ms - sub_total) if options.per_subgraph else math.nan,
                           precision=precision, device=dev, config=getattr(partition, "config", None)), options)


def _eager_model(partition: Partition, model: Any, example_inputs: Any, device: Any) -> Any:
    """The user's model ready to run eagerly (hierviz.latency.baselines.eager_call): `model`,
    else the one the partition's graph was captured from; None when there is none."""
    source = model if model is not None else source_of(partition.graph)
    if source is None:
        return None
    return eager_call(source, example_inputs, device, updates_of(partition.graph))


__all__ = ["measure", "measure_with", "compare", "resolve_device", "TOLERANCES"]
