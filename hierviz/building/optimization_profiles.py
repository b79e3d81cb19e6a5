"""Each input's TensorRT optimization profile, as Torch-TensorRT builds it from a graph's
placeholders, without importing torch_tensorrt.

Torch-TensorRT 2.14 (`partitioning.common.construct_submodule_inputs` and
`utils.extract_var_range_info`) gives a static input one shape, and a dynamic dimension
(a SymInt in `meta['val']`) three sizes from its ShapeEnv:
  - min: the range's lower bound, except that 2 becomes 1 (dynamo specialises sizes 0 and 1,
    so a `Dim(min=1)` is recorded as starting at 2); 1 when it has no lower bound;
  - opt: the size the capture's example had (the symbol's hint);
  - max: the range's upper bound; without one, min × 4096 (Torch-TensorRT's default, which
    it warns about).
Two graphs that differ only there build different engines, so the profile belongs in the
build key, and the engine is proven only where it was run: at min, opt and max
(`corner_inputs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from hierviz.capturing.graph_codec import symbol_values

CORNERS = ("min", "opt", "max")
UNBOUNDED_FACTOR = 2**12  # Torch-TensorRT's max for a dimension without an upper bound: min * 4096


@dataclass(frozen=True)
class InputProfile:
    """One input of an engine: its name, dtype and min/opt/max shapes (equal when static);
    `unbounded`: a dynamic dimension had no upper bound, so max is Torch-TensorRT's default."""

    name: str
    dtype: str
    min: tuple[int, ...]
    opt: tuple[int, ...]
    max: tuple[int, ...]
    unbounded: bool = False

    @property
    def dynamic(self) -> bool:
        return self.min != self.max or self.min != self.opt

    def text(self) -> str:
        """'x: (1,3,16,16) → (4,3,16,16) → (8,3,16,16)'; a static input 'x: (4,3,16,16)'."""
        if not self.dynamic:
            return f"{self.name}: {_shape(self.opt)}"
        tail = " (no upper bound: Torch-TensorRT's default max)" if self.unbounded else ""
        return f"{self.name}: {_shape(self.min)} → {_shape(self.opt)} → {_shape(self.max)}{tail}"


def _shape(sizes: Sequence[int]) -> str:
    return "(" + ",".join(str(s) for s in sizes) + ")"


def _int(value: Any) -> int | None:
    """A sympy bound as an int; None for an infinite one."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):  # sympy's infinities
        return None
    return number if abs(number) < 2**62 else None


def symbol_range(size: torch.SymInt) -> tuple[int, int, int, bool]:
    """(min, opt, max, unbounded) of a dynamic size, as Torch-TensorRT's profile takes them."""
    node: Any = size.node
    env, expr = node.shape_env, node.expr
    bounds = env.var_to_range.get(expr) or env.bound_sympy(expr)
    low, high = _int(bounds.lower), _int(bounds.upper)
    low = 1 if low is None or low == 2 else low
    hint = node.hint if node.hint is not None else _int(expr.xreplace(symbol_values(env)))
    unbounded = high is None
    high = low * UNBOUNDED_FACTOR if high is None else high
    opt = int(hint) if hint is not None else int(low + high / 2)  # Torch-TensorRT's fallback, as it writes it
    return low, opt, high, unbounded


def input_profile(name: str, val: Any) -> InputProfile | None:
    """The profile of a placeholder whose `meta['val']` is `val`; None when it has none (no
    recorded value, or not a tensor or SymInt)."""
    if isinstance(val, torch.SymInt):  # a shape input: one int64 value
        low, opt, high, unbounded = symbol_range(val)
        return InputProfile(name, "torch.int64", (low,), (opt,), (high,), unbounded)
    if not isinstance(val, torch.Tensor):
        return None
    mins, opts, maxs, unbounded = [], [], [], False
    for d in val.shape:
        if isinstance(d, torch.SymInt):
            low, opt, high, open_top = symbol_range(d)
            unbounded = unbounded or open_top
        else:
            low = opt = high = int(d)
        mins.append(low)
        opts.append(opt)
        maxs.append(high)
    return InputProfile(name, str(val.dtype), tuple(mins), tuple(opts), tuple(maxs), unbounded)


def profiles(gm: torch.fx.GraphModule) -> tuple[InputProfile, ...]:
    """Every placeholder's profile, in order (those without one left out)."""
    out = []
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            found = input_profile(n.name, n.meta.get("val"))
            if found is not None:
                out.append(found)
    return tuple(out)


def profile_text(gm: torch.fx.GraphModule) -> str:
    """The profiles in words, one input after another: 'x: (1,3) → (2,3) → (8,3); y: (3,)'."""
    return "; ".join(p.text() for p in profiles(gm))


def is_dynamic(gm: torch.fx.GraphModule) -> bool:
    return any(p.dynamic for p in profiles(gm))


def _symbols(gm: torch.fx.GraphModule) -> dict:
    """Every free symbol of the placeholders' values, with the SymInt it first appeared in."""
    found: dict = {}
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        val = n.meta.get("val")
        sizes = [val] if isinstance(val, torch.SymInt) else list(val.shape) if isinstance(val, torch.Tensor) else []
        for d in sizes:
            if isinstance(d, torch.SymInt):
                for sym in d.node.expr.free_symbols:
                    found.setdefault(sym, d)
    return found


def corner_values(gm: torch.fx.GraphModule, corner: str) -> dict | None:
    """Each free symbol's value at the profile's `corner` ("min" or "max"); None when the graph
    has no dynamic dimension, or ("max") one has no upper bound (Torch-TensorRT's default max,
    4096 times the min, is not a size to run a graph at)."""
    values = {}
    for sym, size in _symbols(gm).items():
        env = size.node.shape_env
        bounds = env.var_to_range.get(sym)
        if bounds is None:
            return None
        low, high = _int(bounds.lower), _int(bounds.upper)
        low = 1 if low is None or low == 2 else low
        if corner == "max" and high is None:
            return None
        values[sym] = low if corner == "min" else high
    return values or None


def corner_inputs(gm: torch.fx.GraphModule, corner: str, like: Sequence[Any]) -> tuple[Any, ...] | None:
    """Inputs for `gm` at its profile's `corner`: each placeholder's recorded shape with every
    symbol at that corner's value (shared symbols stay equal), values random floats or zeros
    (valid indices) in `like`'s dtypes and devices; None when there is no such corner
    (corner_values)."""
    values = corner_values(gm, corner)
    if values is None:
        return None
    gen = torch.Generator().manual_seed(0)
    out: list[Any] = []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for n, example in zip(placeholders, like):
        val = n.meta.get("val")
        if isinstance(val, torch.SymInt):
            out.append(int(val.node.expr.xreplace(values)))
            continue
        if not isinstance(val, torch.Tensor) or not isinstance(example, torch.Tensor):
            out.append(example)
            continue
        shape = [int(d.node.expr.xreplace(values)) if isinstance(d, torch.SymInt) else int(d) for d in val.shape]
        if example.dtype.is_floating_point or example.dtype.is_complex:
            made = torch.randn(shape, generator=gen).to(example.dtype)
        else:
            made = torch.zeros(shape, dtype=example.dtype)
        out.append(made.to(example.device))
    return tuple(out)


def corner_text(gm: torch.fx.GraphModule, corner: str, inputs: Sequence[Any]) -> str:
    """'the profile's max (x: (8,3,16,16))': where a run at a corner ran."""
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    shapes = [f"{name}: {_shape(tuple(v.shape))}" for name, v in zip(names, inputs) if isinstance(v, torch.Tensor)]
    return f"the profile's {corner} ({', '.join(shapes)})"


def key_of(gm: torch.fx.GraphModule) -> tuple:
    """The profile as the build key holds it: each input's (dtype, min, opt, max)."""
    return tuple((p.dtype, p.min, p.opt, p.max) for p in profiles(gm))


__all__ = ["CORNERS", "InputProfile", "corner_inputs", "corner_text", "corner_values", "input_profile",
           "is_dynamic", "key_of", "profile_text", "profiles", "symbol_range"]
