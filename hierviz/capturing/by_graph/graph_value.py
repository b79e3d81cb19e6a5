"""GraphValue: the name, shape and dtype of one input or output of a captured dynamo graph.

Dynamo's graphs take the user's tensors, the weights it lifted out of the model and, with
dynamic shapes, SymInts; this record says which, without holding the value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class GraphValue:
    """One graph input or output: `dtype` is 'float32'-style for a tensor, 'SymInt' / 'int' /
    the type's name for anything else; `shape` holds ints, and text for a symbolic size."""

    name: str
    shape: tuple[int | str, ...]
    dtype: str

    def __str__(self) -> str:
        if self.dtype in ("SymInt", "int", "float", "bool") and not self.shape:
            return f"{self.name}: {self.dtype}"
        return f"{self.name}: {self.dtype}[{', '.join(str(d) for d in self.shape)}]"


def describe(name: str, value: Any) -> GraphValue:
    """The GraphValue of `value` (a tensor, FakeTensor, SymInt or Python value) named `name`."""
    if isinstance(value, torch.Tensor):
        shape = tuple(int(d) if isinstance(d, int) or str(d).isdigit() else str(d) for d in value.shape)
        return GraphValue(name, shape, str(value.dtype).replace("torch.", ""))
    if isinstance(value, torch.SymInt):
        return GraphValue(name, (), "SymInt")
    return GraphValue(name, (), type(value).__name__)


__all__ = ["GraphValue", "describe"]
