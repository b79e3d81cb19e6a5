"""Which ops TorchInductor compiles, and why not: the ops it lowers itself, and for every
other op whether it runs as an implicit fallback kernel or is refused (data-dependent output
shapes or values, non-aten ops whose output aliases an input). `hv.support.inductor()` is
built on these answers.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import torch

from hierviz.foundation.opnames import qualname


@functools.lru_cache(maxsize=1)
def lowered_names() -> frozenset[str]:
    """Ops TorchInductor lowers itself: its lowerings, decompositions and explicit fallbacks."""
    from torch._inductor import decomposition, lowering

    targets: set[Any] = set(lowering.lowerings)
    targets |= set(getattr(lowering, "fallbacks", set()))
    targets |= set(decomposition.select_decomp_table())
    names = {qualname(t) for t in targets if isinstance(t, torch._ops.OpOverload)}
    names.add("_operator.getitem")
    return frozenset(names)


# Tags of ops TorchInductor refuses even as fallback kernels: their output's shape (or a
# Python scalar) depends on the input's values, which fake-tensor tracing cannot know without
# unbacked symbolic sizes (torch._inductor.compile raises DynamicOutputShapeException, or
# "trying to get value out of a tracing tensor" for item()).
REFUSED_TAGS = {"dynamic_output_shape": "its output shape depends on the input's values",
                         "data_dependent_output": "its output is a Python value read from the tensor"}


class Refusal(NamedTuple):
    """Why TorchInductor does not run an op as a fallback kernel ('' when it does);
    `by_inductor`: TorchInductor refuses the op itself (its tags, its aliasing), even where it
    has a lowering for it, rather than the name being no OpOverload."""

    why: str
    by_inductor: bool = False


@functools.lru_cache(maxsize=None)
def fallback_refusal(name: str) -> Refusal:
    """Whether TorchInductor runs the op `name` as an implicit fallback kernel
    (torch._inductor.config.implicit_fallbacks, on by default), and why not."""
    parts = name.split(".")
    if len(parts) != 5 or parts[:2] != ["torch", "ops"]:
        return Refusal("not an aten/custom OpOverload (TorchInductor compiles only those)")
    try:
        op = getattr(getattr(getattr(torch.ops, parts[2]), parts[3]), parts[4])
    except (AttributeError, RuntimeError):
        return Refusal("not a registered operator")
    if not isinstance(op, torch._ops.OpOverload):
        return Refusal("not an OpOverload (TorchInductor compiles only those)")
    for tag in op.tags:
        why = REFUSED_TAGS.get(tag.name)
        if why:
            return Refusal(f"TorchInductor cannot compile it: {why} (tag {tag.name})", by_inductor=True)
    aliasing = alias_refusal(op)
    return Refusal(aliasing, by_inductor=bool(aliasing))


def alias_refusal(op: Any) -> str:
    """Why TorchInductor refuses `op` for aliasing, or ''. torch._inductor.compile functionalizes
    the graph first (AOTAutograd), and functionalization takes only aten ops among those whose
    outputs alias an input (schema `-> Tensor(a)`, e.g. prims.broadcast_in_dim in train-mode
    BatchNorm): any other namespace raises "Found a custom (non-ATen) operator whose output has
    alias annotations", even when TorchInductor has a lowering for it."""
    if op.namespace == "aten":
        return ""
    returns = getattr(op._schema, "returns", ())
    if any(r.alias_info is not None for r in returns):
        return (f"TorchInductor cannot compile it: {op.namespace}.{op._schema.name.split('::')[-1]} is a non-aten op "
                "whose output aliases its input, which functionalization refuses")
    return ""


__all__ = ["lowered_names", "REFUSED_TAGS", "Refusal", "fallback_refusal", "alias_refusal"]
