"""What a captured graph accepts as inputs, and the check that calls stay within it.

`torch.export` specialises a capture to its example inputs: every tensor dimension not
declared dynamic is fixed, Python scalars (`n=3`) are baked into the graph, and a dynamic
dimension is valid only inside its range. A graph called outside that can return a silently
wrong answer (a `reshape(x.shape[0], -1)` captured at batch 2 returns batch 2 for any batch).
`spec_of(graph)` reads what the capture allows from the placeholders' `meta["val"]`;
`mismatch` says, in words, how given inputs differ from it and what to do (only a wrong size
is a matter of dynamic_shapes). The split module calls
`check_inputs` first (a graph node, so copies and `hv.measure`'s rebuilt module keep it), and
`check` is the entry-point check for `hv.measure`. A capture of nested inputs (dicts, lists,
tuples) also fixes their structure: `structure_problem` names the path that differs
(`d["b"] is missing`), checked by the split module, the compiled model and a loaded one alike.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Sequence

import torch
from torch.fx import GraphModule
from torch.utils._pytree import SUPPORTED_NODES, TreeSpec, tree_leaves

from hierviz.errors import CaptureError, ConfigError, HiervizError, MeasureError

SCALARS = (bool, int, float, str, type(None))


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


def check_capture_extras(dynamic_shapes: Any, kwargs: Any) -> None:
    """ConfigError for a `dynamic_shapes=` or `kwargs=` that capturing cannot mean: kwargs is a
    dict of keyword inputs (or None), dynamic_shapes a dict, tuple or list as torch.export takes
    it (or None). Checked before capturing, so a wrong value is never read as 'none' because it
    happens to be falsy ('', 0, [] as kwargs)."""
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise ConfigError(f"kwargs= is a dict of the model's keyword inputs ({{'mask': m}}), or None; not "
                          f"{type(kwargs).__name__} {kwargs!r:.40}.")
    if dynamic_shapes is not None and not isinstance(dynamic_shapes, (Mapping, tuple, list)):
        raise ConfigError(f"dynamic_shapes= is what torch.export takes: a dict by input name, or a tuple/list by "
                          f"position ({{'x': {{0: torch.export.Dim('batch')}}}}), or None; not "
                          f"{type(dynamic_shapes).__name__} {dynamic_shapes!r:.40}.")


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


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {str(value.dtype).replace('torch.', '')} tensor of shape {tuple(value.shape)}"
    return f"{type(value).__name__} {value!r}"


LIKE_EXAMPLE = "Call it with inputs like the example inputs"
DYNAMIC = ("Call it with inputs like the example inputs, or capture again with those inputs, or with dynamic_shapes "
           "(e.g. {'x': {0: torch.export.Dim('batch', min=1, max=64)}}) for sizes that vary")
RANGES = ("Call it with sizes inside the captured ranges, or capture again with dynamic_shapes whose Dims allow "
          "these sizes (torch.export.Dim(name, min=..., max=...))")
EQUAL = ("Call it with those dimensions equal, as captured, or capture again with dynamic_shapes giving each its "
         "own Dim")
DERIVED = ("Call it with sizes that fit the captured expressions, like the example inputs' sizes, or capture again "
           "with dynamic_shapes that allow these sizes")


def mismatch(spec: InputSpec, values: Sequence[Any]) -> tuple[str, str] | None:
    """How `values` (the flat inputs) differ from what the capture allows, and what to do
    about it, or None. Only a size is a matter of dynamic_shapes: a dtype, a number of
    dimensions, a count or a baked-in value is not."""
    if len(values) != len(spec.args):
        return f"{len(values)} input(s) were given, the graph takes {len(spec.args)}", LIKE_EXAMPLE
    bound: dict[str, int] = {}
    derived: list[tuple[ArgSpec, int, str, int]] = []
    limits = {s: (lo, hi) for s, lo, hi in spec.ranges}
    for arg, value in zip(spec.args, values):
        if arg.kind == "any":
            continue
        if arg.kind == "scalar":
            if type(value) is not type(arg.value) or (value != arg.value and not _both_nan(value, arg.value)):
                return (f"input {arg.name!r} is {_describe(value)}, but the graph was captured with "
                        f"{arg.name}={arg.value!r} and computes with that value",
                        f"Pass {arg.name}={arg.value!r}, or capture again with the value you want")
            continue
        if arg.kind == "symint":
            if not isinstance(value, int) or isinstance(value, bool):
                return f"input {arg.name!r} is {_describe(value)}, but the graph takes an int", LIKE_EXAMPLE
            sizes: tuple = (value,)
        else:
            if not isinstance(value, torch.Tensor):
                return f"input {arg.name!r} is {_describe(value)}, but the graph takes a tensor", LIKE_EXAMPLE
            if str(value.dtype) != arg.dtype:
                given, wanted = str(value.dtype).replace("torch.", ""), str(arg.dtype).replace("torch.", "")
                return (f"input {arg.name!r} has dtype {given}, but the graph was captured for {wanted}",
                        f"Cast it to {wanted} (.to({arg.dtype})), or capture again with a {given} {arg.name!r} "
                        f"to run in {given}")
            if value.dim() != len(arg.shape or ()):
                rank = len(arg.shape or ())
                return (f"input {arg.name!r} has {value.dim()} dimension(s) {tuple(value.shape)}, but the "
                        f"graph was captured for {rank}: {list(arg.shape or ())}",
                        f"Call it with {rank} dimension(s) as captured, or capture again with a {value.dim()}-"
                        f"dimension {arg.name!r}")
            sizes = tuple(value.shape)
        for j, (size, want) in enumerate(zip(sizes, arg.shape or ())):
            if isinstance(want, int):
                if size != want:
                    return (f"{_where(arg, j)} is {size}, but the graph was captured with {want} there "
                            "(a static dimension)", DYNAMIC)
            elif want.isidentifier():
                if want in bound and bound[want] != size:
                    return (f"{_where(arg, j)} is {size}, but it must equal the other dimensions named "
                            f"{spec.show(want)} (= {bound[want]} in this call)", EQUAL)
                bound[want] = int(size)
                lo, hi = limits.get(want, (0, None))
                # like ExportedProgram.module(): sizes 0 and 1 are allowed whenever the range starts <= 2
                if (size < lo and lo > 2) or (hi is not None and size > hi):
                    return (f"{_where(arg, j)} is {size}, outside the range {lo}..{'inf' if hi is None else hi} "
                            f"captured for the dynamic dimension {spec.label(want)}", RANGES)
            else:
                derived.append((arg, j, want, int(size)))
    for arg, j, expr, size in derived:
        problem = _derived_mismatch(arg, j, expr, size, bound, limits, spec)
        if problem is not None:
            return problem, DERIVED
    return None


def _derived_mismatch(arg: ArgSpec, j: int, expr: str, size: int, bound: dict[str, int],
                      limits: dict[str, tuple[int, int | None]], spec: InputSpec) -> str | None:
    """Check a dimension captured as an expression (2*s0, s0 + 1): solve it for a symbol no
    other dimension fixed (as ExportedProgram.module() does), then compare."""
    import sympy

    parsed = sympy.sympify(expr)
    unbound = [sym for sym in parsed.free_symbols if str(sym) not in bound]
    if len(unbound) == 1:
        sym = unbound[0]
        known = parsed.subs({sympy.Symbol(n): v for n, v in bound.items()})
        roots = [r for r in sympy.solve(sympy.Eq(known, size), sym) if r.is_integer]
        if not roots:
            return (f"{_where(arg, j)} is {size}, but the graph was captured for sizes {spec.show(expr)} "
                    f"with {spec.show(str(sym))} an integer")
        value = bound[str(sym)] = int(roots[0])
        lo, hi = limits.get(str(sym), (0, None))
        if (value < lo and lo > 2) or (hi is not None and value > hi):
            return (f"{_where(arg, j)} is {size}, so {spec.show(str(sym))} = {value} in {spec.show(expr)}, outside "
                    f"the range {lo}..{'inf' if hi is None else hi} captured for {spec.label(str(sym))}")
    expected = _evaluate(expr, bound)
    if expected is not None and expected != size:
        return (f"{_where(arg, j)} is {size}, but the graph was captured for {spec.show(expr)} = {expected} "
                "in this call")
    return None


def _where(arg: ArgSpec, j: int) -> str:
    return f"dim {j} of input {arg.name!r}" if arg.kind == "tensor" else f"input {arg.name!r}"


def _both_nan(a: Any, b: Any) -> bool:
    return isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)


def _evaluate(expr: str, bound: dict[str, int]) -> int | None:
    import sympy

    parsed = sympy.sympify(expr)
    names = {str(s) for s in parsed.free_symbols}
    if not names <= set(bound):
        return None
    value = parsed.subs({sympy.Symbol(n): bound[n] for n in names})
    return int(value) if value.is_number else None


def _children(spec: TreeSpec) -> list[TreeSpec]:
    return [spec.child(i) for i in range(spec.num_children)]


def _key(key: Any) -> str:
    return f"[{json.dumps(key)}]" if isinstance(key, str) else f"[{key!r}]"


def _kind(spec: TreeSpec) -> str:
    if spec.type in (tuple, list) or SUPPORTED_NODES.get(spec.type) is SUPPORTED_NODES.get(tuple):
        return f"a {spec.type.__name__} of {spec.num_children}"
    if issubclass(spec.type, Mapping):
        return f"a dict with keys {', '.join(json.dumps(k) if isinstance(k, str) else repr(k) for k in spec.context)}"
    return f"a {spec.type.__name__}"


def _value_kind(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if isinstance(value, Mapping):
        return f"a dict with keys {', '.join(json.dumps(k) if isinstance(k, str) else repr(k) for k in value)}"
    return _describe(value)


def _structure(spec: TreeSpec, value: Any, path: str) -> str | None:
    """How `value` (found at `path`) differs in structure from `spec`, or None. Leaves are not
    compared here (`mismatch` checks them); tuples and lists stand for each other."""
    if spec.is_leaf():
        if isinstance(value, (tuple, list, Mapping)):
            return f"{path} is {_value_kind(value)}, but the graph was captured with a single value there"
        return None
    if spec.type in (tuple, list) or hasattr(spec.type, "_fields"):
        if not isinstance(value, (tuple, list)):
            return f"{path} is {_value_kind(value)}, but the graph was captured with {_kind(spec)} there"
        if len(value) != spec.num_children:
            return (f"{path} is a {type(value).__name__} of {len(value)}, but the graph was captured with "
                    f"{_kind(spec)} there")
        items = list(enumerate(value))
    elif issubclass(spec.type, Mapping):
        if not isinstance(value, Mapping):
            return f"{path} is {_value_kind(value)}, but the graph was captured with {_kind(spec)} there"
        for key in spec.context:
            if key not in value:
                return f"{path}{_key(key)} is missing (the graph was captured with {_kind(spec)} in {path})"
        for key in value:
            if key not in spec.context:
                return (f"{path}{_key(key)} was not in the captured inputs and would be ignored (the graph "
                        f"was captured with {_kind(spec)} in {path})")
        items = [(key, value[key]) for key in spec.context]
    else:
        node = SUPPORTED_NODES.get(type(value))
        if type(value) is not spec.type or node is None:
            return f"{path} is {_value_kind(value)}, but the graph was captured with {_kind(spec)} there"
        children, context = node.flatten_fn(value)
        if context != spec.context or len(children) != spec.num_children:
            return f"{path} is a {type(value).__name__} unlike the captured one ({context!r}, not {spec.context!r})"
        items = list(enumerate(children))
    for (key, item), child in zip(items, _children(spec)):
        problem = _structure(child, item, f"{path}{_key(key)}")
        if problem is not None:
            return problem
    return None


def structure_problem(in_spec: TreeSpec | None, names: Sequence[str], args: Sequence[Any],
                      kwargs: Mapping[str, Any]) -> str | None:
    """How a call's `args`/`kwargs` differ in structure from the capture's `in_spec` (the
    `(args, kwargs)` spec torch.export records), naming the path (`d["b"]`, `args[1][0]`), or
    None. `names` are the positional parameters' names (`args[i]` where there are none)."""
    if in_spec is None or in_spec.type is not tuple or in_spec.num_children != 2:
        return None
    positional, keywords = _children(in_spec)
    starred = list(names[:positional.num_children]) == [f"args_{i}" for i in range(positional.num_children)]
    for i, (child, value) in enumerate(zip(_children(positional), args)):  # forward(self, *args): args_0, ...
        problem = _structure(child, value, names[i] if i < len(names) and not starred else f"args[{i}]")
        if problem is not None:
            return problem
    for key, child in zip(keywords.context, _children(keywords)):
        if key in kwargs:
            problem = _structure(child, kwargs[key], str(key))
            if problem is not None:
                return problem
    return None


def in_spec_of(graph: GraphModule) -> tuple[TreeSpec | None, list[str]]:
    """The captured input structure of `graph` (None for flat inputs) and its parameter names."""
    info = getattr(getattr(graph.graph, "_codegen", None), "pytree_info", None)
    return getattr(info, "in_spec", None), list(getattr(info, "orig_args", None) or [])


def check_structure(who: str, graph: GraphModule, args: Sequence[Any], kwargs: Mapping[str, Any],
                    captured: InputSpec | None = None, error: type[HiervizError] = CaptureError) -> None:
    """`error` (CaptureError) when a call's nested inputs are not structured as `graph` captured
    them (the split module, the compiled model, a loaded one and hv.measure call this before
    flattening); `captured` is the flat spec the message lists (default: read from `graph`)."""
    in_spec, names = in_spec_of(graph)
    if in_spec is None:
        return
    given = {**dict(zip(names, args)), **kwargs}
    count = in_spec.child(0).num_children
    problem = structure_problem(in_spec, names, [given[n] for n in names[:count] if n in given],
                                {n: given[n] for n in names[count:] if n in given})
    if problem is not None:
        raise error(f"{who}: {problem}. Captured inputs: {captured or spec_of(graph)}. Call it with "
                    "inputs structured like the example inputs.")


_PARSED: dict[str, InputSpec] = {}  # spec text -> InputSpec: one entry per distinct capture


def _parsed(text: str) -> InputSpec:
    spec = _PARSED.get(text)
    if spec is None:
        spec = _PARSED[text] = InputSpec.from_json(text)
    return spec


@torch.fx.node.has_side_effect
def check_inputs(spec: str, *values: Any) -> Any:
    """Raise CaptureError when the split module is called outside what was captured.

    `spec` is `InputSpec.to_json()`; this is called from the split module's graph."""
    proxies = [v for v in values if isinstance(v, torch.fx.Proxy)]
    if proxies:  # symbolic tracing (unpickling a GraphModule re-traces its code): keep the call
        return proxies[0].tracer.create_proxy("call_function", check_inputs, (spec, *values), {})
    parsed = _parsed(spec)
    problem = mismatch(parsed, values)
    if problem is not None:
        raise CaptureError(_message("Partition.module", *problem, parsed))


def check_call(spec: str, module: GraphModule, args: tuple, kwargs: dict) -> None:
    """A forward pre-hook of the split module: a call with missing or surplus arguments, or
    nested inputs structured unlike the capture's, is a CaptureError (before the graph's own
    code would raise a bare TypeError or KeyError, or silently ignore a surplus dict key)."""
    try:
        inspect.signature(module.forward).bind(*args, **kwargs)
    except TypeError as exc:
        raise CaptureError(f"Partition.module: {exc}. It takes the model's inputs: {_parsed(spec)}.") from None
    check_structure("Partition.module", module, args, kwargs, _parsed(spec))


def _message(who: str, problem: str, advice: str, spec: InputSpec) -> str:
    return f"{who}: {problem}. Captured inputs: {spec}. {advice}."


def as_args(example_inputs: Any) -> tuple:
    """The positional arguments `example_inputs` stands for: a tuple as it is, a list as a
    tuple, None as (), anything else (one tensor, one dict) as the only argument."""
    if example_inputs is None:
        return ()
    return tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)


def check(graph: GraphModule, example_inputs: Any, *, who: str = "hv.measure",
          error: type[HiervizError] = CaptureError) -> tuple:
    """The flat inputs for `graph`, after checking they are within what it was captured for;
    raises `error` naming the input and the captured spec otherwise (and when no inputs are
    given at all to a graph that takes some)."""
    spec = spec_of(graph)
    if example_inputs is None and spec.args:
        raise error(f"{who} needs example inputs: pass the inputs the model was captured with, "
                    f"e.g. {who}(partition, example_inputs). The graph takes: {spec}.")
    if example_inputs is not None:  # a missing dict key is named, not counted as one input too few
        check_structure(who, graph, as_args(example_inputs), {}, spec, error)
    values = tuple(tree_leaves(example_inputs)) if example_inputs is not None else ()
    problem = mismatch(spec, values)
    if problem is not None:
        raise error(_message(who, *problem, spec))
    return values



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


__all__ = ["ArgSpec", "InputSpec", "spec_of", "mismatch", "as_args", "check", "check_inputs", "check_call",
           "check_structure", "structure_problem", "in_spec_of", "example_from_graph", "input_device"]
