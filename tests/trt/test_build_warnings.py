"""Torch-TensorRT's warnings while it converts and builds a subgraph are held back from stderr
and kept, each once, on the build's `warnings` (part.build() shows them in Builds.notes)."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from hierviz import trt

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")

CONSTANT_OPERANDS = ("Both operands of the binary elementwise op {} are constant. In this case, please consider "
                     "constant fold the model first.")


def two_constants_added(times: int = 1) -> torch.fx.GraphModule:
    """relu(x) * (a + b) with a and b weights, `times` such sums: an aten graph Torch-TensorRT's lowering
    would fold, written by hand so its converter gets two constants and warns."""
    root = nn.Module()
    root.register_buffer("a", torch.ones(4))
    root.register_buffer("b", torch.full((4,), 2.0))
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    out = graph.call_function(torch.ops.aten.relu.default, (x,))
    for _ in range(times):
        total = graph.call_function(torch.ops.aten.add.Tensor, (graph.get_attr("a"), graph.get_attr("b")))
        out = graph.call_function(torch.ops.aten.mul.Tensor, (out, total))
    graph.output(out)
    gm = torch.fx.GraphModule(root, graph)
    FakeTensorProp(gm, FakeTensorMode(allow_non_fake_inputs=True)).propagate(torch.randn(2, 4))
    return gm


def test_a_conversion_that_warns_builds_quietly_with_the_warning_kept(capfd, recwarn) -> None:
    trt.require()
    capfd.readouterr()  # what importing Torch-TensorRT printed
    made = trt.convert_and_build(two_constants_added())
    assert made.stage == "built"
    assert made.warnings == (CONSTANT_OPERANDS.format("add_tensor"),)
    assert capfd.readouterr().err == ""
    assert not [w for w in recwarn if "elementwise" in str(w.message)]


def test_each_warning_is_kept_once_in_the_order_first_heard(monkeypatch) -> None:
    from torch_tensorrt.dynamo.conversion._TRTInterpreter import TRTInterpreter

    construct = TRTInterpreter._construct_trt_network_def

    def warning_twice(self):
        for _ in range(2):
            warnings.warn("the same warning <pkg.ITensor object at 0x7f0012>", UserWarning, stacklevel=2)
        return construct(self)

    monkeypatch.setattr(TRTInterpreter, "_construct_trt_network_def", warning_twice)
    made = trt.convert_and_build(two_constants_added(times=2))
    assert made.stage == "built"
    assert made.warnings == ("the same warning <ITensor>", CONSTANT_OPERANDS.format("add_tensor"),
                             CONSTANT_OPERANDS.format("add_tensor_1"))


SHAPE_ERROR = "ITensor::getDimensions: Error Code 4: Shape Error (the test's: unsqueeze index (1) must be less than 1)"


def test_tensorrts_errors_while_converting_stay_off_stderr_and_are_kept(monkeypatch, capfd) -> None:
    """TensorRT's messages while Torch-TensorRT converts go through a logger of their own
    ("torch_tensorrt [TensorRT Conversion Context]", not a child of "torch_tensorrt"): with a handler
    on the root logger, as logging.basicConfig puts there, they reached stderr during a repro's search."""
    import logging

    import tensorrt
    from torch_tensorrt.dynamo.conversion._TRTInterpreter import TRTInterpreter
    from torch_tensorrt.logging import TRT_LOGGER

    trt.require()
    construct = TRTInterpreter._construct_trt_network_def

    def logs_an_error(self):
        TRT_LOGGER.log(tensorrt.ILogger.Severity.ERROR, SHAPE_ERROR)
        return construct(self)

    monkeypatch.setattr(TRTInterpreter, "_construct_trt_network_def", logs_an_error)
    root = logging.getLogger()
    handler = logging.StreamHandler()  # stderr, as logging.basicConfig()
    root.addHandler(handler)
    try:
        capfd.readouterr()
        made = trt.convert_and_build(two_constants_added())
        assert capfd.readouterr().err == ""
    finally:
        root.removeHandler(handler)
    assert made.stage == "built"
    assert f"logged an error: {SHAPE_ERROR}" in made.warnings
