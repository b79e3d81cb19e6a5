"""Example inputs made from a graph: tensors shaped like its placeholders' recorded values, on
the devices they were captured on, for compiling, measuring and building when no inputs are given."""

from __future__ import annotations

from typing import Any

import torch

from hierviz.errors import MeasureError


def example_from_graph(graph: torch.fx.GraphModule) -> tuple[torch.Tensor, ...]:
    """Inputs shaped like the graph's placeholders (from meta['val']): random floats, zeros
    for integers (valid indices), for compiling when no example inputs are given. Each is made
    on the device its value records (input_device), so a graph captured on CUDA runs on CUDA;
    the values are drawn on the CPU first, the same on every device."""
    out = []
    gen = torch.Generator().manual_seed(0)
    for node in graph.graph.nodes:
        if node.op != "placeholder":
            continue
        val = node.meta.get("val")
        shape = _shape(val)
        if shape is None:
            raise MeasureError(f"input {node.name} has no shape recorded; pass example_inputs=... to compile().")
        device = input_device(node.name, val)
        if val.dtype.is_floating_point or val.dtype.is_complex:
            out.append(torch.randn(shape, generator=gen).to(device=device, dtype=val.dtype))
        else:
            out.append(torch.zeros(shape, dtype=val.dtype, device=device))
    return tuple(out)


def input_device(name: str, val: torch.Tensor) -> torch.device:
    """The device for input `name` whose recorded value is `val` (a FakeTensor's device is the
    one it was captured on). A meta value records no device (the graph codec keeps meta values
    for a graph sent to a worker): the CPU. A device this machine does not have is a
    MeasureError: a graph captured there keeps its constants there and cannot run here."""
    device = val.device
    if device.type == "meta":
        return torch.device("cpu")
    if device.type != "cpu":
        try:
            torch.empty(0, device=device)
        except (RuntimeError, AssertionError) as exc:  # no driver, or torch built without that backend
            raise MeasureError(
                f"input {name} was captured on {device}, which this machine does not have: the graph keeps "
                "its constants there and cannot run here as captured. Run this on a machine with "
                f"{device}, or capture the model again with its weights on a device this machine has "
                "(model.to('cpu')) and pass example_inputs on a device this machine has.") from exc
    return device


def _shape(val: Any) -> tuple[int, ...] | None:
    """The sizes of a tensor input's recorded value, None unless it is a tensor with every size known."""
    if not isinstance(val, torch.Tensor):
        return None
    sizes = []
    for d in val.shape:
        size = _size_hint(d)
        if size is None:
            return None
        sizes.append(size)
    return tuple(sizes)


def _size_hint(d: Any) -> int | None:
    """A size: the int, or for a dynamic dimension the size the capture's example had."""
    if isinstance(d, int):
        return d
    node: Any = getattr(d, "node", None)  # a SymInt's SymNode (None: no expression to read)
    hint = getattr(node, "hint", None)
    if hint is not None:
        return int(hint)
    env: Any = getattr(node, "shape_env", None)
    try:
        return int(node.expr.xreplace(env.var_to_val))
    except (AttributeError, TypeError, ValueError):  # no shape env or no recorded example size
        return None
