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
from hierviz.building.graph_run import first_failure
from hierviz.building.reduction import call_nodes, part_of, signature, smallest_failing
from hierviz.building.repro_outside import OP_NAME, inputs_and_outputs, made_by_ops, used_by_ops
from hierviz.building.repro_partition import left_to_pytorch
from hierviz.building.repro_shapes import ReproShapes, shapes_of
from hierviz.building.subgraph_builds import SubgraphBuilder
from hierviz.capturing.aten_capture import source_of
from hierviz.capturing.example_inputs import example_from_graph
from hierviz.capturing.model_copy import private_copy
from hierviz.errors import ConfigError, MeasureError
from hierviz.foundation.error_text import first_line, short_error
from hierviz.foundation.opnames import overload_names
from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.partition_result import Partition

FAILED = ("convert", "build")
# why a lowering's repro holds static shapes where the model's graph had dynamic dimensions
RUN_STATIC = "a lowering's failure is searched for, and shown, at the example's sizes"


def _nodes(count: int) -> str:
    return f"{count} node" if count == 1 else f"{count} nodes"


@dataclass(frozen=True)
class Repro:
    """The smallest part of subgraph `subgraph` found to fail as it does.

    `nodes`: their names, in order (the split module's node names, which are the user's graph's);
    `graph`: the part as a GraphModule (inputs from outside are placeholders carrying their
    `meta['val']`); `stage`, `exception`, `error`: the failure; `of`: the subgraph's call nodes;
    `builds`: parts built in the search, the ones the build cache answered included (`cached` of
    them); `seconds` it took; `builder`: the TensorRT that built them; `settings`: what repro.py
    passes to `torch_tensorrt.dynamo.compile`; `verified`: None until `save` ran repro.py, then
    whether it reproduced the failure in a fresh process; `exit_status`: repro.py's there (1 it
    reproduced, 0 it built or, for a lowering, ran; 2 it failed another way; -1 stopped at its time
    limit), None until `save` ran it; `static_shapes`: why repro.pt2 holds the example's sizes
    where the part has dynamic dimensions ('' when it keeps them, or has none); `made_outside`: the
    part's inputs that an op of the model made (none of the model's own inputs), `used_outside`:
    its outputs that an op of the model uses (none the model returns): repro.pt2 passes them
    through `hierviz_repro::outside`, so that Torch-TensorRT's partitioner sees them made and used
    by ops, as it did in the model (repro_outside; () for a lowering's repro); `left_to_pytorch`:
    set by `save` when repro.py built it, the part's ops that Torch-TensorRT's partitioner leaves
    to PyTorch in repro.pt2 (qualified names), which in the model it took into the engine: the
    context the repro lacks, so repro.py built another engine (repro_partition)."""

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
    exit_status: int | None = None
    static_shapes: str = ""
    made_outside: tuple[str, ...] = ()
    used_outside: tuple[str, ...] = ()
    left_to_pytorch: tuple[str, ...] = ()

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
        said = self.outcome()
        return f"{text}; {said}" if said else text

    def outcome(self, log: str = "its repro.log") -> str:
        """What repro.py showed in a fresh process, in words; '' before `save` ran it. `log`: how
        to name its output ('its repro.log', or the file's path)."""
        code = self.exit_status
        if self.verified is True or code == 1:
            return "verified: repro.py fails the same way in a fresh process"
        why = f" (repro.pt2 has static shapes: {self.static_shapes})" if self.static_shapes else ""
        if code == 0:
            did = "lowers and runs" if self.stage == "run" else "builds"
            return (f"did not reproduce: repro.py {did} it without the failure in a fresh process{why}"
                    f"{self._left_said()} (see {log})")
        if code == -1:
            return f"not verified: repro.py ran past {repro_files.RUN_LIMIT_S} s in a fresh process and was stopped"
        if code is not None:
            return f"not verified: repro.py failed another way in a fresh process{why} (see {log})"
        if self.verified is False:
            return f"not verified: repro.py did not fail the same way in a fresh process (see {log})"
        return ""

    def __repr__(self) -> str:
        return f"<hv.Repro: {self.headline()}>"

    def _static_because(self, shapes: ReproShapes) -> str:
        """Why repro.pt2 holds static shapes ('' when it keeps the part's dynamic dimensions)."""
        if self.stage == "run" and shapes.dynamic:
            return RUN_STATIC
        return self.static_shapes

    def _shown(self) -> bool:
        return self.verified is True or self.exit_status == 1

    def _not_shown(self, what: str) -> tuple[str, str]:
        """(the title, the sentence in bold) of a README whose failure repro.py did not show; `what`:
        the failure in a few words."""
        code = self.exit_status
        why = f" (repro.pt2 has static shapes: {self.static_shapes})" if self.static_shapes else ""
        if code == 0:
            did = "lowers and runs" if self.stage == "run" else "builds"
            return (f"## Did not reproduce: {what}",
                    f"`repro.py` did not reproduce it: in a fresh process it {did}{why}{self._left_said()}. This is "
                    "what hierviz saw, not a failure `repro.py` shows.")
        if code == -1:
            return (f"## Not verified: {what}",
                    f"Not verified: `repro.py` ran past {repro_files.RUN_LIMIT_S} s in a fresh process and was "
                    "stopped.")
        if code is not None or self.verified is False:
            return (f"## Not verified: {what}",
                    f"Not verified: `repro.py` failed another way in a fresh process{why} (its output is in "
                    "repro.log).")
        return (f"## Not verified: {what}",
                "Not verified: `repro.py` has not been run (`Repro.save` writes it and runs it in a fresh process).")

    def _left_said(self) -> str:
        """'; Torch-TensorRT's partitioner leaves ... to PyTorch there ...' when it does, else ''."""
        if not self.left_to_pytorch:
            return ""
        ops = ", ".join(self.left_to_pytorch)
        return (f"; Torch-TensorRT's partitioner leaves {ops} to PyTorch in repro.pt2, which in the model it took "
                "into the engine, so repro.py builds another engine")

    def _outside_lines(self) -> list[str]:
        """The README's paragraph on the inputs ops of the model made and the outputs they use ([]
        when there are none)."""
        made, used = (", ".join(f"`{name}`" for name in names) for names in (self.made_outside, self.used_outside))
        if not made and not used:
            return []
        said = " and ".join(part for part in (f"ops of the model made {made}" if made else "",
                                              f"ops of the model use {used}" if used else "") if part)
        both = ", ".join(f"`{name}`" for name in (*self.made_outside, *self.used_outside))
        return [f"Outside this part, {said}. Torch-TensorRT's partitioner judges each node with the ops around it "
                "in the whole graph, and its converters see the engine's inputs and outputs instead; so `repro.pt2` "
                f"passes {both} through `{OP_NAME}`, an identity op with no TensorRT converter that `repro.py` "
                "defines and Torch-TensorRT runs in PyTorch: there too ops make and use them. Without it they would "
                "be the program's own inputs and outputs, which in the model they were not.", ""]

    def issue_text(self) -> str:
        """A Markdown issue body: the error, what repro.py showed (a failure is said to be
        Torch-TensorRT's only when repro.py reproduced it), the versions and builder, the inputs
        (shapes, dtypes, dynamic ranges), the nodes with the user's source lines, and how to run
        the repro."""
        if self.stage == "run":
            return self._lowering_issue_text()
        v = repro_files.versions()
        kwargs = ", ".join(f"{k}={value!r}" for k, value in self.settings.items())
        shapes = shapes_of(self.graph)
        part = (f"this graph of {_nodes(len(self.nodes))} (the smallest failing part of {self.of} nodes, found by "
                "hierviz)")
        if self._shown():
            top = [f"## {self.stage.capitalize()} failure: {short_error(self.error)}", "",
                   f"Torch-TensorRT fails to {'convert' if self.stage == 'convert' else 'build'} {part} with "
                   f"`{self.exception}`; `repro.py` fails the same way in a fresh process:", "", "```", self.error,
                   "```", ""]
        else:
            title, said = self._not_shown(f"hierviz's build failed at {self.stage} ({short_error(self.error)})")
            top = [title, "", f"hierviz's build of {part} failed at {self.stage} with `{self.exception}` (hierviz "
                   "calls Torch-TensorRT's converters and TensorRT's builder on it as one engine, as Torch-TensorRT "
                   "does on each subgraph it partitioned):", "", "```", self.error, "```", "", f"**{said}**", ""]
        lines = [*top,
                 "### Versions", "", f"- torch {v['torch']}", f"- torch_tensorrt ({v['torch_tensorrt']})",
                 f"- TensorRT {v['TensorRT']}", f"- builder: {self.builder}", "",
                 "### Inputs", "", *shapes.markdown(self._static_because(shapes)), "", *self._outside_lines(),
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
        shapes = shapes_of(self.graph)
        lowering = ("Torch-TensorRT's lowering (`pre_export_lowering`, its decompositions, `post_lowering`, as "
                    "`torch_tensorrt.dynamo.compile` runs them)")
        part = (f"this exported graph of {_nodes(len(self.nodes))} (the smallest failing part of the model's "
                f"{self.of}, found by hierviz)")
        if self._shown():
            top = [f"## Lowering makes a graph PyTorch cannot run: {short_error(self.error)}", "",
                   f"{lowering} turns {part} into one that raises `{self.exception}` when PyTorch runs it; "
                   "`repro.py` shows it in a fresh process:", "", "```", self.error, "```", ""]
        else:
            title, said = self._not_shown(f"a lowering failure hierviz saw ({short_error(self.error)})")
            top = [title, "", f"In hierviz's process, {lowering} turned {part} into one that raised "
                   f"`{self.exception}` when PyTorch ran it:", "", "```", self.error, "```", "", f"**{said}**", ""]
        return "\n".join([
            *top,
            "### Versions", "", f"- torch {v['torch']}", f"- torch_tensorrt ({v['torch_tensorrt']})",
            f"- TensorRT {v['TensorRT']}", "",
            "### Inputs", "", *shapes.markdown(self._static_because(shapes)), "",
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
        and dtypes with `weights="random"`; its dynamic dimensions kept as torch.export Dims where
        torch.export takes them), repro.py, run repro.py in a fresh process (its output in
        repro.log), then write README.md saying what it showed, and return this Repro with
        `verified`, `exit_status` and `static_shapes` set; this one is left as it was."""
        out = Path(folder)
        if out.exists() and not out.is_dir():
            raise ConfigError(f"Repro.save({str(folder)!r}): that is a file; give a folder (it is made if missing).")
        out.mkdir(parents=True, exist_ok=True)
        shapes = shapes_of(self.graph)
        if self.stage == "run":  # as the search lowered it: at the example's sizes
            ep, static = repro_files.exported(self.graph, weights), self._static_because(shapes)
        else:
            ep, static = repro_files.exported_keeping_dims(self.graph, weights, shapes, self.made_outside,
                                                           self.used_outside)
        torch.export.save(ep, str(out / "repro.pt2"))
        (out / "repro.py").write_text(repro_files.script(self.headline(), self.signature, self.graph, self.settings,
                                                         lowering=self.stage == "run",
                                                         outside=bool(self.made_outside or self.used_outside)))
        code, _ = repro_files.run_script(out)
        left: tuple[str, ...] = ()
        if code == 0 and self.stage in FAILED:  # built: was it the engine hierviz built?
            left = left_to_pytorch(lowered(ep), set(self.settings.get("torch_executed_ops", ())))
        saved = dataclasses.replace(self, verified=code == 1, exit_status=code, static_shapes=static,
                                    left_to_pytorch=left)
        (out / "README.md").write_text(saved.issue_text())
        return saved


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


def repro_of(row: BuildRow, part: "Partition | MultiGraphPartition", builder: SubgraphBuilder | None = None) -> Repro:
    """The smallest failing part of the failed subgraph `row` of `part`'s build (`Builds.failed_row`,
    for `Builds.repro()`); `builder` builds the trials (default: one with default settings; give
    the one the build was made with when it had trt_settings or tf32)."""
    if row.stage == "run":
        return _lowering_repro(part, row)
    graph_part = part[row.graph] if isinstance(part, MultiGraphPartition) else part  # its graph's name, 'g2'
    gm = getattr(graph_part.module, row.subgraph)
    builder = builder if builder is not None else SubgraphBuilder()
    made, _ = builder.build(gm, label=row.subgraph)
    if made.stage not in FAILED:
        raise ConfigError(f"Builds.repro(): {row.subgraph} builds with this builder's settings but failed in "
                          f"these Builds: pass builder= with the settings the Builds were made with.")
    found = smallest_failing(gm, lambda g: builder.build(g, label=row.subgraph))
    made, _ = builder.build(found.graph)  # the part's own error (same signature, its own sizes); already built
    model_inputs, model_outputs = inputs_and_outputs(graph_part.graph)
    return Repro(row.subgraph, found.nodes, found.graph, made.stage, made.exception or "", made.error or "",
                 len(call_nodes(gm)), found.builds, found.cached, round(found.seconds, 3),
                 trt.builder_name() or "", _compile_settings(graph_part, builder),
                 made_outside=made_by_ops(found.graph, model_inputs),
                 used_outside=used_by_ops(found.graph, model_outputs))


@dataclass(frozen=True)
class _Ran:
    """What lowering a part and running it in PyTorch gave: stage 'run' (it raised `exception`
    with `error`, 'Type: first line'), 'lower' (the export or the lowering itself raised) or 'ran'."""

    stage: str
    exception: str | None = None
    error: str | None = None
    error_cut: bool = False  # first_line keeps the whole line


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
    except repro_files.EXPORT_ERRORS as exc:  # what torch.export and the lowering raise on a part
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
    if row.at:
        raise ConfigError(f"Builds.repro({row.name!r}): {row.subgraph} fails in PyTorch only at {row.at} of its "
                          "optimization profile, not because the lowering broke it; narrow the dynamic dimension's "
                          "range (or change the model's line) instead.")
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
