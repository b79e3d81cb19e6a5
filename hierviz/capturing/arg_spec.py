"""One flat input of a captured graph as the capture fixed it: a tensor's dtype and shape, a
scalar's value, a symbolic int, or nothing known (`ArgSpec`, a part of InputSpec)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ArgSpec:
    """One flat input of a captured graph.

    kind: "tensor" (dtype and shape: ints for static dims, symbol expressions as text for
    dynamic ones), "scalar" (value fixed at capture), "symint" (an int input that is a
    symbol) or "any" (no metadata: not checked).
    """

    name: str
    kind: str
    dtype: str | None = None
    shape: tuple[int | str, ...] | None = None
    value: Any = None

    def __str__(self) -> str:
        return self.text()

    def text(self, show: Any = str) -> str:
        """As text, each dimension written by `show` (InputSpec.show: the user's Dim names)."""
        if self.kind == "tensor":
            dims = ", ".join(show(str(d)) for d in self.shape or ())
            return f"{self.name}: {str(self.dtype).replace('torch.', '')}[{dims}]"
        if self.kind == "scalar":
            return f"{self.name}: {type(self.value).__name__} = {self.value!r}"
        if self.kind == "symint":
            return f"{self.name}: int = {show(str(self.shape[0]))}" if self.shape else f"{self.name}: int"
        return f"{self.name}: any"
