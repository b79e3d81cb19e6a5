"""`hv.Repro`: the smallest part of a failed TensorRT subgraph that fails the same way, and a
standalone repro of it to file upstream (`Builds.repro()`, `repro_of`).

The part is found by `reduction.smallest_failing` (bisection, then delta debugging), every
trial built through a SubgraphBuilder, so trials are kept in the build cache and a second
search builds nothing. `save(folder)` writes repro.pt2, repro.py and README.md
(repro_files) and runs repro.py in a fresh process.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.utils._pytree as pytree

from hierviz import trt
from hierviz.building import repro_files
from hierviz.building.build_row import BuildRow
from hierviz.building.graph_run import OP_ERRORS, first_failure
from hierviz.building.reduction import call_nodes, part_of, signature, smallest_failing
from hierviz.building.subgraph_builds import SubgraphBuilder
from hierviz.capturing.aten_capture import source_of
from hierviz.capturing.example_inputs import example_from_graph
from hierviz.capturing.model_copy import private_copy
from hierviz.errors import ConfigError, MeasureError
from hierviz.foundation.error_text import first_line, short_error
from hierviz.foundation.opnames import overload_names
from hierviz.partitioner import MultiGraphPartition

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.building.builds import Builds
    from hierviz.partitioner import Partition

FAILED = ("convert", "build")
# what torch.export and Torch-TensorRT's lowering raise on a part they cannot take: what running an op raises,
# a missing attribute or key
_EXPORT_ERRORS: tuple[type[Exception], ...] = (*OP_ERRORS, LookupError, AttributeError)
REDUCED = ("run", "convert", "build")  # the stages a repro is made for ("run": Torch-TensorRT's lowering broke it)


@dataclass(frozen=True)
class Repro:
    """The smallest part of subgraph `subgraph` found to fail as it does.

    `nodes`: their names, in order (the split module's node names, which are the user's graph's);
    `graph`: the part as a GraphModule (inputs from outside are placeholders carrying their
    `meta['val']`); `stage`, `exception`, `error`: the failure; `of`: the subgraph's call nodes;
    `builds`: parts built in the search, the ones the build cache answered included (`cached` of
    them); `seconds` it took; `builder`: the TensorRT that built them; `settings`: what repro.py
    passes to `torch_tensorrt.dynamo.compile`; `verified`: None until `save` ran repro.py, then
    whether it reproduced the failure in a fresh process."""

    subgraph: str
    nodes: tuple[str, ...]
    graph: torch.fx.GraphModule = field(repr=False, compare=False)
    stage: str
    exception: str
    error: str
    of: int
    builds: int
    cached: int = 0
    seconds: float = 0.0
    builder: str = ""
    settings: dict = field(default_factory=dict, compare=False)
    verified: bool | None = None

    @property
    def signature(self) -> tuple[str, str, str]:
        """(stage, exception class, error line with node names, numbers and addresses masked): docs/repro.md."""
        stage, exception, text, _ = signature(self.stage, self.exception, self.error,
                                              [n.name for n in self.graph.graph.nodes])
        return stage, exception, text

    def headline(self) -> str:
        """'12 of 118 nodes of _run_on_acc_tensorrt_0 fail at build (Myelin CHECK(...)), found in 12 builds'."""
        if self.stage == "run":
            text = (f"{len(self.nodes)} of {self.of} nodes of the model's exported graph fail in PyTorch once "
                    f"Torch-TensorRT lowered them, as {self.subgraph} does ({short_error(self.error)}), found in "
                    f"{self.builds} lowerings")
        else:
            text = (f"{len(self.nodes)} of {self.of} nodes of {self.subgraph} fail at {self.stage} "
                    f"({short_error(self.error)}), found in {self.builds} builds")
        if self.cached:
            text += f" ({self.cached} from the build cache)"
        if self.verified is True:
            text += "; verified: repro.py fails the same way in a fresh process"
        elif self.verified is False:
            text += "; not verified: repro.py did not fail the same way in a fresh process (see its repro.log)"
        return text

    def __repr__(self) -> str:
        return f"<hv.Repro: {self.headline()}>"

    def issue_text(self) -> str:
        """A Markdown issue body: the error, the versions and builder, the nodes with the user's
        source lines, and how to run the repro."""
        if self.stage == "run":
            return self._lowering_issue_text()
        v = repro_files.versions()
        kwargs = ", ".join(f"{k}={value!r}" for k, value in self.settings.items())
        lines = [f"## {self.stage.capitalize()} failure: {short_error(self.error)}", "",
                 f"Torch-TensorRT fails to {'convert' if self.stage == 'convert' else 'build'} this graph of "
                 f"{len(self.nodes)} nodes (the smallest failing part of {self.of} nodes, found by hierviz) with "
                 f"`{self.exception}`:", "", "```", self.error, "```", "",
                 "### Versions", "", f"- torch {v['torch']}", f"- torch_tensorrt ({v['torch_tensorrt']})",
                 f"- TensorRT {v['TensorRT']}", f"- builder: {self.builder}", "",
                 "### The nodes and the lines that made them", "", *repro_files.node_lines(self.graph), "",
                 "### To run it", "",
                 "`repro.pt2` is the part as an ExportedProgram; `repro.py` (torch and torch_tensorrt only) loads it "
                 "and calls", "", "```python",
                 f"torch_tensorrt.dynamo.compile(ep, inputs, {kwargs})",
                 "```", "",
                 "`python repro.py` exits 1 when the failure reproduces, 0 when it builds (without a GPU: when "
                 "the engine was built and only loading it failed), 2 when it fails another way.", "",
                 "```python", str(self.graph.code).strip(), "```", ""]
        return "\n".join(lines)

    def _lowering_issue_text(self) -> str:
        """issue_text() of a lowering that makes a graph PyTorch cannot run."""
        v = repro_files.versions()
        return "\n".join([
            f"## Lowering makes a graph PyTorch cannot run: {short_error(self.error)}", "",
            f"Torch-TensorRT's lowering (`pre_export_lowering`, its decompositions, `post_lowering`, as "
            f"`torch_tensorrt.dynamo.compile` runs them) turns this exported graph of {len(self.nodes)} nodes (the "
            f"smallest failing part of the model's {self.of}, found by hierviz) into one that raises "
            f"`{self.exception}` when PyTorch runs it:", "", "```", self.error, "```", "",
            "### Versions", "", f"- torch {v['torch']}", f"- torch_tensorrt ({v['torch_tensorrt']})",
            f"- TensorRT {v['TensorRT']}", "",
            "### The nodes and the lines that made them", "", *repro_files.node_lines(self.graph), "",
            "### What the lowering makes of them", "", "```python",
            str(lowered(repro_files.exported(self.graph, "real")).code).strip(), "```", "",
            "### To run it", "",
            "`repro.pt2` is the part as an ExportedProgram, before any lowering; `repro.py` (torch and torch_tensorrt "
            "only) lowers it with `torch_tensorrt.dynamo.lowering` and runs the lowered graph on inputs of its "
            "shapes. `python repro.py` exits 1 when it fails the same way, 0 when the lowered graph runs, 2 when it "
            "fails another way.", "",
            "```python", str(self.graph.code).strip(), "```", ""])

    def save(self, folder: str | Path, weights: str = "real") -> "Repro":
        """Write repro.pt2 (the part exported, with its weights, or random ones of the same shapes
        and dtypes with `weights="random"`), repro.py and README.md into `folder`, run repro.py in
        a fresh process (its output in repro.log) and return this Repro with `verified` set; this
        one is left as it was."""
        out = Path(folder)
        if out.exists() and not out.is_dir():
            raise ConfigError(f"Repro.save({str(folder)!r}): that is a file; give a folder (it is made if missing).")
        out.mkdir(parents=True, exist_ok=True)
        torch.export.save(repro_files.exported(self.graph, weights), str(out / "repro.pt2"))
        (out / "repro.py").write_text(repro_files.script(self.headline(), self.signature, self.graph, self.settings,
                                                         lowering=self.stage == "run"))
        (out / "README.md").write_text(self.issue_text())
        code, _ = repro_files.run_script(out)
        return dataclasses.replace(self, verified=code == 1)


def _failed_row(builds: "Builds", subgraph: str | None) -> BuildRow:
    """The row of the failed subgraph to reduce: `subgraph` ('_run_on_acc_tensorrt_0', or
    'g1/_run_on_acc_tensorrt_0' across graphs), else the first that failed to convert or build."""
    failed = [r for r in builds.rows if r.stage in REDUCED]
    named = [r.name for r in failed]
    if subgraph is None:
        if not failed:
            raise ConfigError("Builds.repro(): no engine failed to convert or build, and no lowered graph failed in "
                              f"PyTorch, so there is nothing to reproduce ({builds.headline()}).")
        return failed[0]
    for name, row in zip(named, failed):
        if subgraph in (name, row.subgraph):
            return row
    raise ConfigError(f"Builds.repro({subgraph!r}): that subgraph did not fail to convert or build, nor in PyTorch; "
                      f"the ones that did: {', '.join(named) or 'none'}.")


def _compile_settings(part: "Partition", builder: SubgraphBuilder) -> dict:
    """What repro.py passes to torch_tensorrt.dynamo.compile: every op in a TensorRT engine
    (min_block_size=1), the builder's own error raised, and the settings the part was built with."""
    settings: dict[str, Any] = {"min_block_size": 1, "pass_through_build_failures": True}
    forced = getattr(getattr(part, "config", None), "torch_executed_ops", None)
    if forced:  # as Torch-TensorRT matches them: each overload by its name
        settings["torch_executed_ops"] = sorted({n for op in forced for n in overload_names(str(op))})
    settings.update(builder.trt_settings or {})
    if builder.tf32:
        settings["disable_tf32"] = False
    return settings


def repro_of(builds: "Builds", part: "Partition | MultiGraphPartition", subgraph: str | None = None,
             builder: SubgraphBuilder | None = None) -> Repro:
    """The smallest failing part of a failed subgraph of `part` (`builds` = part.build()):
    `subgraph` names it (default: the first that failed to convert or build); `builder` builds
    the trials (default: one with default settings; give the one `builds` was made with when
    it had trt_settings or tf32)."""
    row = _failed_row(builds, subgraph)
    if row.stage == "run":
        return _lowering_repro(part, row)
    graph_part = part.graphs[int(row.graph[1:])] if isinstance(part, MultiGraphPartition) else part
    gm = getattr(graph_part.module, row.subgraph)
    builder = builder if builder is not None else SubgraphBuilder()
    made, _ = builder.build(gm, label=row.subgraph)
    if made.stage not in FAILED:
        raise ConfigError(f"Builds.repro(): {row.subgraph} builds with this builder's settings but failed in "
                          f"these Builds: pass builder= with the settings the Builds were made with.")
    found = smallest_failing(gm, lambda g: builder.build(g, label=row.subgraph))
    made, _ = builder.build(found.graph)  # the part's own error (same signature, its own sizes); already built
    return Repro(row.subgraph, found.nodes, found.graph, made.stage, made.exception or "", made.error or "",
                 len(call_nodes(gm)), found.builds, found.cached, round(found.seconds, 3),
                 trt.builder_name() or "", _compile_settings(graph_part, builder))


@dataclass(frozen=True)
class _Ran:
    """What lowering a part and running it in PyTorch gave: stage 'run' (it raised `exception`
    with `error`, 'Type: first line'), 'lower' (the export or the lowering itself raised) or 'ran'."""

    stage: str
    exception: str | None = None
    error: str | None = None


def lowered(ep: torch.export.ExportedProgram) -> torch.fx.GraphModule:
    """Torch-TensorRT's lowering of `ep` (changed: pass a copy), as torch_tensorrt.dynamo.compile
    runs it with default settings: pre_export_lowering, its decompositions, post_lowering."""
    lowering, settings = trt.lowering(), trt.default_settings()
    with trt.answer_cuda_queries(), trt.lowering_device():
        ep = lowering.pre_export_lowering(ep, settings)
        ep = ep.run_decompositions(lowering.get_decompositions(settings.enable_experimental_decompositions))
        return lowering.post_lowering(ep.module(), settings)


def lowered_run(part: torch.fx.GraphModule) -> tuple[_Ran, bool]:
    """(what it gave, False: never from a cache) for `part` exported as repro.pt2 holds it,
    lowered by Torch-TensorRT and run in PyTorch on inputs of its placeholders' shapes, as
    repro.py does."""
    try:
        gm = lowered(repro_files.exported(part, "real"))
    except _EXPORT_ERRORS as exc:  # what torch.export and the lowering raise on a part
        # that does not export or lower: not the failure searched for
        return _Ran("lower", type(exc).__name__, first_line(exc)), False
    failure = first_failure(gm, repro_files.made_inputs(repro_files.example_inputs(part)))
    if failure is None:
        return _Ran("ran"), False
    return _Ran("run", failure.exception, failure.error), False


def _dynamic_shapes(model: Any, graph: torch.fx.GraphModule, args: Any, kwargs: Any) -> Any:
    """torch.export's dynamic_shapes for the capture's dynamic dimensions (those its placeholders
    hold as SymInts), by the forward's argument names; None when every size is static."""
    flat = []
    for n in graph.graph.nodes:
        if n.op == "placeholder":
            val = n.meta.get("val")
            dims = {i: torch.export.Dim.DYNAMIC for i, d in enumerate(getattr(val, "shape", ()))
                    if isinstance(d, torch.SymInt)}
            flat.append(dims or None)
    if not any(flat):
        return None
    shape_args, shape_kwargs = pytree.tree_unflatten(flat, graph._in_spec)
    bound = inspect.signature(model.forward).bind(*shape_args, **shape_kwargs)
    return dict(bound.arguments)


def exported_model(part: "Partition") -> torch.fx.GraphModule:
    """The graph torch.export gives for the model `part` was captured from, functional (aten ops
    without in-place writes) and before any Torch-TensorRT lowering, on inputs shaped like the
    capture's (random floats, zero integers): where a lowering's failure is searched for."""
    graph = part.graph
    model = source_of(graph)
    if model is None or getattr(graph, "_in_spec", None) is None:
        raise ConfigError("Builds.repro(): the lowered graph fails in PyTorch, and its repro is made from the model "
                          "exported before Torch-TensorRT's lowering, but the model this partition was captured from "
                          "is not reachable (a saved or loaded partition, or a graph given as a GraphModule whose "
                          "model is gone): call hv.partition(model, example_inputs, ...).build().repro() in this "
                          "process.")
    if isinstance(model, torch.export.ExportedProgram):
        ep = model
    else:
        try:
            args, kwargs = pytree.tree_unflatten(list(example_from_graph(graph)), graph._in_spec)
        except MeasureError as exc:
            raise ConfigError(f"Builds.repro(): the model is exported again to find the lowering's failure, and {exc}"
                              ) from exc
        ep = torch.export.export(private_copy(model), tuple(args), kwargs=kwargs, strict=False,
                                 dynamic_shapes=_dynamic_shapes(model, graph, args, kwargs))
    gm = ep.run_decompositions({}).module()  # functional: an in-place write is a value a part can return
    for n in [n for n in gm.graph.nodes if n.op == "call_module" and not n.users]:  # export's guard check
        gm.graph.erase_node(n)
    gm.recompile()
    whole = part_of(gm, call_nodes(gm))  # its weights and outputs as every part's are
    assert whole is not None  # a graph's call nodes make a part of it
    return whole


def _lowering_repro(part: "Partition | MultiGraphPartition", row: BuildRow) -> Repro:
    """The repro of a lowering that makes subgraph `row` fail in PyTorch: the smallest part of the
    model's exported graph whose lowered form fails in PyTorch the same way."""
    if isinstance(part, MultiGraphPartition):
        raise ConfigError(f"Builds.repro({row.name!r}): a lowered graph that fails in PyTorch is reproduced from the "
                          "model exported with torch.export; this one came from torch.compile's path "
                          "(ir='torch_compile'): partition the model with ir='dynamo' and call build().repro() on it.")
    if row.error and row.error.startswith("at the profile's"):
        raise ConfigError(f"Builds.repro({row.name!r}): {row.subgraph} fails in PyTorch only {row.error.split(':')[0]} "
                          "of its optimization profile, not because the lowering broke it; narrow the dynamic "
                          "dimension's range (or change the model's line) instead.")
    gm = exported_model(part)
    whole, _ = lowered_run(gm)
    if whole.stage != "run":
        raise ConfigError(f"Builds.repro({row.name!r}): the model's exported graph, lowered by Torch-TensorRT, runs "
                          f"in PyTorch here ({whole.stage}{': ' + whole.error if whole.error else ''}), although "
                          f"{row.subgraph} failed ({row.error}); there is no failure to reduce.")
    found = smallest_failing(gm, lowered_run)
    made, _ = lowered_run(found.graph)
    return Repro(row.subgraph, found.nodes, found.graph, "run", made.exception or "", made.error or "",
                 len(call_nodes(gm)), found.builds, 0, round(found.seconds, 3), trt.builder_name() or "", {})


__all__ = ["Repro", "exported_model", "lowered", "lowered_run", "repro_of"]
