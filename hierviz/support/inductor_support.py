"""TorchInductor as a support source: `InductorSupport`, the ops it lowers plus (with
`fallbacks`) those it runs as fallback kernels, minus the ops it refuses
(hierviz.support.inductor_ops), and how it runs each accepted op.
"""

from __future__ import annotations

from hierviz.support.inductor_ops import fallback_refusal, lowered_names
from hierviz.support.op_sets import OpSetSupport


class InductorSupport(OpSetSupport):
    """What TorchInductor compiles: ops it lowers, plus (with `fallbacks`) every other
    OpOverload it runs as an implicit fallback kernel, minus the ops it refuses (even those
    it has a lowering for, e.g. nonzero: torch._inductor.compile fails on them)."""

    def __init__(self, fallbacks: bool) -> None:
        what = "lowerings and fallback kernels" if fallbacks else "lowerings"
        super().__init__(lowered_names(), ("inductor",) if fallbacks else ("inductor", False),
                         f"TorchInductor's {what}", "inductor", reject="no TorchInductor lowering")
        self.fallbacks = fallbacks

    def accepts_name(self, name: str) -> bool:
        if name == "_operator.getitem":
            return True
        if not self.fallbacks:
            return super().accepts_name(name) and not fallback_refusal(name).why
        return not fallback_refusal(name).why  # also refuses lowered ops such as nonzero

    def rejection(self, name: str) -> str:
        refusal = fallback_refusal(name)
        if refusal.by_inductor:
            return refusal.why
        return (refusal.why or "no TorchInductor lowering") if self.fallbacks \
            else "no TorchInductor lowering (fallback kernels left out: inductor(fallbacks=False))"

    def how(self, name: str) -> str:
        """'lowered' or 'fallback kernel': how TorchInductor compiles an accepted op."""
        return "lowered" if super().accepts_name(name) else "fallback kernel"

    def to_dict(self) -> dict:
        return {"kind": "inductor"} if self.fallbacks else {"kind": "inductor", "fallbacks": False}


__all__ = ["InductorSupport"]
