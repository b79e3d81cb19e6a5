"""Torch-TensorRT's torch.compile backend run to its partitioner and stopped there, on a machine
without a GPU too: the reference hierviz's `ir="torch_compile"` partitions are compared with
(tests/partitioner/test_multi_graph_fidelity.py, benchmarks/graph_breaks.py).

Inside `stopped_at_partitioner()`, `torch.compile(model, backend="torch_tensorrt")` runs as it
does, with the CUDA queries its compile path makes answered (an (8, 0) GPU with 32 GiB), and
each graph dynamo hands the backend is recorded as a `DryrunGraph`: its lowered graph when the
lowering got to `compile_module`, and what the partitioner (fast or global) made of it. The
partitioner's split is recorded and the compile stopped there; the lowered graph then runs
eagerly, so the model's run goes on to its next graph. `partition_again` runs compile_module on
a recorded graph with other settings, stopped at its partitioner the same way. Upstream's
functions are replaced for the duration with `patched` and put back after; dynamo's caches are
reset on entry and on exit, so nothing stays compiled.

The reference is what Torch-TensorRT's compile partitions on the device hierviz captures for,
not on this machine's CPU: `compile_dryrun` runs the compile inside the caller's `lowering`
context, hierviz.capturing.target_device.lowering_for(target) (the capturing layer's; this one
is below it), under which torch.compile's AOT export decomposes attention as the GPU's kernel
does, exactly as hv.capture's does.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field
from typing import Any, ContextManager, Iterator

import torch
from torch.fx import GraphModule

from hierviz.trt.loading import require
from hierviz.trt.partitioners import patched

# the CUDA queries Torch-TensorRT's compile path makes before partitioning, answered without a GPU
COMPILE_CUDA_ANSWERS: dict[str, Any] = {
    "get_device_capability": lambda device=None: (8, 0), "current_device": lambda: 0,
    "device_count": lambda: 1, "mem_get_info": lambda device=None: (32 << 30, 32 << 30)}
PARTITIONERS = ("fast_partition", "global_partition")


class _Stopped(Exception):
    """Raised by the intercepted partitioner once its split is recorded."""


@dataclass
class DryrunGraph:
    """One graph dynamo handed Torch-TensorRT's backend, in order. `lowered` / `inputs`: its
    lowered graph (a copy, sharing the weights) and the inputs compile_module was given, None
    when its lowering failed before compile_module (on a CPU, some do); `runs`: one per compile
    of it (the torch.compile run first, then each `partition_again`), the partitioner's name
    and its split module, or None when compile_module returned before partitioning (no
    supported op)."""

    lowered: GraphModule | None = None
    inputs: Any = None
    runs: list[tuple[str, GraphModule] | None] = field(default_factory=list)

    @property
    def reached(self) -> bool:
        """Whether its lowering got to compile_module."""
        return self.lowered is not None


@contextlib.contextmanager
def stopped_at_partitioner() -> Iterator[list[DryrunGraph]]:
    """While active, each graph torch.compile's torch_tensorrt backend is handed is appended to
    the list yielded, stopped at its partitioner (the module docstring says how)."""
    require()
    from torch_tensorrt.dynamo import partitioning
    from torch_tensorrt.dynamo.backend import backends

    graphs: list[DryrunGraph] = []
    real = {name: getattr(partitioning, name) for name in PARTITIONERS}
    real_compile_module, real_pretraced = backends.compile_module, backends._pretraced_backend
    found: list[tuple[str, GraphModule] | None] = []

    def intercept(name: str) -> Any:
        def partitioner(gm: GraphModule, *args: Any, **kwargs: Any) -> Any:
            split, _ = real[name](gm, *args, **kwargs)
            found.append((name, split))
            raise _Stopped
        return partitioner

    def pretraced(gm: GraphModule, sample_inputs: Any, *args: Any, **kwargs: Any) -> Any:
        graphs.append(DryrunGraph())
        return real_pretraced(gm, sample_inputs, *args, **kwargs)

    def compile_module(gm: GraphModule, inputs: Any, *args: Any, settings: Any = None, **kwargs: Any) -> GraphModule:
        graph = graphs[-1]
        graph.lowered, graph.inputs = GraphModule(gm, copy.deepcopy(gm.graph)), inputs
        graph.runs.append(_stopped_run(real_compile_module, found, gm, inputs, settings))
        return gm  # the lowered graph runs eagerly: the model's run goes on to its next graph

    replacements: dict[tuple[Any, str], Any] = {(torch.cuda, name): answer
                                                for name, answer in COMPILE_CUDA_ANSWERS.items()}
    replacements.update({(partitioning, name): intercept(name) for name in PARTITIONERS})
    replacements.update({(backends, "compile_module"): compile_module, (backends, "_pretraced_backend"): pretraced})
    torch._dynamo.reset()
    try:
        with patched(replacements):
            _active.append((real_compile_module, found))
            try:
                yield graphs
            finally:
                _active.pop()
    finally:
        torch._dynamo.reset()


_active: list[tuple[Any, list]] = []  # the running stopped_at_partitioner's compile_module and recorder


def _stopped_run(compile_module: Any, found: list, gm: GraphModule, inputs: Any, settings: Any) -> Any:
    found.clear()
    try:
        compile_module(gm, inputs, settings=settings)
    except _Stopped:
        pass
    return found.pop() if found else None


def compile_dryrun(model: torch.nn.Module, inputs: tuple, *, lowering: ContextManager[Any], **options: Any) -> None:
    """Inside stopped_at_partitioner: `torch.compile(a copy of model, backend="torch_tensorrt",
    dynamic=False, options={"dryrun": True, **options})` run once on `inputs`, without grad, inside
    `lowering` (the target's: hierviz.capturing.target_device.lowering_for(target), as hv.capture
    lowers for it)."""
    compiled = torch.compile(copy.deepcopy(model), backend="torch_tensorrt", dynamic=False,
                             options={"dryrun": True, **options})
    with torch.no_grad(), lowering:
        compiled(*inputs)


def partition_again(graph: DryrunGraph, **options: Any) -> tuple[str, GraphModule] | None:
    """Inside stopped_at_partitioner: compile_module on a copy of a reached graph's lowered graph
    with `CompilationSettings(dryrun=True, **options)`, stopped at its partitioner; recorded in
    `graph.runs` too."""
    from torch_tensorrt.dynamo import CompilationSettings

    assert _active and graph.lowered is not None, \
        "partition_again runs inside stopped_at_partitioner, on a reached graph"
    compile_module, found = _active[-1]
    lowered = GraphModule(graph.lowered, copy.deepcopy(graph.lowered.graph))
    run = _stopped_run(compile_module, found, lowered, graph.inputs, CompilationSettings(dryrun=True, **options))
    graph.runs.append(run)
    return run


__all__ = ["COMPILE_CUDA_ANSWERS", "DryrunGraph", "compile_dryrun", "partition_again", "stopped_at_partitioner"]
