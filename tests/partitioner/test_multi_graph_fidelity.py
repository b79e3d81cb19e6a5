"""Fidelity of ir="torch_compile": for every graph the real `torch.compile(model,
backend="torch_tensorrt", options={"dryrun": True, ...})` partitions, `engine="fast"` /
`"global"` show the same ops and the same TensorRT blocks (the multiset of ops of each block,
blocks in order).

The reference (hierviz.trt.stopped_at_partitioner) runs on CPU with the CUDA queries answered: the
whole torch.compile run once per model, with Torch-TensorRT's backend's `compile_module`
intercepted at its partitioner (the partition recorded, then the lowered graph returned, so
the run goes on to the next graph); the other settings run compile's own `compile_module` on
the graphs the first run lowered. It traces for the device hierviz's capture was traced for
(the GPU by default: attention as the GPU's kernel decomposes it). A graph the real path does
not reach on a CPU (its lowering fails there) is left out, and counted."""

from __future__ import annotations

import contextlib
from collections import Counter

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.capturing.target_device import lowering_for
from tests.dynamo_models import load
from tests.partitioner.test_compile_dryrun import _ops

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


def torch_compile_partitions(model: torch.nn.Module, inputs: tuple, configs: list[dict],
                             target: str = "cuda") -> list[dict]:
    """Per graph Torch-TensorRT's torch.compile backend was handed, traced for `target`, in order:
    `reached` (its lowering got to compile_module), `ops` (the lowered graph's), and per configuration the
    TensorRT blocks its partitioner made, in order ([] when compile_module returned before
    partitioning: no supported op)."""
    with trt.stopped_at_partitioner() as graphs:
        trt.compile_dryrun(model, inputs, lowering=lowering_for(target), **configs[0])
        for g in graphs:
            if g.reached:
                for options in configs[1:]:
                    trt.partition_again(g, **options)
    return [{"reached": g.reached, "ops": _ops(g.lowered) if g.lowered is not None else None,
             "runs": [(run[0], _blocks_in_order(run[1])) if run is not None else (None, []) for run in g.runs]}
            for g in graphs]


def check_fidelity(model: torch.nn.Module, inputs: tuple, cap: hv.DynamoCapture) -> int:
    """Assert ours equals the real path on every graph it reaches; the number of graphs reached."""
    configs = configs_for([op for g in cap.graphs for op in g.ops])
    theirs = torch_compile_partitions(model, inputs, configs, cap.traced_for[0])
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


class AttentionBreak(torch.nn.Module):
    """A causal self-attention, a graph break, then a padded one (an attention_mask input): on a GPU torch
    decomposes both into its efficient attention, and Torch-TensorRT's lowering makes the padded one causal."""

    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads, self.head = heads, dim // heads
        self.qkv1, self.qkv2, self.out = (torch.nn.Linear(dim, n * dim) for n in (3, 3, 1))

    def attend(self, qkv: torch.nn.Linear, x: torch.Tensor, **kwargs: object) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = qkv(x).view(b, s, 3, self.heads, self.head).permute(2, 0, 3, 1, 4)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs).transpose(1, 2).reshape(b, s, d)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.attend(self.qkv1, x, is_causal=True)
        print("hidden", tuple(h.shape))  # break: print
        return self.out(self.attend(self.qkv2, h, attn_mask=attention_mask[:, None, None, :].bool()))


@pytest.mark.parametrize("target", ["cuda", "cpu"])
def test_attention_partitions_as_torch_compile_does_for_the_target(target) -> None:
    torch.manual_seed(0)
    model, mask = AttentionBreak().eval(), torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0
    inputs = (torch.randn(2, 8, 16), mask)
    with pytest.warns(hv.CaptureWarning) if target == "cuda" else contextlib.nullcontext():
        cap = hv.capture(model, inputs, ir="torch_compile", target_device=target, cache=False)
    attention = [op for g in cap.graphs for op in g.ops if "dot_product" in op]
    if target == "cuda":  # the GPU's, which Torch-TensorRT converts
        assert attention == ["torch.ops.aten._scaled_dot_product_efficient_attention.default"] * 2
    else:
        assert attention == ["torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default"] * 2
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


def test_the_reference_puts_upstream_and_cuda_back(toys) -> None:
    from torch_tensorrt.dynamo import partitioning
    from torch_tensorrt.dynamo.backend import backends

    model, inputs, _ = toys["if_on_sum"]
    before = (partitioning.fast_partition, backends.compile_module, torch.cuda.device_count, torch.cuda.mem_get_info)
    with pytest.raises(RuntimeError, match="boom"), trt.stopped_at_partitioner() as graphs:
        trt.compile_dryrun(model, inputs, lowering=lowering_for("cuda"), min_block_size=1)
        assert len(graphs) == 2 and all(g.reached and g.runs[0] for g in graphs)
        raise RuntimeError("boom")
    assert (partitioning.fast_partition, backends.compile_module, torch.cuda.device_count,
            torch.cuda.mem_get_info) == before
