"""Bytes per element come from torch.dtype.itemsize, in the time overlay's edges and in the work
estimate that splits a subgraph's time alike. The two used to read two hand-written tables that
disagreed: uint16 and float8_e4m3fnuz were unknown to both (the edge said nothing, the estimate
took 4 bytes), complex128 was 16 bytes to the estimate and unknown to the edges."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.drawing.time_overlay import tensor_bytes
from hierviz.drawing.work_estimate import node_work
from hierviz.partitioner.record import TensorSpec

from .test_cost_overlay import fake_measurement

ADD, MUL = "torch.ops.aten.add.Tensor", "torch.ops.aten.mul.Tensor"


class AddThenMul(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x + x
        return y * y


@pytest.mark.parametrize("dtype, size", [(torch.uint16, 2), (torch.float8_e4m3fnuz, 1), (torch.float32, 4)])
def test_a_boundary_edge_and_the_work_estimate_count_the_dtypes_bytes(dtype, size):
    x = torch.zeros(2, 3, dtype=dtype)  # 6 elements
    p = hv.partition(AddThenMul().eval(), (x,), min_block_size=1,
                     support={"tensorrt": hv.support.ops([ADD])})  # the mul runs in PyTorch
    assert [sg.backend for sg in p.subgraphs] == ["tensorrt", "torch"]
    src = p.render("collapsed", measurement=fake_measurement(p, [1.0, 1.0])).source
    assert f"{6 * size} B cross here per call\\n1 tensor(s):\\nadd:" in src  # the add's output, into PyTorch's mul
    t = p.records
    add = list(t.name).index("add")
    assert node_work(t)[add] == 6 + 2 * 6 * size  # one FLOP per element + the bytes of x (its one input) and its output


def test_complex128_is_16_bytes_to_both():
    spec = TensorSpec("z", (2, 3), str(torch.complex128))
    assert tensor_bytes(spec) == 96
    assert tensor_bytes(TensorSpec("n", None, "int")) == 0  # a Python int, not a tensor
