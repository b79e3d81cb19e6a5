"""`Partition.build()` and `MultiGraphPartition.build()`: every TensorRT engine converted and built
on this machine, with what Torch-TensorRT then runs and a fix shown to build.

For one graph: the lowered graph is run once in PyTorch on its example inputs (graph_run), on a
thread of its own while TensorRT builds the first engine (the CPU its builder leaves; after the
builds when none is built); every TensorRT subgraph is converted and built (subgraph_builds,
through the engine store);
each failure gets what Torch-TensorRT then really runs on this `ir` (after_failure); a failed
conversion or build gets the ops that, moved to PyTorch, make every engine build (engine_fix).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from hierviz import trt
from hierviz.building.after_failure import runs_instead
from hierviz.building.build_row import BuildRow
from hierviz.building.builds import Builds
from hierviz.building.engine_fix import Fix, change_text, find_fix
from hierviz.building.fix_cost import FixCost
from hierviz.building.fix_trials import FixTrials
from hierviz.building.frozen_random import FrozenRandom, frozen_random
from hierviz.building.graph_run import RunFailure
from hierviz.building.optimization_profiles import profile_text
from hierviz.building.subgraph_builds import SubgraphBuilder, no_builder, tensorrt_tags
from hierviz.errors import ConfigError, ConfigWarning, MeasureError, TensorRTUnavailableError
from hierviz.foundation.arguments import check_bool
from hierviz.capturing.example_inputs import example_from_graph
from hierviz.capturing.inputs import check as check_inputs
from hierviz.partitioner import partition_graph
from hierviz.partitioner.by_graph.per_graph import per_graph

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import MultiGraphPartition, Partition

RUN_FIX = ("not a conversion failure: Torch-TensorRT's lowering made a graph PyTorch cannot run; no "
           "torch_executed_ops changes the lowering: change the model's line that made this node")
FIXABLE = ("convert", "build")  # the stages a torch_executed_ops fix can change
CORNER_FIX = ("not a conversion failure: the engine's optimization profile admits {at}, where the graph fails in "
              "PyTorch; no torch_executed_ops changes that: narrow the dynamic dimension's range to sizes the model "
              "takes (Torch-TensorRT starts a range recorded from 2 at 1), or change the model's line that made this "
              "node")


def _check(fix: Any, cache: Any, tf32: Any, trt_settings: Any) -> None:
    for name, value in (("fix", fix), ("cache", cache), ("tf32", tf32)):
        check_bool(value, f"build({name}=...)")
    if trt_settings is not None and not isinstance(trt_settings, dict):
        raise ConfigError(f"build(trt_settings=...) is a dict of Torch-TensorRT CompilationSettings fields that act at "
                          f"conversion (e.g. {{'optimization_level': 5}}), as hv.measure takes, not "
                          f"{type(trt_settings).__name__}.")
    trt.check_settings(trt_settings)  # before anything converts, and before the cache is read


def _subgraph_row(part: "Partition", ir: str, graph: str, tag: str, built: tuple[trt.EngineBuild, bool],
                  failure: RunFailure | None) -> BuildRow:
    """The row of TensorRT subgraph `tag`: its build (what it gave, whether from the cache), or
    the run failure inside it."""
    sub = getattr(part.module, tag)
    made, cached = built
    sg = part.subgraph(tag)
    common: dict[str, Any] = {
        "subgraph": tag, "ops": sg.compute_ops, "profile": profile_text(sub), "layers": made.layers,
        "engine_bytes": made.engine_bytes, "convert_s": round(made.convert_s, 4),
        "build_s": None if made.build_s is None else round(made.build_s, 4), "cached": cached, "graph": graph,
        "exception": made.exception}
    if failure is not None and failure.node in sg.nodes:
        error = f"at {failure.at}: {failure.error}" if failure.at else failure.error
        return BuildRow(**common, stage="run", node=failure.node, error=error, details=error, source=failure.source,
                        at=failure.at, runs_instead=_after_run(ir, made, graph),
                        fix=CORNER_FIX.format(at=failure.at) if failure.at else RUN_FIX)
    return BuildRow(**common, stage=made.stage, node=made.node, error=made.error, details=made.details,
                    runs_instead=None if made.stage == "built" else runs_instead(ir, made.exception or "RuntimeError",
                                                                                 graph))


def _after_run(ir: str, made: trt.EngineBuild, graph: str) -> str:
    """What Torch-TensorRT does with a subgraph that PyTorch cannot run: it never runs the
    graph, so its conversion decides."""
    if made.stage == "built":
        return ("Torch-TensorRT never runs the lowered graph: it builds this engine (it built here), which "
                "computes what the broken graph says; its outputs are unchecked")
    return runs_instead(ir, made.exception or "RuntimeError", graph) + f" (its {made.stage} fails too: {made.error})"


def _inputs(part: "Partition", example_inputs: Sequence[Any] | None) -> tuple[Sequence[Any] | None, str]:
    """(the flat inputs the lowered graph runs on, why there are none): the user's (checked
    against what the graph was captured for), else random ones shaped like its inputs, on the
    device its values were captured on; none when an input has no shape, or that device is not
    on this machine."""
    if example_inputs is not None:
        return check_inputs(part.graph, example_inputs, who="part.build", error=ConfigError), ""
    try:
        return example_from_graph(part.graph), ""
    except MeasureError as exc:
        return None, str(exc)


@dataclass(frozen=True)
class GraphBuild:
    """What building one graph's TensorRT subgraphs gave: a row per subgraph, the graph's run
    failure outside every TensorRT subgraph (None: none), the fix found (None: none searched or
    none needed), notes and the random ops the built engines freeze."""

    rows: tuple[BuildRow, ...]
    outside: RunFailure | None
    fix: Fix | None
    notes: tuple[str, ...]
    frozen: tuple[FrozenRandom, ...] = ()


def _one_graph(part: "Partition", builder: SubgraphBuilder, ir: str, graph: str, example_inputs: Sequence[Any] | None,
               fix: bool, frame: str = "", flat_inputs: bool = False) -> GraphBuild:
    """The GraphBuild of one graph; `frame`: where the graph's code is, for a lowered graph that keeps no line per node;
    `flat_inputs`: `example_inputs` are one value per placeholder already (a dynamo graph's)."""
    notes: list[str] = []
    inputs, why = ((example_inputs, "") if flat_inputs and example_inputs is not None
                   else _inputs(part, example_inputs))
    # the run stage, once: beside TensorRT's first build (on the CPU the builder leaves), else after the builds
    run = functools.cache(lambda: builder.run(part.graph, inputs) if inputs is not None else None)
    built = {tag: builder.build(getattr(part.module, tag), label=tag, alongside=run) for tag in tensorrt_tags(part)}
    failure = run() if built else None
    if failure is not None and not failure.source and frame:
        failure = dataclasses.replace(failure, source=f"{frame} (the graph's frame: its lowered graph keeps no "
                                                      "line per node)")
    if inputs is None and tensorrt_tags(part):
        notes.append(f"{graph or 'the graph'} was not run in PyTorch first ({why}); its engines were still converted "
                     "and built")
    rows = [_subgraph_row(part, ir, graph, tag, built[tag], failure) for tag in built]
    failing = [r.subgraph for r in rows if r.stage in FIXABLE]
    found = None
    if failing and fix:
        found = find_fix(part, failing, FixTrials(builder), partition_graph)
        rows = [dataclasses.replace(r, fix=found.text) if r.stage in FIXABLE else r for r in rows]
    outside = failure if failure is not None and not any(r.stage == "run" for r in rows) else None
    frozen = frozen_random(part, [r.subgraph for r in rows if r.built], graph)
    return GraphBuild(tuple(rows), outside, found, tuple(notes) + tuple(f.text() for f in frozen), frozen)


def _builder_facts() -> tuple[str, bool]:
    name = trt.builder_name()
    if name is None:
        raise TensorRTUnavailableError(f"part.build(): {no_builder()}.")
    return name, trt.builds_without_gpu()


def build(part: "Partition", *, trt_settings: Any = None, tf32: bool = False, fix: bool = True, cache: bool = True,
          example_inputs: Sequence[Any] | None = None, ir: str = "dynamo", graph: str = "",
          dynamo_graph: tuple[str, tuple] | None = None) -> Builds:
    """Every TensorRT subgraph of `part` converted and built (Partition.build). A graph of a
    MultiGraphPartition (`dynamo_graph`, else `part.dynamo_graph`: its name and its first call's
    values) answers for torch.compile's path: it runs on those values, and a failure says what
    torch.compile then runs."""
    _check(fix, cache, tf32, trt_settings)
    name, on_cpu = _builder_facts()
    builder = SubgraphBuilder(trt_settings, tf32, cache)
    flat = False
    dynamo_graph = dynamo_graph if dynamo_graph is not None else part.dynamo_graph
    if dynamo_graph is not None and example_inputs is None:
        (graph, example_inputs), ir, flat = dynamo_graph, "torch_compile", True
    got = _one_graph(part, builder, ir, graph, example_inputs, fix, flat_inputs=flat)
    found = got.fix
    return Builds(rows=tuple(dataclasses.replace(r, graph="") for r in got.rows),  # one graph: its rows name none
                  builder=name, on_cpu=on_cpu, ir=ir, fix=found.ops if found else None,
                  fix_text=found.text if found else "",
                  run_failures=((graph, got.outside),) if got.outside else (), notes=got.notes + builder.notes(),
                  fixed_partition=found.partition if found else None, fix_builds=found.builds if found else 0,
                  fix_cached=found.cached if found else 0, fix_tested=found.tried if found else 0,
                  partition=part, subgraph_builder=builder,
                  fix_settings=({**(trt_settings or {}), **found.settings} if found and found.settings else None),
                  fix_cost=found.cost if found else None, fix_reductions=found.reductions if found else 0,
                  frozen_random=got.frozen,
                  fix_frozen_random=found.frozen_random if found else ())


def build_one(part: "Partition", dynamo_graph: str | None = None, inputs: Sequence[Any] | None = None) -> Builds:
    """`part.build()`, or, for `dynamo_graph` ("g3": the graph is that dynamo graph of
    torch.compile's path, `inputs` its first call's values, one per placeholder), that graph's
    part of MultiGraphPartition.build(): what the Explorer's "build engines" runs. `part` is
    not changed, and this build is not recorded as its last."""
    if dynamo_graph is not None and inputs is not None:
        return build(part, dynamo_graph=(dynamo_graph, tuple(inputs)))
    return build(part)


def build_graphs(mp: "MultiGraphPartition", *, trt_settings: Any = None, tf32: bool = False, fix: bool = True,
                 cache: bool = True) -> Builds:
    """Every TensorRT subgraph of every graph of a MultiGraphPartition (MultiGraphPartition.build):
    torch.compile's path, so a failure runs its whole graph eagerly where Torch-TensorRT's
    backend catches it. The fix is every graph's fix together, shown to build in every graph."""
    _check(fix, cache, tf32, trt_settings)
    name, on_cpu = _builder_facts()
    builder = SubgraphBuilder(trt_settings, tf32, cache)
    rows: list[BuildRow] = []
    outside: list[tuple[str, RunFailure]] = []
    fixes: list[Fix | None] = []
    notes: list[str] = []
    frozen: list[FrozenRandom] = []
    labels = [f"g{k}" for k in range(len(mp))]

    def one(part: "Partition", label: str, dg: Any) -> GraphBuild:
        frame = f"{dg.file}:{dg.line} in {dg.function}" if dg.file else ""
        return _one_graph(part, builder, "torch_compile", label, dg.example_inputs, fix, frame, flat_inputs=True)

    for label, got in zip(labels, per_graph(one, mp, labels, mp.capture.graphs)):
        rows.extend(got.rows)
        notes.extend(got.notes)
        frozen.extend(got.frozen)
        if got.outside is not None:
            outside.append((label, got.outside))
        if any(r.stage in FIXABLE for r in got.rows):
            fixes.append(got.fix)
    whole, settings, text, fixed, cost = _together(mp, builder, fixes)
    fix_frozen = () if fixed is None else tuple(
        f for label, g in zip(labels, fixed.graphs) for f in frozen_random(g, tensorrt_tags(g), label))
    text += "".join(f"; {f.text()}" for f in fix_frozen)
    return Builds(rows=tuple(rows), builder=name, on_cpu=on_cpu, ir="torch_compile", fix=whole, fix_text=text,
                  run_failures=tuple(outside), by_graph=True,
                  notes=tuple(notes) + builder.notes(), fixed_partition=fixed,
                  fix_builds=sum(f.builds for f in fixes if f is not None),
                  fix_cached=sum(f.cached for f in fixes if f is not None),
                  fix_tested=sum(f.tried for f in fixes if f is not None), partition=mp, subgraph_builder=builder,
                  fix_settings=settings, fix_cost=cost,
                  fix_reductions=sum(f.reductions for f in fixes if f is not None),
                  frozen_random=tuple(frozen), fix_frozen_random=fix_frozen)


def _together(mp: "MultiGraphPartition", builder: SubgraphBuilder, fixes: list[Fix | None]) -> tuple[
        frozenset[str] | None, dict[str, Any] | None, str, "MultiGraphPartition | None", FixCost | None]:
    """Every graph's fix together (their ops and settings), shown to build in every graph:
    (torch_executed_ops, trt_settings or None when it adds none, the words, the partition, the
    cost); no fix when one graph has none or they do not build together."""
    if not fixes or not all(f is not None and f.ops is not None for f in fixes):
        return None, None, "", None, None
    whole = frozenset().union(*(f.ops for f in fixes if f is not None and f.ops is not None))
    added: dict[str, Any] = {}
    for f in fixes:
        added.update(f.settings if f is not None else {})
    with warnings.catch_warnings():  # one graph's ops are not in every graph: no mistake of the user's
        warnings.simplefilter("ignore", ConfigWarning)
        again = mp.repartitioned(mp.config.replace(torch_executed_ops=set(whole)))
    kept = any(tensorrt_tags(g) for g in again.graphs)
    trials = FixTrials(builder)
    if not kept or any(trials.first_failure(g, added) is not None for g in again.graphs):
        return None, None, ("each graph's fix builds alone, but not all of them together" if kept else
                            "each graph's fix builds alone, but together they leave no TensorRT engine"), None, None
    moved = tuple(sorted({op for f in fixes if f is not None for op in f.added}))
    settings = {**trials.settings, **added} if added else None
    cost = FixCost.between(mp, again, moved)
    change = change_text(whole if moved or not settings else None, settings)
    return whole, settings, f"{change}: every engine of every graph builds; {cost.text()}", again, cost


__all__ = ["build", "build_graphs", "build_one"]
