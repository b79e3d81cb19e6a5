"""`OpSetSupport`: a support source that is a set of op names (qualified names; a packet name
takes all its overloads), deciding per op target; `hv.support.ops(...)` and `none()` are one,
and the TensorRT converter registry's and TorchInductor's sources build on it.
"""

from __future__ import annotations

from hierviz.foundation.opnames import in_op_set, packets_in
from hierviz.support.support_base import Support


class OpSetSupport(Support):
    def __init__(self, names: frozenset[str], key: tuple, description: str, kind: str,
                 reject: str = "") -> None:
        super().__init__(key, description)
        self.names = names
        self.packets = packets_in(names)
        self.kind = kind
        self._reject = reject

    def accepts_name(self, name: str) -> bool:
        return in_op_set(name, self.names, self.packets)

    def rejection(self, name: str) -> str:
        return self._reject or f"not in {self.description}"

    def to_dict(self) -> dict:
        if self.kind == "ops":
            return {"kind": "ops", "ops": sorted(self.names)}
        return {"kind": self.kind}


__all__ = ["OpSetSupport"]
