"""The structure of nested inputs (dicts, lists, tuples) a capture fixed, and the check that a
call's inputs are structured so: `structure_problem` names the path that differs (`d["b"] is
missing`), `check_structure` raises it, for the split module, the compiled model, a loaded one
and hv.measure alike."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Sequence

from torch.fx import GraphModule
from torch.utils._pytree import SUPPORTED_NODES, TreeSpec

from hierviz.capturing.input_spec import InputSpec, describe_value, spec_of
from hierviz.errors import CaptureError, HiervizError


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
    return describe_value(value)


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
