"""A multi-graph partition compiled: `MultiGraphPartition.compile()` returns a CompiledGraphs, the
model run through `torch.compile` with hierviz's backend (graph_backend.GraphBackend), which
`hv.measure` times.

It compiles a private copy of the model (moved to the device), never the user's model: dynamo's
caches are reset first (a compiled graph of the same class would otherwise be reused, whatever
its settings), so a later capture, measurement or compile resets them again and this model
compiles its graphs anew on its next call (from the compile cache: no subgraph is built twice).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Mapping

import torch
from torch.utils._pytree import tree_map

from hierviz.capturing.aten_capture import source_of
from hierviz.errors import MeasureError, parameter_names, unknown_arguments
from hierviz.capturing.inputs import as_args
from hierviz.latency.compiling.compile_plan import plan, resolve_device
from hierviz.latency.compiling.compiled_split import ON_ERROR, check_trt_settings, compile_split
from hierviz.latency.by_graph.graph_backend import GraphBackend, GraphRun
from hierviz.latency.precision import check_tf32
from hierviz.latency.measurement import SubgraphRecord
from hierviz.capturing.model_copy import private_copy
from hierviz.partitioner.by_graph.multi_graph import qualified
from hierviz.partitioner.by_graph.per_graph import per_graph

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition


class CompiledGraphs(torch.nn.Module):
    """The model compiled graph by graph: call it like the model (it runs in no_grad, as an
    inference engine does). Each dynamo graph runs its Partition's compiled split module
    (TensorRT engines, TorchInductor code, eager PyTorch); the Python between graphs runs
    eagerly. A graph is compiled on its first call.

    `.graphs`: one GraphRun per graph compiled so far (its Partition, CompiledSplit, calls);
    `.records`: what ran per subgraph, keyed 'g<k>/<tag>'; `.fallbacks`: those whose backend
    failed and ran eagerly; `.config`, `.device`."""

    def __init__(self, multi: MultiGraphPartition, model: torch.nn.Module, device: torch.device,
                 options: dict[str, Any], who: str) -> None:
        super().__init__()
        torch._dynamo.reset()
        self.backend = GraphBackend(multi, device, options, who)
        self.compiled = torch.compile(_private_on(model, device), backend=self.backend, dynamic=False)
        self.config = multi.config
        self.device = device

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The model's outputs; a graph whose compile failed raises here (hv.MeasureError)."""
        with torch.no_grad():
            out = self.compiled(*args, **kwargs)
        self.backend.raise_first()
        return out

    @property
    def graphs(self) -> list[GraphRun]:
        return list(self.backend.runs)

    @property
    def records(self) -> dict[str, SubgraphRecord]:
        return {qualified_tag(run, tag): r for run in self.backend.runs if run.split is not None
                for tag, r in run.split.records.items()}

    @property
    def fallbacks(self) -> tuple[str, ...]:
        return tuple(qualified_tag(run, tag) for run in self.backend.runs if run.split is not None
                     for tag in run.split.fallbacks)

    def extra_repr(self) -> str:
        ran: dict[str, int] = {}
        for r in self.records.values():
            ran[r.ran] = ran.get(r.ran, 0) + 1
        by = ", ".join(f"{b} {n}" for b, n in ran.items()) or "none compiled yet"
        return (f"{self.config.label()} on {self.device}: {len(self.backend.runs)} graphs, "
                f"{len(self.records)} subgraphs ({by})")


def qualified_tag(run: GraphRun, tag: str) -> str:
    """'g2/_run_on_acc_tensorrt_0': a subgraph's tag across the model's graphs."""
    return qualified(run.index, tag) if run.index is not None else f"{run.name}/{tag}"


def _private_on(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """A copy of `model` on `device` that compiling may change: parameters shared on their own
    device (private_copy), else everything copied and moved."""
    where = next((t.device for t in (*model.parameters(), *model.buffers())), None)
    if where is None or where == device or where.type == device.type == "cpu":
        return private_copy(model)
    try:
        return copy.deepcopy(model).to(device)
    except Exception as exc:
        raise MeasureError(f"could not copy {type(model).__name__} to {device} to compile it: {type(exc).__name__}: "
                           f"{exc}. Move the model to the device first (model.to(device)).") from exc


def model_of(multi: MultiGraphPartition, model: Any) -> torch.nn.Module:
    """`model`, else the model `multi` was captured from (while it is alive)."""
    source = model if model is not None else source_of(multi.capture)
    if not isinstance(source, torch.nn.Module):
        raise MeasureError("this multi-graph partition's model is gone (or it was captured elsewhere): pass it, "
                           "e.g. hv.measure(part, example_inputs, model=model) or part.compile(model=model).")
    return source


def checked_plan(multi: MultiGraphPartition, device: Any, compilers: Mapping[str, Any] | None,
                 on_error: str) -> torch.device:
    """The device, after every graph's subgraphs were planned for it: what cannot be compiled
    here (TensorRT without a GPU ...) is refused before the model runs, naming the graph."""
    trt_graph = next((p for p in multi.graphs if any(sg.backend == "tensorrt" for sg in p.subgraphs)), None)
    dev = resolve_device(device, trt_graph)
    per_graph(lambda p: plan(p, dev, compilers, on_error), multi, name_errors=True)
    return dev


def on_device(example_inputs: Any, device: torch.device) -> tuple:
    """The model's positional inputs moved to `device` (the caller's tensors are not changed)."""
    return tuple(tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, as_args(example_inputs)))


def compile_graphs(multi: MultiGraphPartition, device: Any = None, *, example_inputs: Any = None, model: Any = None,
                   on_error: str = "raise", who: str = "MultiGraphPartition.compile", **options: Any) -> CompiledGraphs:
    """`MultiGraphPartition.compile`: the model (`model=`, else the one captured) compiled with
    hierviz's torch.compile backend for `device`. With `example_inputs` it runs once on them,
    so every graph is compiled (and a failure raised) now; else on the first call. `options`
    are hv.measure's compile options (cache, cache_dir, trt_settings, inductor_options,
    compilers, tf32, progress)."""
    unknown_arguments(who, options, parameter_names(
        compile_split, skip=("partition", "example_inputs", "device", "who", "on_error", "observe")))
    if on_error not in ON_ERROR:
        raise MeasureError(f"on_error must be one of {ON_ERROR}, not {on_error!r}")
    source = model_of(multi, model)
    tf32 = check_tf32(options.get("tf32", False))
    check_trt_settings(options.get("trt_settings"), tf32)
    dev = checked_plan(multi, device, options.get("compilers"), on_error)
    compiled = CompiledGraphs(multi, source, dev, {**options, "on_error": on_error}, who)
    if example_inputs is not None:
        compiled(*on_device(example_inputs, dev))
    return compiled


__all__ = ["CompiledGraphs", "compile_graphs", "checked_plan", "model_of", "on_device", "qualified_tag"]
