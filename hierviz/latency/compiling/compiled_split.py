"""Building the compiled split model: `compile_split(partition, example_inputs, device)`.

Each subgraph of `partition.module` is lifted (its weights become inputs, see lift.py),
compiled through the cache in graph order with the real tensors it receives (subgraph_compiling.py), and
wrapped in a small module; a new top-level GraphModule with the split module's graph calls
those wrappers. That module is what `hv.measure` times and what `Partition.compile` hands to
the user. The partition is never modified.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import torch
from torch.fx import GraphModule
from torch.utils._pytree import tree_leaves

from hierviz import trt
from hierviz.building.frozen_random import FrozenRandom, frozen_random
from hierviz.errors import MeasureError
from hierviz.capturing.graph_codec import fetch_attr, set_path
from hierviz.capturing.inputs import check as check_inputs
from hierviz.latency.compiling import compile_cache as cache_mod
from hierviz.latency.compiling.backend_compilers import TENSORRT
from hierviz.latency.compiling.subgraph_compiling import Builder, Progress, Runner
from hierviz.latency.compiling.lift import on_device
from hierviz.latency.compiling.compile_plan import plan, resolve_device
from hierviz.latency.precision import fp32_precision
from hierviz.latency.measure_options import ON_ERROR, MeasureOptions, check_trt_settings
from hierviz.latency.measurement import SubgraphRecord

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition

@dataclass
class CompiledSplit:
    """A partition compiled for one device.

    `module(*inputs)` runs the split model (TensorRT subgraphs as engines, TorchInductor ones as
    compiled code, the rest eagerly); `records` says per subgraph what ran (see
    SubgraphRecord); `fallbacks` are the tags whose backend failed and ran eagerly instead;
    `output` is the split model's output on the example inputs, from the compiling run;
    `unsaved` the tags whose compiled artifact was not written to the disk cache, with why
    (each also in `warnings`): a saved model compiles them again when loaded; `frozen_random` the
    random ops of the TensorRT subgraphs that ran as engines, whose values Torch-TensorRT draws
    once at build (hierviz.building.frozen_random; each also in `warnings`, in the build's words).
    """

    module: GraphModule
    records: dict[str, SubgraphRecord]
    device: torch.device
    inputs: tuple[Any, ...]
    output: Any = None
    fallbacks: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)
    cache_hits: int = 0
    cache_misses: int = 0
    compile_s: float = 0.0
    compile_state: dict[str, str] = field(default_factory=dict)
    tf32: bool = False
    unsaved: dict[str, str] = field(default_factory=dict)
    frozen_random: tuple[FrozenRandom, ...] = ()

    @property
    def runners(self) -> dict[str, Runner]:
        return {name: getattr(self.module, name) for name in self.records}


def check_partition(partition: Any) -> None:
    if not all(hasattr(partition, a) for a in ("module", "subgraphs", "graph")):
        raise MeasureError(f"this takes a hv.Partition (from hv.partition), not {type(partition).__name__}")


def backend_options(slots: list, device: torch.device, trt_settings: Any, inductor_options: Any,
                    tf32: bool) -> dict[str, Any]:
    """Each backend's options as its compiler takes them; TensorRT's checked and built for
    `device` with TF32 as `tf32` says (ConfigError for settings that cannot act here)."""
    options = {"inductor": inductor_options, "tensorrt": trt_settings}
    if any(s.compiler is TENSORRT and s.refused is None for s in slots):  # it takes CompilationSettings

        options["tensorrt"] = trt.conversion_settings(trt_settings, device, tf32=tf32)
    return options


def compile_split(partition: Partition, example_inputs: Any, device: Any = None, *, on_error: str = "raise",
                  cache: cache_mod.CompileCache | None = None, cache_dir: str | Path | None = None,
                  trt_settings: Any = None, inductor_options: dict | None = None,
                  compilers: Mapping[str, Any] | None = None, tf32: bool = False,
                  progress: Any = None, who: str = "compile_split",
                  observe: Callable[..., Any] | None = None) -> CompiledSplit:
    """Compile every subgraph of `partition` with its backend for `device` and assemble the
    split module (see CompiledSplit). Arguments as in `hv.measure`; raises
    hv.TensorRTUnavailableError (a MeasureError) when TensorRT subgraphs cannot be built here,
    MeasureError for other failures; with `on_error="fallback"` each failing or unbuildable
    subgraph runs in eager PyTorch instead (listed in `fallbacks`). `who` names the
    caller in error messages about the inputs; `observe` sees each value of the compiling run
    (see compiling.Builder.run). The keywords become one MeasureOptions (checked there), and
    build_split does the work."""
    bar = progress if isinstance(progress, Progress) else None
    options = MeasureOptions(device=device, on_error=on_error, cache=cache, cache_dir=cache_dir,
                             trt_settings=trt_settings, inductor_options=inductor_options, compilers=compilers,
                             tf32=tf32, progress=None if bar is not None else progress)
    check_partition(partition)
    dev = resolve_device(device, partition)
    check_inputs(partition.graph, example_inputs, who=who, error=MeasureError)
    return build_split(partition, example_inputs, dev, options, bar=bar, observe=observe)


def build_split(partition: Partition, example_inputs: Any, device: torch.device, options: MeasureOptions, *,
                bar: Progress | None = None, observe: Callable[..., Any] | None = None) -> CompiledSplit:
    """compile_split of a checked partition and inputs for a resolved `device`, with the
    options of one MeasureOptions (its compile fields; `options.progress` unless `bar`, a
    Progress the caller steps and closes, is given)."""
    slots = plan(partition, device, options.compilers, options.on_error)
    inputs = tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in tree_leaves(example_inputs))
    store = options.cache if options.cache is not None else cache_mod.default_cache()
    backends = backend_options(slots, device, options.trt_settings, options.inductor_options, options.tf32)
    steps = bar if bar is not None else Progress(options.progress, len(slots))
    try:
        with torch.no_grad(), fp32_precision(options.tf32):
            built, output = Builder(partition.module, slots, device, store, options.directory, backends,
                                    options.on_error, steps).run(inputs, observe)
    finally:
        if bar is None:
            steps.close()
    frozen = frozen_random(partition, [tag for tag, r in built.records.items() if r.ran == TENSORRT.backend])
    return CompiledSplit(module=assemble(partition.module, built.runners, device), records=built.records,
                         device=device, inputs=inputs, output=output, fallbacks=tuple(built.fallbacks),
                         warnings=built.warnings + [f.text() for f in frozen], frozen_random=frozen,
                         cache_hits=built.cache_hits, cache_misses=built.cache_misses,
                         compile_s=built.compile_s, compile_state=built.compile_state, tf32=options.tf32,
                         unsaved=built.unsaved)


def assemble(module: GraphModule, runners: Mapping[str, Runner], device: torch.device) -> GraphModule:
    """A new top-level GraphModule: the split module's graph, calling the runners."""
    root = torch.nn.Module()
    for name, runner in runners.items():
        root.add_module(name, runner)
    graph = torch.fx.Graph()
    out = graph.graph_copy(module.graph, {})
    graph.output(out)
    for node in graph.nodes:
        if node.op == "get_attr" and not hasattr(root, str(node.target).split(".")[0]):
            attr = fetch_attr(module, node.target)
            value = on_device(attr, device) if isinstance(attr, torch.Tensor) else attr
            set_path(root, str(node.target), value)
    return GraphModule(root, graph, class_name="MeasuredSplit")


__all__ = ["compile_split", "build_split", "CompiledSplit", "assemble", "ON_ERROR", "check_trt_settings"]
