"""hv.measure of a multi-graph partition: the whole model run through torch.compile with hierviz's
backend (compiled_graphs.CompiledGraphs: each dynamo graph as its Partition's compiled split
module), timed interleaved with the model run eagerly (timing.time_paired), its outputs checked
against the model's, each subgraph timed on its own with the inputs it receives.

The Measurement is hv.measure's: `per_subgraph` has a `graph` column first (tags are per graph),
`fallbacks` and `records` name subgraphs across graphs ('g1/_run_on_acc_tensorrt_0'), and
`glue_ms` is what the model costs beyond its subgraphs (each timed as often as its graph runs
per call): the Python between graphs, dynamo's guards. Nothing of the user's is changed: a
private copy is compiled, and dynamo's caches are reset after.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import torch

from hierviz.capturing.by_graph.dynamo_capture import input_specs
from hierviz.errors import MeasureError
from hierviz.latency.baselines import Baseline, eager_call, time_compiled
from hierviz.latency.by_graph.compiled_graphs import CompiledGraphs, checked_plan, model_of, on_device, qualified_tag
from hierviz.partitioner.by_graph.per_graph import stacked
from hierviz.latency.compiling.subgraph_compiling import Built, Progress
from hierviz.latency.measure_options import MeasureOptions
from hierviz.latency.summary import finish, float_dtypes, per_subgraph_table
from hierviz.latency.timed_run import NOT_CHECKED, Compared, TimedRun
from hierviz.latency.output_match import compare
from hierviz.latency.precision import fp32_precision, record as precision_record
from hierviz.latency.idle_workers import wait_for_idle_workers
from hierviz.latency.measurement import PER_SUBGRAPH_COLUMNS, SubgraphRecord, fallback_note
from hierviz.latency.timing import time_fn, time_paired, time_submodules
from hierviz.capturing.model_copy import private_copy

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition


def summed(compiled: CompiledGraphs) -> Built:
    """The graphs' CompiledSplits as one build (finish() reads it as a CompiledSplit): records and
    fallbacks named across graphs, one fallback note for all of them, the other notes named by
    graph."""
    out = Built()
    for run in compiled.graphs:
        split = run.split
        if split is None:
            continue
        for tag, r in split.records.items():
            out.records[qualified_tag(run, tag)] = SubgraphRecord(**{**vars(r), "tag": qualified_tag(run, tag)})
        out.fallbacks += [qualified_tag(run, t) for t in split.fallbacks]
        own_note = fallback_note(list(split.records.values()))
        frozen = tuple(dataclasses.replace(f, graph=run.name) for f in split.frozen_random)
        said = {own_note, *(f.text() for f in split.frozen_random)}
        out.warnings += [f"graph {run.name}: {w}" for w in split.warnings if w not in said]
        out.warnings += [f.text() for f in frozen]
        out.frozen_random += frozen
        out.cache_hits += split.cache_hits
        out.cache_misses += split.cache_misses
        out.compile_s += split.compile_s
        for backend, state in split.compile_state.items():
            out.compile_state.setdefault(backend, state)
    note = fallback_note(list(out.records.values()))
    if note:
        out.warnings.insert(0, note)
    new = [run for run in compiled.graphs if run.index is None]
    if new:
        out.warnings.append(f"dynamo compiled {len(new)} graph(s) the capture did not see (other inputs than "
                            "the capture's?); each was partitioned anew with the same settings: capture with these "
                            "inputs to see them")
    return out


def _same_inputs(multi: MultiGraphPartition, example_inputs: Any) -> None:
    """MeasureError when the inputs differ from those the model was captured with: dynamo
    specialised every graph to them (dynamic=False), as torch.compile would recompile for others."""
    captured = getattr(getattr(multi, "capture", None), "input_specs", ())
    given = input_specs(example_inputs)
    if captured and given != captured:
        raise MeasureError(f"hv.measure: these inputs ({_specs_text(given)}) are not the ones the model was captured "
                           f"with ({_specs_text(captured)}); torch.compile (dynamic=False) would compile other graphs "
                           "for them. Measure with the inputs it was captured with, or partition again with these: "
                           "hv.partition(model, inputs, config, ir='torch_compile').")


def _specs_text(specs: tuple) -> str:
    return ", ".join(f"{dtype.removeprefix('torch.')}{list(shape)}" for shape, dtype in specs) or "no tensors"


def measure_graphs(multi: MultiGraphPartition, example_inputs: Any, options: MeasureOptions) -> Any:
    """hv.measure(multi_graph_partition, example_inputs, ...): see the module docstring;
    `options` are hv.measure's, checked (example_inputs are the model's)."""
    if example_inputs is None:
        raise MeasureError("hv.measure of a multi-graph partition runs the whole model: pass its example inputs, "
                           "hv.measure(part, example_inputs).")
    _same_inputs(multi, example_inputs)
    source = model_of(multi, options.model)
    dev = checked_plan(multi, options.device, options.compilers, options.on_error)
    inputs = on_device(example_inputs, dev)
    n_subgraphs = sum(len(p.subgraphs) for p in multi.graphs)
    baseline, per_subgraph, warmup, iters = options.baseline, options.per_subgraph, options.warmup, options.iters
    bar = Progress(options.progress, n_subgraphs + 1 + int(baseline) + (n_subgraphs if per_subgraph else 0))
    try:
        with torch.no_grad(), fp32_precision(options.tf32):
            compiled = CompiledGraphs(multi, source, dev, {**options.compile_kwargs(), "progress": bar}, "hv.measure")
            output = compiled(*inputs)  # compiles every graph; a failure is raised here
            calls = {id(run): run.calls for run in compiled.graphs}
            call = lambda: compiled(*inputs)  # noqa: E731
            own: dict[str, Any] = {}
            ready = eager_call(private_copy(source), example_inputs, dev) if (baseline or options.check) else None
            if ready is not None and ready.call is None:
                own["eager"] = Baseline("eager", None, error=ready.error)
            wait_for_idle_workers()
            if baseline and ready is not None and ready.call is not None:
                eager_stats, stats = time_paired(ready.call, call, dev, warmup=warmup, iters=iters)
                own["eager"] = Baseline("eager", eager_stats, outputs=ready.outputs)
                bar.step("eager baseline timed")
            else:
                stats = time_fn(call, dev, warmup=warmup, iters=iters)
            bar.step("compiled model timed")
            checked: Compared = NOT_CHECKED
            if options.check and ready is not None and ready.call is not None:
                checked = compare(output, ready.outputs, options.rtol, options.atol)
            sub_total = 0.0
            if per_subgraph:
                for run in compiled.graphs:
                    if run.split is None:
                        continue
                    timed = time_submodules(run.split.module, list(run.split.records), run.first_args, dev,
                                            warmup=warmup, iters=iters, step=lambda name: bar.step(f"{name} timed"))
                    for tag, s in timed.items():
                        run.split.records[tag].stats = s
                        sub_total += s.median_ms * calls.get(id(run), 1)
            if options.torch_compile and ready is not None and ready.module is not None:
                own["torch_compile"] = time_compiled(ready.module, ready.inputs, dev, warmup, iters)
            ran = {r.ran for run in compiled.graphs if run.split is not None for r in run.split.records.values()}
            precision = precision_record(options.tf32, float_dtypes(inputs, output), ran)
    finally:
        bar.close()
        torch._dynamo.reset()  # nothing stays compiled
    return finish(TimedRun(split=summed(compiled), stats=stats, own=own, base_stats=None, checked=checked,
                           table=graph_table(compiled, calls),
                           glue_ms=(stats.median_ms - sub_total) if per_subgraph else math.nan,
                           precision=precision, device=dev, config=multi.config), options)


def graph_table(compiled: CompiledGraphs, calls: dict[int, int]) -> Any:
    """hv.measure's per_subgraph table of every graph, one after the other, with `graph` (the
    capture's index; -1 for a graph it did not see) and `calls` (how often that graph runs per
    call of the model) first; `share` is each subgraph's part of the model's subgraph time
    (its median times its graph's calls)."""
    tables, graphs = [], []
    for run in compiled.graphs:
        if run.split is not None:
            table = per_subgraph_table(run.split.records)
            table.insert(0, "calls", calls.get(id(run), 1))
            tables.append(table)
            graphs.append(-1 if run.index is None else run.index)
    if not tables:
        return stacked(tables, graphs, ["calls", *PER_SUBGRAPH_COLUMNS])
    table = stacked(tables, graphs)
    weighted = table["median_ms"] * table["calls"]
    total = weighted.sum()
    table["share"] = weighted / total if total > 0 else math.nan
    return table


__all__ = ["measure_graphs", "graph_table", "summed"]
