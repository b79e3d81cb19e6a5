"""The check of call inputs against what a captured graph accepts (hierviz.capturing.input_spec).

A graph called outside what torch.export specialised it to can return a silently wrong answer (a
`reshape(x.shape[0], -1)` captured at batch 2 returns batch 2 for any batch). `mismatch` says, in
words, how given inputs differ from the graph's InputSpec and what to do (only a wrong size is a
matter of dynamic_shapes). The split module calls `check_inputs` first (a graph node, so copies and
`hv.measure`'s rebuilt module keep it) and `check_call` as a pre-hook (arguments and their nested
structure, hierviz.capturing.input_structure), and `check` is the entry-point check for
`hv.measure`; `check_capture_extras` checks capture's own `kwargs=` and `dynamic_shapes=`.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from typing import Any, Sequence

import torch
from torch.fx import GraphModule
from torch.utils._pytree import tree_leaves

from hierviz.capturing.arg_spec import ArgSpec
from hierviz.capturing.input_spec import InputSpec, describe_value, spec_of
from hierviz.capturing.input_structure import check_structure
from hierviz.errors import CaptureError, ConfigError, HiervizError


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
                return (f"input {arg.name!r} is {describe_value(value)}, but the graph was captured with "
                        f"{arg.name}={arg.value!r} and computes with that value",
                        f"Pass {arg.name}={arg.value!r}, or capture again with the value you want")
            continue
        if arg.kind == "symint":
            if not isinstance(value, int) or isinstance(value, bool):
                return f"input {arg.name!r} is {describe_value(value)}, but the graph takes an int", LIKE_EXAMPLE
            sizes: tuple = (value,)
        else:
            if not isinstance(value, torch.Tensor):
                return f"input {arg.name!r} is {describe_value(value)}, but the graph takes a tensor", LIKE_EXAMPLE
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


__all__ = ["mismatch", "as_args", "check", "check_inputs", "check_call", "check_capture_extras"]
