"""The computation a model does, as one digest: its forward traced on fake tensors, every aten
op recorded with what it reads. A cached capture is still the model's when the digest then and
now are equal (hierviz.capturing.cached_capture_check)."""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from hierviz.capturing.model_copy import private_copy
from hierviz.foundation.digests import digest, tensor_digest

logger = logging.getLogger(__name__)


class OpTrace(TorchDispatchMode):
    """Records every aten op a forward run on fake tensors calls (`parts`, for one digest): the op, its
    fake tensors by the order they were made (which op's result feeds which), with their shapes,
    strides, dtypes and devices, its real tensors (weights, buffers, constants) by their values
    (`tensor_digest`, remembered per process), and its other arguments by value."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[Any] = []
        self.ids: dict[int, int] = {}
        self.kept: list[torch.Tensor] = []  # each fake tensor seen, alive so that its id is not reused

    def describe(self, value: Any) -> Any:
        if isinstance(value, FakeTensor):
            if id(value) not in self.ids:
                self.ids[id(value)] = len(self.ids)
                self.kept.append(value)
            return ("F", self.ids[id(value)], tuple(value.shape), tuple(value.stride()), str(value.dtype),
                    str(value.device))
        if isinstance(value, torch.Tensor):
            with _disable_current_modes():  # hashed as a plain tensor, not traced on fake ones
                values = tensor_digest(value)
            return ("R", tuple(value.shape), tuple(value.stride()), str(value.dtype), str(value.device), values)
        if isinstance(value, (list, tuple)):
            return tuple(self.describe(v) for v in value)
        if isinstance(value, dict):
            return tuple((str(k), self.describe(v)) for k, v in value.items())
        if isinstance(value, (type(None), bool, int, float, complex, str, torch.dtype, torch.device, torch.layout,
                              torch.memory_format)):
            return repr(value)
        return type(value).__qualname__  # (a generator, an opaque object: its repr may hold an address)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.parts.append((str(func), self.describe(args), self.describe(kwargs), self.describe(out)))
        return out


def computation_digest(model: torch.nn.Module, args: tuple, kwargs: dict | None) -> str | None:
    """A digest of the computation the model's forward does on inputs of the example inputs'
    shapes and dtypes: run on fake tensors (no arithmetic: a 1.1B model in well under a second),
    every aten op recorded with what it reads (`OpTrace`) and the outputs. Equal digests: the
    same ops on the same weights, constants and shapes, so the same outputs for any input values.
    None when the forward cannot run on fake tensors (it reads a tensor's values: `.item()`, a
    branch on data) or fails; the model is run on a private copy."""
    try:
        copied = private_copy(model)
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        a, k = torch.utils._pytree.tree_map_only(torch.Tensor, mode.from_tensor, (args, kwargs or {}))
        trace = OpTrace()
        with torch.no_grad(), mode, trace:
            out = copied(*a, **k)
            leaves, spec = torch.utils._pytree.tree_flatten(out)
            structure = str(spec) if "0x" not in str(spec) else type(out).__qualname__  # (no address in it)
            trace.parts.append(("output", trace.describe(leaves), structure))
    except Exception:  # (the check then runs the model: the trace is a shortcut, not a verdict)
        logger.debug("the model could not be traced on fake tensors", exc_info=True)
        return None
    return digest(trace.parts)



__all__ = ["OpTrace", "computation_digest"]
