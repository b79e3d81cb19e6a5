"""example_from_graph makes each input on the device of its placeholder's recorded value: a
graph captured on CUDA runs on CUDA inputs; a meta value (what a graph sent to a worker keeps)
on the CPU; a device this machine does not have is a MeasureError that says what to do."""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import hierviz as hv
from hierviz.capturing.example_inputs import example_from_graph


def graph_with_values(*values: torch.Tensor) -> torch.fx.GraphModule:
    """A graph adding its inputs, whose placeholders record `values` as meta["val"]."""
    graph = torch.fx.Graph()
    nodes = [graph.placeholder(f"x{i}") for i in range(len(values))]
    for node, value in zip(nodes, values):
        node.meta["val"] = value
    total = nodes[0]
    for node in nodes[1:]:
        total = graph.call_function(torch.ops.aten.add.Tensor, (total, node))
    graph.output(total)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def fake(device: str, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    with FakeTensorMode(allow_non_fake_inputs=True):
        return torch.empty(shape, dtype=dtype, device=device)


def test_meta_and_cpu_values_give_cpu_inputs_of_their_shape_and_dtype() -> None:
    inputs = example_from_graph(graph_with_values(torch.empty(2, 3, device="meta"),
                                                  fake("cpu", 2, 3, dtype=torch.bfloat16)))
    assert [(t.device.type, tuple(t.shape), t.dtype) for t in inputs] == [("cpu", (2, 3), torch.float32),
                                                                         ("cpu", (2, 3), torch.bfloat16)]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the inputs are made there")
def test_a_device_this_machine_lacks_is_a_measure_error_saying_what_to_do() -> None:
    graph = graph_with_values(fake("cpu", 4), fake("cuda", 4))
    with pytest.raises(hv.MeasureError) as caught:
        example_from_graph(graph)
    message = str(caught.value)
    assert "input x1" in message and "cuda:0" in message and "which this machine does not have" in message
    assert "pass example_inputs on a device this machine has" in message


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_inputs_follow_a_fake_cuda_value_onto_the_gpu() -> None:
    inputs = example_from_graph(graph_with_values(fake("cuda", 4), torch.empty(4, device="meta")))
    assert [t.device.type for t in inputs] == ["cuda", "cpu"]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_model_captured_on_cuda_builds_without_a_run_failure() -> None:
    from hierviz import trt

    if not trt.available():
        pytest.skip("needs torch_tensorrt")
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).cuda().eval()
    part = hv.partition(model, (torch.randn(2, 8, device="cuda"),), min_block_size=1)
    assert all(v.device.type == "cuda" for v in example_from_graph(part.graph))
    builds = part.build()
    assert "run" not in set(builds.df["stage"]), builds.df[["stage", "error"]]
