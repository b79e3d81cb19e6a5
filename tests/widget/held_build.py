"""A build that holds in TensorRT's conversion until its process is killed: a converter registered
with Torch-TensorRT's registry for a clamp whose min is HOLD_MARK, which creates the file named by
$HIERVIZ_TEST_HELD_BUILD (its process id inside) and then sleeps for HOLD_S. `HeldBuild` is a
model with such a clamp; `held_in_new_processes` registers the converter in the Python processes a
test starts (the Explorer's worker) as tests/building/failing_converters.py does its own. The
test's own process never registers it (nothing built here can hold)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hierviz import trt

HOLD_MARK = -6789.5  # no model clamps at this by chance
MARK = "HIERVIZ_TEST_HELD_BUILD"
HOLD_S = 600.0  # longer than any test waits: a test sees the build still held, or its process ended


def register() -> None:
    """Add the holding converter to Torch-TensorRT's registry (once)."""
    if getattr(register, "done", False):
        return
    trt.require()
    from torch_tensorrt.dynamo.conversion import ConverterPriority, dynamo_tensorrt_converter

    def held(node: torch.fx.Node, settings: object = None) -> bool:
        return node.kwargs.get("min", node.args[1] if len(node.args) > 1 else None) == HOLD_MARK

    @dynamo_tensorrt_converter(torch.ops.aten.clamp.default, capability_validator=held,
                               priority=ConverterPriority.HIGH)
    def hold(ctx, target, args, kwargs, name):
        path = os.environ.get(MARK)
        if path:
            Path(path).write_text(str(os.getpid()))
        time.sleep(HOLD_S)
        return ctx.net.add_identity(args[0]).get_output(0)

    register.done = True  # type: ignore[attr-defined]


class HeldBuild(nn.Module):
    """Linear, ReLU, clamp(min=HOLD_MARK), Linear: one engine, whose conversion holds."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.clamp(self.a(x).relu(), min=HOLD_MARK))


def held_in_new_processes(monkeypatch: Any, folder: Path) -> None:
    """The Python processes the test starts from now on register the holding converter:
    `folder` gets a sitecustomize.py importing this module, first on PYTHONPATH with the
    repository (monkeypatch puts PYTHONPATH back after the test)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text("import tests.widget.held_build  # registers the converter\n")
    root = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(folder), root, os.environ.get("PYTHONPATH"))
                                                     if p))


if trt.available() and os.environ.get(MARK):  # a process the test started: this one never holds a build
    register()
