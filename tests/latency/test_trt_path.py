"""hv.measure's TensorRT path, checked on CPU: the refusal when TensorRT cannot build here,
trt_settings checked even without TensorRT subgraphs, engines named after their subgraph, and
dynamic TensorRT inputs from a dynamic capture (hierviz.trt's own tests are in tests/trt/test_trt.py)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.latency import CompileCache
from hierviz.latency.compiling.lift import bake, lift, symbolic_shapes
from hierviz.latency.compiling.compile_plan import plan

needs_trt = pytest.mark.skipif(not trt.available(), reason=f"torch_tensorrt unusable: {trt.info().error}")
pytestmark = needs_trt


# ----------------------------------------------------------------------------- availability


def test_measure_refuses_rtx_on_a_datacenter_gpu_before_compiling(tiny_conv, monkeypatch) -> None:
    """The decision hv.measure takes on an H200 with TensorRT-RTX (the GPU is simulated: the
    reason comes from build_verdict over the installed table)."""
    _, _, gm = tiny_conv
    part = hv.partition(gm, min_block_size=1)
    tags = [sg.tag for sg in part.subgraphs if sg.backend == "tensorrt"]
    real = trt.info()
    h200 = dataclasses.replace(real, cuda=True, gpu="NVIDIA H200", capability=(9, 0), can_build=False,
                               reason=trt.build_verdict("rtx", (9, 0), (((8, 9),)), gpu="NVIDIA H200"))
    monkeypatch.setattr(trt, "info", lambda device=None: h200)
    with pytest.raises(hv.TensorRTUnavailableError) as caught:
        plan(part, torch.device("cuda", 0))
    text = str(caught.value)
    assert all(tag in text for tag in tags) and "SM90" in text and 'pip install "hierviz[tensorrt]"' in text


# ----------------------------------------------------------------------------- settings


def test_measure_checks_trt_settings_even_without_tensorrt_subgraphs(tiny_conv) -> None:
    _, x, gm = tiny_conv
    part = hv.partition(gm, priority=("inductor",), support={"inductor": hv.support.inductor()}, min_block_size=1)
    with pytest.raises(hv.ConfigError, match="min_block_size.*hv.Config"):
        hv.measure(part, x, trt_settings={"min_block_size": 1}, cache=CompileCache(), warmup=0, iters=1)


# ----------------------------------------------------------------------------- engines


def test_builder_passes_the_subgraph_tag_to_named_compilers(tiny_conv) -> None:
    _, x, gm = tiny_conv
    names = []

    def compile_fn(g, inputs, options, persist, name=""):
        names.append(name)
        return g

    comp = hv.latency.Compiler(backend="named", compile=compile_fn, lifts_weights=False, named=True)
    part = hv.partition(gm, priority=("named",), min_block_size=1,
                        support={"named": hv.support.ops(["torch.ops.aten.relu.default"])})
    m = hv.measure(part, x, compilers={"named": comp}, cache=CompileCache(), warmup=0, iters=1, per_subgraph=False)
    tags = [sg.tag for sg in part.subgraphs if sg.backend == "named"]
    assert names == tags and m.outputs_match is True


# ----------------------------------------------------------------------------- dynamic shapes
class _Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) + 1


def _trt_inputs(gm: torch.fx.GraphModule, x: torch.Tensor) -> tuple[list, tuple]:
    part = hv.partition(gm, min_block_size=1)
    (tag,) = [sg.tag for sg in part.subgraphs if sg.backend == "tensorrt"]
    lifted = lift(getattr(part.module, tag), keep_meta=True)  # as hv.measure does for TensorRT
    return trt.submodule_inputs(bake(lifted, (x,))), symbolic_shapes(lifted.gm)


def test_dynamic_capture_gives_dynamic_tensorrt_inputs() -> None:
    x = torch.randn(4, 8)
    batch = torch.export.Dim("batch", min=2, max=16)
    gm = hv.capture(_Mlp().eval(), (x,), dynamic_shapes=({0: batch},))
    inputs, shapes = _trt_inputs(gm, x)
    (inp,) = inputs
    assert trt.is_dynamic(inp)
    assert inp.shape["opt_shape"] == (4, 8) and inp.shape["max_shape"] == (16, 8)
    assert inp.shape["min_shape"][0] <= 2 and inp.shape["min_shape"][1] == 8
    assert shapes and shapes[0][2][0][2] == "16"  # the range is part of the compile-cache key


def test_static_capture_gives_static_tensorrt_inputs() -> None:
    x = torch.randn(4, 8)
    inputs, shapes = _trt_inputs(hv.capture(_Mlp().eval(), (x,)), x)
    assert not trt.is_dynamic(inputs[0]) and tuple(inputs[0].shape) == (4, 8) and shapes == ()
