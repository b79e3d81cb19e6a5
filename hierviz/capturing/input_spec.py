"""What a captured graph accepts as inputs (`InputSpec`, read from its placeholders by `spec_of`):
each flat input, the range of each dynamic-shape symbol and the user's names for them.

`torch.export` specialises a capture to its example inputs: every tensor dimension not declared
dynamic is fixed, Python scalars (`n=3`) are baked into the graph, and a dynamic dimension is valid
only inside its range; hierviz.capturing.inputs checks calls against it."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch.fx import GraphModule

from hierviz.capturing.arg_spec import ArgSpec

SCALARS = (bool, int, float, str, type(None))


@dataclass(frozen=True)
class InputSpec:
    """Every flat input of a captured graph, the range of each dynamic-shape symbol, and the
    user's name for each symbol that has one (`Dim("seq")`: ("s50", "seq")), shown in text."""

    args: tuple[ArgSpec, ...]
    ranges: tuple[tuple[str, int, int | None], ...] = ()
    names: tuple[tuple[str, str], ...] = ()

    def show(self, text: str) -> str:
        """`text` (a dimension: s50, 2*s50) with torch's symbols as the user named them."""
        names = dict(self.names)
        return re.sub(r"[A-Za-z_]\w*", lambda m: names.get(m.group(), m.group()), text) if names else text

    def label(self, symbol: str) -> str:
        """A dynamic dimension as the user declared it (`Dim("seq")`), or torch's symbol (s50)."""
        name = dict(self.names).get(symbol)
        return f'Dim("{name}")' if name else symbol

    def __str__(self) -> str:
        text = ", ".join(a.text(self.show) for a in self.args)
        if self.ranges:
            text += " with " + ", ".join(f"{lo} <= {self.show(s)} <= {'inf' if hi is None else hi}"
                                         for s, lo, hi in self.ranges)
        return text

    def to_json(self) -> str:
        return json.dumps({
            "args": [[a.name, a.kind, a.dtype, list(a.shape) if a.shape is not None else None, a.value]
                     for a in self.args],
            "ranges": [list(r) for r in self.ranges],
            "names": [list(n) for n in self.names],
        }, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> "InputSpec":
        data = json.loads(text)
        args = tuple(ArgSpec(n, k, d, tuple(s) if s is not None else None, v) for n, k, d, s, v in data["args"])
        return InputSpec(args, tuple((s, lo, hi) for s, lo, hi in data["ranges"]),
                         tuple((s, n) for s, n in data.get("names", [])))


DIM_NAMES = "hierviz_dim_names"  # graph.meta key: {torch symbol: the user's Dim name}, set by deploy.load


def _user_names(d: torch.SymInt) -> dict[str, str]:
    """The user's names for torch's symbols in `d` (`Dim("seq")` made s50: {"s50": "seq"}),
    from the shape environment that made it; symbols without one keep torch's name."""
    env = getattr(d.node, "shape_env", None)
    debug = getattr(env, "source_name_to_debug_name", None) or {}
    names = {}
    for sym in d.node.expr.free_symbols:
        for source in getattr(env, "var_to_sources", {}).get(sym, ()):
            name = debug.get(getattr(source, "name", None), getattr(source, "name", None))  # 2*Dim("half"): half
            if isinstance(name, str) and name.isidentifier():
                names[str(sym)] = name
                break
    return names


def _dim(d: Any) -> int | str:
    if isinstance(d, torch.SymInt):
        expr = d.node.expr
        return int(expr) if expr.is_number else str(expr)
    return int(d)


def _bounds(vr: Any) -> tuple[int, int | None]:
    """A torch ValueRanges as (lower, upper or None for unbounded)."""
    lo = int(vr.lower) if math.isfinite(float(vr.lower)) else 0
    hi = int(vr.upper) if math.isfinite(float(vr.upper)) else None
    return lo, hi


def _range(d: torch.SymInt, sym: Any, graph: GraphModule) -> tuple[int, int | None] | None:
    """The range of `sym`: from the graph's range_constraints (ExportedProgram.module() sets
    them), else from the shape environment that made `d`."""
    ranges = getattr(graph, "range_constraints", None)
    vr = ranges.get(sym) if isinstance(ranges, dict) else None
    if vr is None:
        env = getattr(d.node, "shape_env", None)
        vr = env.var_to_range.get(sym) if env is not None else None
    return None if vr is None else _bounds(vr)


def spec_of(graph: GraphModule) -> InputSpec:
    """What `graph` accepts, from its placeholders' `meta["val"]` (a hand-built graph without
    metadata accepts anything) and the ranges of its dynamic dimensions."""
    args: list[ArgSpec] = []
    ranges: dict[str, tuple[int, int | None]] = {}
    names: dict[str, str] = dict(graph.meta.get(DIM_NAMES, {}))  # a graph rebuilt by deploy.load
    for node in graph.graph.find_nodes(op="placeholder"):
        val = node.meta.get("val")
        name = str(node.target)
        syms: list[torch.SymInt] = []
        if "val" not in node.meta:
            args.append(ArgSpec(name, "any"))
        elif isinstance(val, torch.Tensor):
            shape = tuple(_dim(d) for d in val.shape)
            args.append(ArgSpec(name, "tensor", str(val.dtype), shape))
            dims: Sequence[int | torch.SymInt] = val.shape  # torch types sizes int; a dynamic one is a SymInt
            syms = [d for d in dims if isinstance(d, torch.SymInt)]
        elif isinstance(val, torch.SymInt):
            args.append(ArgSpec(name, "symint", None, (_dim(val),)))
            syms = [val]
        elif isinstance(val, SCALARS):
            args.append(ArgSpec(name, "scalar", None, None, val))
        else:
            args.append(ArgSpec(name, "any"))
        for d in syms:
            names.update(_user_names(d))
            for sym in d.node.expr.free_symbols:
                found = _range(d, sym, graph)
                if found is not None:
                    ranges[str(sym)] = found
    return InputSpec(tuple(args), tuple((s, lo, hi) for s, (lo, hi) in sorted(ranges.items())),
                     tuple(sorted(names.items())))


def describe_value(value: Any) -> str:
    """A given input in words, as the messages name it: a tensor by dtype and shape, else its type and value."""
    if isinstance(value, torch.Tensor):
        return f"a {str(value.dtype).replace('torch.', '')} tensor of shape {tuple(value.shape)}"
    return f"{type(value).__name__} {value!r}"
