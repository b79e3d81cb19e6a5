"""hierviz shows what torch_tensorrt.compile really partitions: the real
`torch_tensorrt.dynamo.compile(..., dryrun=True)`, run on CPU up to its partitioner call on
every zoo model, partitions the same graph as `hv.capture` gives, and `engine="fast"` /
`"global"` make the same TensorRT blocks (the same ops in each) as compile's partitioners.

Per model the whole compile (export, lowering, compile_module) runs once, with the first
configuration; the other two run compile's own partitioning step (`compile_module`, which
holds the early return, skip_fusion and the fast/global choice) on the graph compile's
lowering produced, so that the lowering is not repeated. Each run is stopped at the
partitioner call, once the partition is recorded."""

from __future__ import annotations

import copy
from collections import Counter

import pytest
import torch

import hierviz as hv
from hierviz import trt, zoo
from hierviz.foundation.opnames import qualname
from hierviz.partitioner.graph_copy import copy_graph_module

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not trt.available(), reason="needs torch_tensorrt's compile")]

# The CUDA queries compile makes before partitioning, answered on a machine without a GPU.
CUDA_ANSWERS = trt.COMPILE_CUDA_ANSWERS


class Stop(Exception):
    """Raised by the intercepted partitioner once compile's partition is recorded."""


def _ops(gm: torch.fx.GraphModule) -> list[str]:
    return [qualname(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def _acc_blocks(split: torch.fx.GraphModule) -> list[list[str]]:
    return sorted(sorted(_ops(sub)) for name, sub in split.named_children() if name.startswith("_run_on_acc"))


def _configs(gm: torch.fx.GraphModule) -> list[dict]:
    counts = Counter(_ops(gm))
    forced = next((op for op in ("torch.ops.aten.add.Tensor", "torch.ops.aten.mul.Tensor") if op in counts),
                  counts.most_common(1)[0][0])
    return [dict(min_block_size=1, torch_executed_ops=set(), use_fast_partitioner=True),
            dict(min_block_size=3, torch_executed_ops={forced}, use_fast_partitioner=False),
            dict(min_block_size=5, torch_executed_ops=set(), use_fast_partitioner=True)]


def compile_partitions(model: torch.nn.Module, inputs: tuple, configs: list[dict]) -> list[dict]:
    """For each configuration: the graph compile hands its partitioner and the TensorRT
    blocks (ops per block) that partitioner returns."""
    import torch_tensorrt
    from torch_tensorrt.dynamo import CompilationSettings, _compiler, partitioning

    records: list[dict] = []
    real = {name: getattr(partitioning, name) for name in ("fast_partition", "global_partition")}
    real_compile_module = _compiler.compile_module
    first_call: dict = {}

    def intercept(name):
        def partitioner(gm, *args, **kwargs):
            ops = _ops(gm)
            split, _ = real[name](gm, *args, **kwargs)
            records.append({"partitioner": name, "ops": ops, "blocks": _acc_blocks(split)})
            raise Stop
        return partitioner

    def recording_compile_module(gm, *args, **kwargs):
        first_call.update(graph=copy_graph_module(gm), args=args, kwargs=kwargs)
        return real_compile_module(gm, *args, **kwargs)

    saved = {name: getattr(torch.cuda, name) for name in CUDA_ANSWERS}
    try:
        for name, answer in CUDA_ANSWERS.items():
            setattr(torch.cuda, name, answer)
        for name in real:
            setattr(partitioning, name, intercept(name))
        _compiler.compile_module = recording_compile_module
        exported = torch.export.export(copy.deepcopy(model), inputs, strict=False)
        with pytest.raises(Stop):
            torch_tensorrt.dynamo.compile(exported, arg_inputs=list(inputs), dryrun=True, **configs[0])
        for options in configs[1:]:
            settings = CompilationSettings(dryrun=True, **options)
            with pytest.raises(Stop):
                real_compile_module(copy_graph_module(first_call["graph"]), first_call["args"][0],
                                    settings=settings)
    finally:
        _compiler.compile_module = real_compile_module
        for name, fn in real.items():
            setattr(partitioning, name, fn)
        for name, fn in saved.items():
            setattr(torch.cuda, name, fn)
    assert len(records) == len(configs)
    return records


def _our_blocks(p: hv.Partition) -> list[list[str]]:
    return sorted(sorted(p.record(n).op for n in sg.nodes if p.record(n).kind == "call_function")
                  for sg in p.subgraphs if sg.is_acc)


@pytest.mark.parametrize("name", zoo.names())
def test_fast_and_global_make_compiles_partition(zoo_cache, name) -> None:
    model, inputs = zoo_cache.load(name)
    ours = zoo_cache.capture(name)
    configs = _configs(ours)
    records = compile_partitions(model, inputs, configs)
    assert records[0]["blocks"]  # min_block_size=1, nothing forced: compile makes TensorRT blocks
    for options, theirs in zip(configs, records):
        engine = "fast" if options["use_fast_partitioner"] else "global"
        assert theirs["partitioner"] == f"{engine}_partition"
        assert _ops(ours) == theirs["ops"]  # hierviz's capture is the graph compile partitions
        p = hv.partition(ours, engine=engine, priority=("tensorrt",), min_block_size=options["min_block_size"],
                         torch_executed_ops=options["torch_executed_ops"])
        assert _our_blocks(p) == theirs["blocks"], (name, options)
