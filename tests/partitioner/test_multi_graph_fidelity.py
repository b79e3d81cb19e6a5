"""Fidelity of ir="torch_compile": for every graph the real `torch.compile(model,
backend="torch_tensorrt", options={"dryrun": True, ...})` partitions, `engine="fast"` /
`"global"` show the same ops and the same TensorRT blocks (the multiset of ops of each block,
blocks in order).

The reference runs on CPU with the CUDA queries answered, as in test_compile_dryrun.py: the
whole torch.compile run once per model, with Torch-TensorRT's backend's `compile_module`
intercepted at its partitioner (the partition recorded, then the lowered graph returned, so
the run goes on to the next graph); the other settings run compile's own `compile_module` on
the graphs the first run lowered. A graph the real path does not reach on a CPU (its lowering
fails there) is left out, and counted."""

from __future__ import annotations

import copy
from collections import Counter

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.partitioner.result import copy_graph_module
from tests.dynamo_models import load
from tests.partitioner.test_compile_dryrun import CUDA_ANSWERS, Stop, _ops

pytestmark = pytest.mark.skipif(not trt.available(), reason="needs torch_tensorrt's torch.compile backend")


def _blocks_in_order(split: torch.fx.GraphModule) -> list[list[str]]:
    """The TensorRT blocks of compile's split module in the order its graph runs them, each as
    its sorted ops."""
    subs = dict(split.named_children())
    return [sorted(_ops(subs[n.target])) for n in split.graph.nodes
            if n.op == "call_module" and str(n.target).startswith("_run_on_acc")]


def _our_blocks_in_order(p: hv.Partition) -> list[list[str]]:
    return [sorted(p.record(n).op for n in sg.nodes if p.record(n).kind == "call_function")
            for sg in p.subgraphs if sg.is_acc]


def configs_for(ops: list[str]) -> list[dict]:
    """The settings checked: min_block_size 1 and 5 with the fast partitioner, and 3 with an op
    forced to PyTorch with the global one."""
    counts = Counter(ops)
    forced = next((op for op in ("torch.ops.aten.add.Tensor", "torch.ops.aten.mul.Tensor",
                                 "torch.ops.aten.relu.default") if op in counts),
                  counts.most_common(1)[0][0] if counts else "torch.ops.aten.add.Tensor")
    return [dict(min_block_size=1, torch_executed_ops=set(), use_fast_partitioner=True),
            dict(min_block_size=3, torch_executed_ops={forced}, use_fast_partitioner=False),
            dict(min_block_size=5, torch_executed_ops=set(), use_fast_partitioner=True)]


def torch_compile_partitions(model: torch.nn.Module, inputs: tuple, configs: list[dict]) -> list[dict]:
    """Per graph Torch-TensorRT's torch.compile backend was handed, in order: `reached`
    (its lowering got to compile_module), `ops` (the lowered graph's), and per configuration the
    TensorRT blocks its partitioner made, in order ([] when compile_module returned before
    partitioning: no supported op)."""
    from torch_tensorrt.dynamo import CompilationSettings, partitioning
    from torch_tensorrt.dynamo.backend import backends

    real = {name: getattr(partitioning, name) for name in ("fast_partition", "global_partition")}
    real_compile_module, real_pretraced = backends.compile_module, backends._pretraced_backend
    graphs: list[dict] = []

    def intercept(name):
        def partitioner(gm, *args, **kwargs):
            split, _ = real[name](gm, *args, **kwargs)
            graphs[-1]["found"] = (name, _blocks_in_order(split))
            raise Stop
        return partitioner

    def pretraced(gm, sample_inputs, *args, **kwargs):
        graphs.append({"reached": False})
        return real_pretraced(gm, sample_inputs, *args, **kwargs)

    def run_compile_module(gm, inputs, settings):
        graphs[-1]["found"] = None
        try:
            real_compile_module(gm, inputs, settings=settings)
        except Stop:
            pass
        found = graphs[-1].pop("found")
        return found if found is not None else (None, [])

    def compile_module(gm, inputs, *args, settings=None, **kwargs):
        graphs[-1].update(reached=True, ops=_ops(gm), lowered=(copy_graph_module(gm), inputs), runs=[])
        graphs[-1]["runs"].append(run_compile_module(gm, inputs, settings))
        return gm  # the lowered graph runs eagerly: the model's run goes on to its next graph

    saved = {name: getattr(torch.cuda, name) for name in CUDA_ANSWERS}
    torch._dynamo.reset()
    try:
        for name, answer in CUDA_ANSWERS.items():
            setattr(torch.cuda, name, answer)
        for name in real:
            setattr(partitioning, name, intercept(name))
        backends.compile_module, backends._pretraced_backend = compile_module, pretraced
        compiled = torch.compile(copy.deepcopy(model), backend="torch_tensorrt", dynamic=False,
                                 options={"dryrun": True, **configs[0]})
        with torch.no_grad():
            compiled(*inputs)
        for g in graphs:
            if not g["reached"]:
                continue
            for options in configs[1:]:
                graphs.append(g)  # run_compile_module records into graphs[-1]
                lowered, lowered_inputs = g["lowered"]
                g["runs"].append(run_compile_module(copy_graph_module(lowered), lowered_inputs,
                                                    CompilationSettings(dryrun=True, **options)))
                graphs.pop()
    finally:
        backends.compile_module, backends._pretraced_backend = real_compile_module, real_pretraced
        for name, fn in real.items():
            setattr(partitioning, name, fn)
        for name, fn in saved.items():
            setattr(torch.cuda, name, fn)
        torch._dynamo.reset()
    return graphs


def check_fidelity(model: torch.nn.Module, inputs: tuple, cap: hv.DynamoCapture) -> int:
    """Assert ours equals the real path on every graph it reaches; the number of graphs reached."""
    configs = configs_for([op for g in cap.graphs for op in g.ops])
    theirs = torch_compile_partitions(model, inputs, configs)
    assert len(theirs) == len(cap.graphs)  # the same dynamo graphs, one backend call each
    reached = [k for k, g in enumerate(theirs) if g["reached"]]
    assert any(theirs[k]["runs"][0][1] for k in reached)  # min_block_size 1: TensorRT blocks to compare
    for k in reached:
        assert theirs[k]["ops"] == list(cap.graphs[k].ops), k  # hierviz's lowering is the backend's
    for c, options in enumerate(configs):
        engine = "fast" if options["use_fast_partitioner"] else "global"
        ours = hv.partition(cap, engine=engine, priority=("tensorrt",), min_block_size=options["min_block_size"],
                            torch_executed_ops=options["torch_executed_ops"])
        for k in reached:
            partitioner, blocks = theirs[k]["runs"][c]
            if partitioner is not None:
                assert partitioner == f"{engine}_partition"
            assert _our_blocks_in_order(ours.graphs[k]) == blocks, (k, options)
    return len(reached)


@pytest.fixture(scope="module")
def toys() -> dict:
    out = {}
    for name in ("if_on_sum", "prints", "item_arith"):
        model, inputs = load(name)
        out[name] = (model, inputs, hv.capture(model, inputs, ir="torch_compile"))
    return out


@pytest.mark.parametrize("name", ["if_on_sum", "prints", "item_arith"])
def test_toys_partition_as_torch_compile_does(toys, name) -> None:
    model, inputs, cap = toys[name]
    assert check_fidelity(model, inputs, cap) == len(cap.graphs) == 2


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fasterrcnn_mobilenet_v3_large_320_fpn", "ssdlite320_mobilenet_v3_large"])
def test_detection_models_partition_as_torch_compile_does(detection, name) -> None:
    model, inputs = detection.load(name)  # never run: its first run is the one both paths see
    cap = detection.capture(name)
    assert len(cap.graphs) > 5 and cap.breaks  # detection post-processing: many graphs
    assert check_fidelity(model, inputs, cap) >= 5


def switch_encoder() -> tuple[torch.nn.Module, dict]:
    """Hugging Face's SwitchTransformers encoder (random weights, tiny config): its mixture-of-
    experts routing breaks dynamo's graphs; outside the zoo."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.SwitchTransformersConfig(d_model=32, d_ff=64, d_kv=16, num_layers=2, num_heads=2,
                                                   num_experts=4, vocab_size=100, expert_capacity=4,
                                                   num_sparse_encoder_layers=1)
    return transformers.SwitchTransformersEncoderModel(config).eval(), {"input_ids": torch.randint(0, 100, (1, 8))}


@pytest.mark.slow
def test_a_transformers_model_with_graph_breaks_partitions_as_torch_compile_does() -> None:
    model, kwargs = switch_encoder()

    class Call(torch.nn.Module):  # the reference harness calls model(*inputs)
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=input_ids).last_hidden_state

    wrapped = Call().eval()
    cap = hv.capture(wrapped, (kwargs["input_ids"],), ir="torch_compile")
    assert len(cap.graphs) > 2 and any("switch_transformers" in b.file for b in cap.breaks)
    assert check_fidelity(wrapped, (kwargs["input_ids"],), cap) == len(cap.graphs)
