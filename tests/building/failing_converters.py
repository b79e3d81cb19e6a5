"""Engines that fail because the test says so, on any TensorRT: converters registered with
Torch-TensorRT's converter registry for aten.clamp, each taking only a clamp whose min is its
own marker value (every other clamp keeps Torch-TensorRT's converter).

- `RefusesToConvert`: the converter raises CONVERT_ERROR (stage "convert", node "clamp").
- `RefusesToBuild`: the converter adds an IAssertionLayer whose condition is a constant False;
  TensorRT's builder checks such an assertion at build time and returns no engine, saying
  BUILD_ERROR (stage "build").
- `RefusesToBuildAfterALayer`: the same assertion, added only when the clamp's input is made by
  another layer of the engine (not the engine's own input): like a builder failure of a fused
  pattern, it needs more than one node, so the smallest failing part is the clamp and the node
  before it (`clamped_after` puts such a clamp after any module of a model).
- `LogsATensorRTError`: the converter adds a TopK on the clamp's input flattened to 1-D, as
  Torch-TensorRT's sort converter does on a 1-D tensor: TensorRT logs LOGGED_ERROR and reading
  the TopK's shape raises "RuntimeError: Could not get tensor shape." (stage "convert").
- `RefusesADynamicInput`: the converter raises DYNAMIC_ERROR for an input with a dynamic
  dimension and is an identity otherwise: only a graph whose dynamic dimensions were kept fails.
- `JudgedByItsProducer`: `hierviz_test::judged` (an identity op of the test's, else no converter)
  has a converter only where its input is made by aten.relu or is the engine's own input, and it
  raises CONTEXT_ERROR: after a relu run in PyTorch, Torch-TensorRT's partitioner takes it into an
  engine that fails to convert; after any other op it stays in PyTorch (a repro's stand-in).

Moving aten.clamp to PyTorch (torch_executed_ops) leaves engines that build. `register()` runs
on import, once per process; it needs torch_tensorrt to import (tests skip without TensorRT-RTX).
A test whose failing build runs in another Python process (repro.py, the Explorer's worker)
calls `registered_in_new_processes` first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hierviz import trt

CONVERT_MARK, BUILD_MARK, PAIR_MARK = -1234.5, -2345.5, -3456.5  # no model clamps at these by chance
LOGGED_MARK, DYNAMIC_MARK = -4567.5, -5678.5
CONVERT_ERROR = "RuntimeError: the test's converter refuses this clamp"
BUILD_ERROR = "the test's assertion: this engine never builds"
# what TensorRT logs for LogsATensorRTError's TopK (its layer named refused_topk)
LOGGED_ERROR = ("ITensor::getDimensions: Error Code 3: API Usage Error (refused_topk: at least 2 dimensions are "
                "required for input.")
DYNAMIC_ERROR = "the test's converter refuses a clamp of a dynamic shape"
CONTEXT_ERROR = "the test's converter refuses hierviz_test::judged"


def _judged_defined() -> None:
    """Define `hierviz_test::judged`, an identity (a copy), in this process (once)."""
    if hasattr(torch.ops.hierviz_test, "judged"):
        return

    @torch.library.custom_op("hierviz_test::judged", mutates_args=())
    def judged(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @judged.register_fake
    def _(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)


def _after_relu_or_on_an_input(node: torch.fx.Node, settings: object = None) -> bool:
    made_by = node.args[0]
    return isinstance(made_by, torch.fx.Node) and (made_by.op == "placeholder"
                                                   or made_by.target is torch.ops.aten.relu.default)


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

    @dynamo_tensorrt_converter(clamp, capability_validator=_marked(PAIR_MARK), priority=ConverterPriority.HIGH)
    def refuse_to_build_after_a_layer(ctx, target, args, kwargs, name):
        if not args[0].is_network_input:  # made by a layer of this engine
            false = get_trt_tensor(ctx, np.array([False]), name + "_never")
            # named: TensorRT's error names it twice, and an unnamed layer's number would move where
            # the error's line is cut at 200 characters with the size of the part
            ctx.net.add_assertion(false, BUILD_ERROR).name = "refused"
        return ctx.net.add_identity(args[0]).get_output(0)

    @dynamo_tensorrt_converter(clamp, capability_validator=_marked(LOGGED_MARK), priority=ConverterPriority.HIGH,
                               supports_dynamic_shapes=True)
    def refuse_with_a_logged_error(ctx, target, args, kwargs, name):
        flat = ctx.net.add_shuffle(args[0])
        flat.reshape_dims = (-1,)
        topk = ctx.net.add_topk(flat.get_output(0), trt.tensorrt_library().TopKOperation.MAX, 1, 1)
        topk.name = "refused_topk"
        _ = topk.get_output(0).shape  # TensorRT logs LOGGED_ERROR; its binding raises "Could not get tensor shape."
        return ctx.net.add_identity(args[0]).get_output(0)

    @dynamo_tensorrt_converter(clamp, capability_validator=_marked(DYNAMIC_MARK), priority=ConverterPriority.HIGH,
                               supports_dynamic_shapes=True)
    def refuse_a_dynamic_input(ctx, target, args, kwargs, name):
        if any(d < 0 for d in args[0].shape):
            raise RuntimeError(DYNAMIC_ERROR)
        return ctx.net.add_identity(args[0]).get_output(0)

    _judged_defined()

    @dynamo_tensorrt_converter(torch.ops.hierviz_test.judged.default, capability_validator=_after_relu_or_on_an_input,
                               supports_dynamic_shapes=True)
    def refuse_judged(ctx, target, args, kwargs, name):
        raise RuntimeError(CONTEXT_ERROR)

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


class LogsATensorRTError(_Clamped):
    MARK = LOGGED_MARK


class RefusesADynamicInput(_Clamped):
    MARK = DYNAMIC_MARK


class JudgedByItsProducer(nn.Module):
    """hierviz_test::judged on relu(x) (the test runs relu in PyTorch), then * 2."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _judged_defined()
        return torch.ops.hierviz_test.judged(x.relu()) * 2


class RefusesToBuildAfterALayer(nn.Module):
    """y = addmm(bias, x, w), z = clamp(y, min=PAIR_MARK), relu(y + z): one engine of four nodes
    that fails at build, whose smallest failing part is (addmm, clamp): the clamp alone builds,
    and both values leave the part (the add outside takes them). x is (rows, 8)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8) * 0.1)
        self.bias = nn.Parameter(torch.randn(8) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.addmm(self.bias, x, self.w)
        return (y + torch.clamp(y, min=PAIR_MARK)).relu()


def clamped_after(module: nn.Module) -> Any:
    """A clamp(min=PAIR_MARK) on `module`'s output (a forward hook, whose handle is returned): the
    model's engine holding it fails to build, and its smallest failing part is the clamp and the
    node that makes the module's output. The clamp changes no value above PAIR_MARK."""
    return module.register_forward_hook(lambda mod, args, out: torch.clamp(out, min=PAIR_MARK))


def registered_in_new_processes(monkeypatch: Any, folder: Path) -> None:
    """The Python processes the test starts from now on (repro.py, the Explorer's worker)
    register these converters too: `folder` gets a sitecustomize.py importing this module, and
    goes first on PYTHONPATH with the repository (monkeypatch puts PYTHONPATH back after the test)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text("import tests.building.failing_converters  # registers them\n")
    root = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(folder), root, os.environ.get("PYTHONPATH"))
                                                     if p))


if trt.available():
    register()
