"""A repro's inputs (`ReproShapes`): each input's shape and dtype, and the part's dynamic
dimensions as torch.export Dims, so that repro.pt2 keeps the ranges its engine was built for.

A part's placeholders carry the capture's sizes in `meta['val']`: a dynamic size is a SymInt
whose expression is a symbol of the capture (`s77`) or something made of them (`2*s77`,
`s77*s24`). Each symbol becomes one Dim, named as the user named it (`Dim("seq")`, where the
capture's ShapeEnv remembers it) and ranging as the capture's range. Any other expression gets a
Dim of its own (`size0`, which the README says it stands for), ranging over the values it takes:
torch 2.14 saves a derived Dim (`2*seq`) in a program that it then cannot load and decompose
again ("expected sympy.Symbol"), as torch_tensorrt.dynamo.compile does. A size given to the part
as an int (a SymInt placeholder) is `Dim.DYNAMIC`: torch.export takes no named Dim for an int.
TensorRT's profile for each input is optimization_profiles'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import sympy
import torch
from torch.export import Dim
from torch.fx.experimental.symbolic_shapes import optimization_hint

from hierviz.building.optimization_profiles import input_profile
from hierviz.capturing.graph_codec import symbol_values

_NAME = re.compile(r"[A-Za-z_]\w*")


def _bound(value: Any) -> int | None:
    """A sympy bound as an int; None for an infinite one."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return number if abs(number) < 2**62 else None


def _shape_text(sizes: list[str]) -> str:
    return "(" + ", ".join(sizes) + (",)" if len(sizes) == 1 else ")")


@dataclass(frozen=True)
class ReproShapes:
    """A part's inputs as its repro shows them.

    `inputs`: each input's (name, dtype, shape with each dynamic size in its Dims' names,
    TensorRT's optimization profile 'min → opt → max' or its one shape); `dims`: each Dim's
    (name, min, max or None for no upper bound, the example's size, the capture's expression it
    stands for: '' when it is one of the capture's symbols); `dynamic_shapes`: torch.export's
    dynamic_shapes for the part's inputs (one entry each), None when every size is static."""

    inputs: tuple[tuple[str, str, str, str], ...]
    dims: tuple[tuple[str, int, int | None, int, str], ...]
    dynamic_shapes: tuple[Any, ...] | None = None

    @property
    def dynamic(self) -> bool:
        return self.dynamic_shapes is not None

    def markdown(self, static_because: str = "") -> list[str]:
        """The README's lines for the inputs: a table, then each Dim's range; `static_because`:
        why repro.pt2 holds the example's sizes instead of the Dims ('' when it keeps them)."""
        if not self.inputs:
            return ["The part takes no inputs."]
        if static_because:
            lead = (f"repro.pt2 has static shapes: {static_because}. It holds every input at the example's sizes, "
                    "while the part was built for the dynamic dimensions below:")
        elif self.dynamic:
            lead = ("repro.pt2 keeps the dynamic dimensions (torch.export Dims with these ranges); repro.py calls it "
                    "on random values of the example's sizes:")
        else:
            lead = "repro.py calls it on random values of these shapes (floats normal, integers zeros):"
        lines = [lead, "", "| input | dtype | shape | TensorRT's profile (min → opt → max) |", "|---|---|---|---|"]
        lines += [f"| `{name}` | {dtype} | {shape} | {profile} |" for name, dtype, shape, profile in self.inputs]
        if self.dims:
            lines.append("")
        for name, low, high, example, stands_for in self.dims:
            top = f"{low} to {high}" if high is not None else f"{low} up (no upper bound)"
            said = f" (the example's {example})"
            lines.append(f"- `{name}`: {top}{said}" + (f"; it stands for `{stands_for}`, here a Dim of its own"
                                                         if stands_for else ""))
        return lines


# the Dims made for one part: symbol or expression -> (Dim, name), and each Dim's row (ReproShapes.dims)
_Made = tuple[dict[Any, tuple[Any, str]], list[tuple[str, int, int | None, int, str]]]


def _new_dim(made: _Made, key: Any, wanted: str, low: int, high: int | None, example: int,
             stands_for: str) -> tuple[Any, str]:
    dims, rows = made
    taken = {name for _, name in dims.values()}
    name, k = wanted, 1
    while name in taken:
        name, k = f"{wanted}_{k}", k + 1
    dims[key] = (Dim(name, min=low) if high is None else Dim(name, min=low, max=high)), name
    rows.append((name, low, high, example, stands_for))
    return dims[key]


def _root(made: _Made, sym: sympy.Symbol, env: Any) -> tuple[Any, str]:
    """The Dim of one of the capture's symbols, ranging as the capture's range."""
    if sym not in made[0]:
        bounds = env.var_to_range.get(sym) or env.bound_sympy(sym)
        low = max(_bound(bounds.lower) or 0, 0)
        example = symbol_values(env).get(sym)
        _new_dim(made, sym, _user_name(sym, env), low, _bound(bounds.upper),
                 int(example) if example is not None else low, "")
    return made[0][sym]


def _dim_of(made: _Made, size: torch.SymInt) -> tuple[Any, str]:
    """(the Dim for `size`, its name: 'seq', or 'size0' for an expression of the capture's symbols)."""
    node: Any = size.node
    env, expr = node.shape_env, node.expr
    if isinstance(expr, sympy.Symbol):
        return _root(made, expr, env)
    if expr not in made[0]:
        bounds = env.bound_sympy(expr)
        named = expr.xreplace({s: sympy.Symbol(made[0][s][1] if s in made[0] else _user_name(s, env))
                               for s in expr.free_symbols})
        _new_dim(made, expr, f"size{sum(1 for row in made[1] if row[4])}", max(_bound(bounds.lower) or 0, 0),
                 _bound(bounds.upper), int(optimization_hint(size)), str(named))
    return made[0][expr]


def _user_name(sym: sympy.Symbol, env: Any) -> str:
    """The name the user gave the symbol's Dim (`Dim("seq")`), where the ShapeEnv remembers it;
    else the symbol's own ('s77')."""
    debug = getattr(env, "source_name_to_debug_name", {}) or {}
    for source in getattr(env, "var_to_sources", {}).get(sym, ()):
        name = debug.get(source.name)
        if isinstance(name, str) and _NAME.fullmatch(name):
            return name
    return str(sym)


def shapes_of(gm: torch.fx.GraphModule) -> ReproShapes:
    """The inputs of part `gm` and its dynamic dimensions, from its placeholders' `meta['val']`."""
    made: _Made = ({}, [])
    inputs: list[tuple[str, str, str, str]] = []
    specs: list[Any] = []
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        val = n.meta.get("val")
        profile = input_profile(n.name, val)
        where = profile.text().split(": ", 1)[1] if profile is not None else ""
        if isinstance(val, torch.SymInt):
            _, said = _dim_of(made, val)
            inputs.append((n.name, "int (a size)", said, where))
            specs.append(Dim.DYNAMIC)  # torch.export takes no named Dim for an int
            continue
        if not isinstance(val, torch.Tensor):
            inputs.append((n.name, type(val).__name__, "", where))
            specs.append(None)
            continue
        sizes: list[str] = []
        spec: dict[int, Any] = {}
        for i, d in enumerate(val.shape):
            if isinstance(d, torch.SymInt):
                spec[i], said = _dim_of(made, d)
                sizes.append(said)
            else:
                sizes.append(str(int(d)))
        inputs.append((n.name, str(val.dtype).removeprefix("torch."), _shape_text(sizes), where))
        specs.append(spec or None)
    dynamic = tuple(specs) if any(s is not None for s in specs) else None
    return ReproShapes(tuple(inputs), tuple(made[1]), dynamic)


__all__ = ["ReproShapes", "shapes_of"]
