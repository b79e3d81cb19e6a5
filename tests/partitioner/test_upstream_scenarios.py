"""Upstream's own scenarios, re-expressed against hv.partition.

The seven cases of pytorch/TensorRT
`tests/py/dynamo/partitioning/test_000_hierarchical_partitioning.py`, with the same models,
settings and expected submodule counts. Like upstream, submodules are counted in
`partition.module.named_children()`. Beyond upstream, each case also checks that the split
module computes what the graph computes and that the input graph is left untouched.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import hierviz as hv
from hierviz.partitioner.engine import hierviz_engine
from hierviz.partitioner.partition_result import from_engine_result

CONV = "torch.ops.aten.convolution.default"
BATCH_NORM = "torch.ops.aten._native_batch_norm_legit_no_training.default"


def children(p: hv.Partition) -> list[str]:
    return [name for name, _ in p.module.named_children()]


def count(p: hv.Partition, fragment: str) -> int:
    return sum(1 for name in children(p) if fragment in name)


def assert_same_outputs(p: hv.Partition, *inputs: torch.Tensor) -> None:
    with torch.no_grad():
        expected = p.graph(*inputs)
        got = p.module(*inputs)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


def assert_same_failure(p: hv.Partition, *inputs, match: str) -> None:
    """For upstream's graphs that cannot run on tensors at all: the split module fails the
    same way, at the same op, as the graph does."""
    with pytest.raises(Exception, match=match) as original:
        p.graph(*inputs)
    with pytest.raises(type(original.value), match=match) as split:
        p.module(*inputs)
    assert str(split.value).splitlines()[0] == str(original.value).splitlines()[0]


class FullySupportedOneOp(torch.nn.Module):
    def forward(self, x, y):
        return torch.ops.aten.add.Tensor(x, y)


class FullySupportedMultiOp(torch.nn.Module):
    def forward(self, x, y):
        sum_ = torch.ops.aten.sub.Tensor(x, y)
        concat_ = torch.ops.aten.cat.default(x, sum_)
        relu_ = torch.ops.aten.relu.default(concat_)
        pow_ = torch.ops.aten.pow.Tensor_Scalar(relu_, 2)
        return pow_


class PartiallySupportedMultiOp(torch.nn.Module):
    def forward(self, x, y):
        sum_1 = torch.ops.aten.add.Tensor(x, y)
        sum_2 = torch.ops.aten.add.Tensor(x, sum_1)
        sum_ = np.sum(sum_1) + np.sum(sum_2)
        relu_ = torch.ops.aten.relu.default(sum_)
        pow_ = torch.ops.aten.pow.Tensor_Scalar(relu_, 2)
        return pow_


class PartiallySupportedWithTorchOps(torch.nn.Module):
    def forward(self, x, y):
        sum_1 = torch.ops.aten.add.Tensor(x, y)
        sum_2 = torch.ops.aten.add.Tensor(x, sum_1)
        sum_ = torch.ops.aten.add.Tensor(sum_1, sum_2)
        relu_ = torch.ops.aten.relu.default(sum_)
        pow_ = torch.ops.aten.pow.Tensor_Scalar(relu_, 2)
        return pow_


class SimpleModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, padding=1)
        self.conv2 = torch.nn.Conv2d(64, 128, kernel_size=3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(64)
        self.bn2 = torch.nn.BatchNorm2d(128)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = torch.relu(x)
        x = self.conv2(x)
        x = self.bn2(x)
        x = torch.relu(x)
        return x


def xy(shape=(2, 3)) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return torch.randn(shape, generator=gen), torch.randn(shape, generator=gen)


@pytest.fixture(scope="module")
def simple_model_graph() -> tuple[torch.fx.GraphModule, torch.Tensor]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = SimpleModel().eval()
        example = torch.randn(1, 3, 32, 32)
    return hv.capture(model, (example,)), example


def two_backends(**extra) -> hv.Config:
    return hv.Config(
        priority=("inductor", "tensorrt"),
        support={"inductor": hv.support.ops([CONV]), "tensorrt": hv.support.tensorrt()},
        min_block_size=1,
        **extra,
    )


def test_fully_supported_one_op():
    gm = torch.fx.symbolic_trace(FullySupportedOneOp())
    code = gm.code
    p = hv.partition(gm)  # default min_block_size 5
    assert count(p, "_run_on_acc") == 0, "Single operators should not be segmented"
    assert children(p) == ["_run_on_gpu_0"]
    assert p.reason_code_of("add_tensor") == "demoted"
    assert_same_outputs(p, *xy())
    assert gm.code == code


def test_fully_supported_one_op_require_full_compilation():
    gm = torch.fx.symbolic_trace(FullySupportedOneOp())
    p = hv.partition(gm, require_full_compilation=True)
    assert count(p, "_run_on_acc") == 1, "Single operators can be segmented if full compilation is required"
    assert children(p) == ["_run_on_acc_tensorrt_0"]
    assert_same_outputs(p, *xy())


def test_fully_supported_multi_op():
    gm = torch.fx.symbolic_trace(FullySupportedMultiOp())
    p = hv.partition(gm, min_block_size=2)
    assert count(p, "_run_on_acc") == 1, "All operators are supported, there should be one segment"
    assert children(p) == ["_run_on_acc_tensorrt_0"]
    # Upstream's graph calls aten.cat.default(x, sum_) with a tensor where cat wants a list,
    # so it cannot run; the split module fails identically.
    assert_same_failure(p, *xy(), match="List\\[Tensor\\]")


def test_partially_supported_multi_op():
    gm = torch.fx.symbolic_trace(PartiallySupportedMultiOp())
    # np.sum records call_method `sum`: not an aten graph, so hv.partition wants to capture it
    # first, and it cannot be captured (it cannot run). The engine still partitions it as is.
    with pytest.raises(hv.ConfigError, match="not an aten-level graph"):
        hv.partition(gm, min_block_size=2)
    cfg = hv.Config(min_block_size=2)
    p = from_engine_result(gm, cfg, hierviz_engine.run(gm, cfg))
    assert count(p, "_run_on_acc") == 2, "Unsupported operators interleave supported ones, expected 2 segments"
    # np.sum on a proxy records a call_method `sum`, which no backend supports
    assert [sg.backend for sg in p.subgraphs] == ["tensorrt", "torch", "tensorrt"]
    assert {p.backend_of("sum_1"), p.backend_of("sum_2")} == {"torch"}
    # The traced graph cannot run on tensors (Tensor.sum takes no `axis`); the split module
    # fails the same way, at the same op.
    assert_same_failure(p, *xy(), match="axis")


@pytest.mark.parametrize("excluded", [torch.ops.aten.add.Tensor, "torch.ops.aten.add.Tensor"],
                         ids=["OpOverload", "name"])
def test_partially_supported_with_torch_executed_ops(excluded):
    gm = torch.fx.symbolic_trace(PartiallySupportedWithTorchOps())
    p = hv.partition(gm, min_block_size=1, torch_executed_ops={excluded})
    unexpected_ops = {torch.ops.aten.add.Tensor}
    expected_ops = {torch.ops.aten.relu.default, torch.ops.aten.pow.Tensor_Scalar}
    seen = set()
    for name, sub in p.module.named_children():
        if "_run_on_acc" in name:
            seen |= {n.target for n in sub.graph.nodes if n.op == "call_function"}
    assert not seen & unexpected_ops
    assert expected_ops <= seen
    assert p.reason_code_of("add_tensor") == "torch_executed_ops"
    assert_same_outputs(p, *xy())


def test_two_backends(simple_model_graph):
    gm, example = simple_model_graph
    p = hv.partition(gm, config=two_backends())
    names = children(p)
    assert all(n.startswith(("_run_on_acc_inductor", "_run_on_acc_tensorrt")) for n in names), names
    assert count(p, "_run_on_acc_inductor") == 2, "There should be 2 subgraphs running on inductor backend"
    assert count(p, "_run_on_acc_tensorrt") == 2, "There should be 2 subgraph running on tensorrt backend"
    for sg in p.subgraphs:
        if sg.backend == "inductor":
            assert all(n.startswith("convolution") for n in sg.nodes), sg
    assert_same_outputs(p, example)


def test_two_backends_with_torch_executed_ops(simple_model_graph):
    gm, example = simple_model_graph
    p = hv.partition(gm, config=two_backends(torch_executed_ops={BATCH_NORM}))
    names = children(p)
    assert all(n.startswith(("_run_on_acc_inductor", "_run_on_acc_tensorrt", "_run_on_gpu")) for n in names), names
    assert count(p, "_run_on_gpu") == 2, "There should be 2 subgraphs running on torch gpu backend"
    assert count(p, "_run_on_acc_inductor") == 2, "There should be 2 subgraphs running on inductor backend"
    assert count(p, "_run_on_acc_tensorrt") == 2, "There should be 2 subgraph running on tensorrt backend"
    for sg in p.subgraphs:
        if sg.backend == "torch":
            # batch norm and the getitem that unpacks it
            assert [n.rstrip("_0123456789") for n in sg.nodes] == ["_native_batch_norm_legit_no_training", "getitem"]
    assert_same_outputs(p, example)


@pytest.mark.parametrize("case", ["two_backends", "two_backends_torch_executed"])
def test_upstream_agrees_on_the_conv_model(simple_model_graph, case):
    """The same two cases through engine='torch_tensorrt': upstream's own answer."""
    gm, _ = simple_model_graph
    cfg = two_backends() if case == "two_backends" else two_backends(torch_executed_ops={BATCH_NORM})
    ours = hv.partition(gm, config=cfg)
    theirs = hv.partition(gm, config=cfg, engine="torch_tensorrt")
    for fragment in ("_run_on_acc_inductor", "_run_on_acc_tensorrt", "_run_on_gpu"):
        assert count(ours, fragment) == count(theirs, fragment)
