"""Engines that fail because the test says so, on any TensorRT: two converters registered with
Torch-TensorRT's converter registry for aten.clamp, each taking only a clamp whose min is its
own marker value (every other clamp keeps Torch-TensorRT's converter).

- `RefusesToConvert`: the converter raises CONVERT_ERROR (stage "convert", node "clamp").
- `RefusesToBuild`: the converter adds an IAssertionLayer whose condition is a constant False;
  TensorRT's builder checks such an assertion at build time and returns no engine, saying
  BUILD_ERROR (stage "build").

Moving aten.clamp to PyTorch (torch_executed_ops) leaves engines that build. `register()` runs
on import, once per process; it needs torch_tensorrt to import (tests skip without TensorRT-RTX).
"""

from __future__ import annotations

import torch
from torch import nn

from hierviz import trt

CONVERT_MARK, BUILD_MARK = -1234.5, -2345.5  # no model clamps at these by chance
CONVERT_ERROR = "RuntimeError: the test's converter refuses this clamp"
BUILD_ERROR = "the test's assertion: this engine never builds"


def _marked(value: float):
    def validator(node: torch.fx.Node, settings: object = None) -> bool:
        return node.kwargs.get("min", node.args[1] if len(node.args) > 1 else None) == value

    return validator


def register() -> None:
    """Add the two converters to Torch-TensorRT's registry (once)."""
    if getattr(register, "done", False):
        return
    trt.require()
    import numpy as np
    from torch_tensorrt.dynamo.conversion import ConverterPriority, dynamo_tensorrt_converter
    from torch_tensorrt.dynamo.conversion.converter_utils import get_trt_tensor

    clamp = torch.ops.aten.clamp.default

    @dynamo_tensorrt_converter(clamp, capability_validator=_marked(CONVERT_MARK), priority=ConverterPriority.HIGH)
    def refuse_to_convert(ctx, target, args, kwargs, name):
        raise RuntimeError(CONVERT_ERROR.split(": ", 1)[1])

    @dynamo_tensorrt_converter(clamp, capability_validator=_marked(BUILD_MARK), priority=ConverterPriority.HIGH)
    def refuse_to_build(ctx, target, args, kwargs, name):
        false = get_trt_tensor(ctx, np.array([False]), name + "_never")
        ctx.net.add_assertion(false, BUILD_ERROR)
        return ctx.net.add_identity(args[0]).get_output(0)

    register.done = True  # type: ignore[attr-defined]


class _Clamped(nn.Module):
    """Linear, ReLU, clamp(min=MARK), Linear, ReLU: one engine, whose clamp the test's converter takes."""

    MARK = 0.0

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.clamp(self.a(x).relu(), min=self.MARK)).relu()


class RefusesToConvert(_Clamped):
    MARK = CONVERT_MARK


class RefusesToBuild(_Clamped):
    MARK = BUILD_MARK


if trt.available():
    register()
