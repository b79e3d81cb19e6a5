"""An aten GraphModule as plain, picklable data, and the dotted-path helpers for modules.

An exported graph cannot be pickled as it is (its op targets and fake tensors refuse), so
`pack_graph` writes it as plain data: nodes with their names, op names and arguments,
picklable meta, and `meta['val']` as meta-device tensors (symbolic sizes as their expressions,
with each symbol's range and example size); `unpack_graph` rebuilds an equal graph (same node
names, same partitions, the same dynamic dimensions in a ShapeEnv of its own). The data names
the module that registers each custom op of the graph, and `unpack_graph` imports it first
(hierviz.capturing.custom_op_sources: Torch-TensorRT's, a library's or the user's ops read back in
another process). The capture cache, the Ray executor, a sweep's processes and the explorer's
worker get graphs this way (a saved compiled model's folder does not: it holds JSON,
hierviz.capturing.graph_json, and runs no code when loaded).

`fetch_attr`, `owner_of` and `set_path` read and build attributes along a dotted path
(`"layer1.0.weight"`), creating the nested modules on the way. This module imports only torch,
hierviz.errors and hierviz.capturing.custom_op_sources.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import Graph, GraphModule, Node

from hierviz.capturing.custom_op_sources import op_sources, register_ops
from hierviz.errors import ConfigError


# ----------------------------------------------------------------------------- dotted paths
def fetch_attr(module: torch.nn.Module, target: str) -> Any:
    """The attribute of `module` at the dotted path `target`."""
    obj: Any = module
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def owner_of(root: torch.nn.Module, path: str) -> tuple[torch.nn.Module, str]:
    """The module that holds `path`'s last part, and that part: the modules on the way are
    created (empty `nn.Module`s) where `root` lacks them."""
    *parents, leaf = path.split(".")
    owner = root
    for part in parents:
        if not hasattr(owner, part):
            owner.add_module(part, torch.nn.Module())
        owner = getattr(owner, part)
    return owner, leaf


def set_path(root: torch.nn.Module, path: str, value: Any) -> None:
    """Put `value` at the dotted `path` of `root` (a module as a submodule, anything else as an
    attribute), creating the modules on the way."""
    owner, leaf = owner_of(root, path)
    if isinstance(value, torch.nn.Module):
        owner.add_module(leaf, value)
    else:
        setattr(owner, leaf, value)


# ----------------------------------------------------------------------------- the graph as data
@dataclass(frozen=True)
class _Ref:
    """A reference to an earlier node, by name, inside packed arguments."""

    name: str


@dataclass(frozen=True)
class _Op:
    """An op target by qualified name (OpOverloads cannot be pickled)."""

    name: str


def _pack_target(target: Any) -> Any:
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return _Op(str(target))  # 'aten::add.Tensor' or 'aten.add.Tensor'
    return target


def _unpack_target(target: Any) -> Any:
    if not isinstance(target, _Op):
        return target
    name = target.name.replace("::", ".")
    obj: Any = torch.ops
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _pack_arg(value: Any) -> Any:
    if isinstance(value, Node):
        return _Ref(value.name)
    if isinstance(value, list):  # fx's immutable_list too: create_node makes it immutable again
        return [_pack_arg(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_pack_arg(v) for v in value)
    if isinstance(value, dict):
        return {k: _pack_arg(v) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(_pack_arg(value.start), _pack_arg(value.stop), _pack_arg(value.step))
    return _pack_target(value)


def _unpack_arg(value: Any, env: dict[str, Node]) -> Any:
    if isinstance(value, _Ref):
        return env[value.name]
    if isinstance(value, list):
        return [_unpack_arg(v, env) for v in value]
    if isinstance(value, tuple):
        return tuple(_unpack_arg(v, env) for v in value)
    if isinstance(value, dict):
        return {k: _unpack_arg(v, env) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(_unpack_arg(value.start, env), _unpack_arg(value.stop, env), _unpack_arg(value.step, env))
    return _unpack_target(value)


@dataclass(frozen=True)
class _Sym:
    """A symbolic size as data: its expression over the graph's symbols, by name."""

    expr: str


@dataclass(frozen=True)
class _SymTensor:
    """A tensor value with symbolic sizes or strides (each an int or a _Sym)."""

    shape: tuple
    stride: tuple
    dtype: torch.dtype


def symbol_values(env: Any) -> dict:
    """A ShapeEnv's example size of each symbol (`backed_var_to_val`, once `var_to_val`)."""
    return env.backed_var_to_val if hasattr(env, "backed_var_to_val") else env.var_to_val


def _pack_size(d: Any, symbols: dict) -> Any:
    """An int as it is; a SymInt as its expression, its free symbols' ranges and example sizes
    noted in `symbols` (name -> (lower, upper, hint))."""
    if not isinstance(d, torch.SymInt):
        return int(d)
    node: Any = d.node
    env = node.shape_env
    for sym in node.expr.free_symbols:
        bounds = env.var_to_range.get(sym)
        hint = symbol_values(env).get(sym)
        symbols[str(sym)] = (None if bounds is None else bounds.lower, None if bounds is None else bounds.upper,
                             None if hint is None else int(hint))
    return _Sym(str(node.expr))


def _pack_val(val: Any, symbols: dict) -> Any:
    """meta['val'] without fake tensors: a meta-device tensor of the same shape, stride and
    dtype; with symbolic sizes, their expressions (the graph's symbols kept in `symbols`), so
    the unpacked graph has the same dynamic dimensions and ranges."""
    if isinstance(val, torch.Tensor):
        if not all(isinstance(d, int) for d in val.shape) or not all(isinstance(s, int) for s in val.stride()):
            return _SymTensor(tuple(_pack_size(d, symbols) for d in val.shape),
                              tuple(_pack_size(d, symbols) for d in val.stride()), val.dtype)
        return torch.empty_strided(tuple(val.shape), tuple(val.stride()), dtype=val.dtype, device="meta")
    if isinstance(val, torch.SymInt):
        return _pack_size(val, symbols)
    if isinstance(val, (list, tuple)):
        items = [_pack_val(v, symbols) for v in val]
        return type(val)(items) if type(val) in (list, tuple) else tuple(items)
    if isinstance(val, (int, float, bool, str)) or val is None:
        return val
    return None


class _Symbols:
    """The unpacked graph's ShapeEnv: each packed symbol made again with its range and example
    size, and the fake-tensor mode its symbolic values live in."""

    def __init__(self, table: dict) -> None:
        import sympy
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
        from torch.utils._sympy.value_ranges import ValueRanges

        self.env = ShapeEnv()
        self.mode = FakeTensorMode(shape_env=self.env, allow_non_fake_inputs=True)
        self.names: dict[str, Any] = {}
        for name, (lower, upper, hint) in sorted(table.items()):
            sym = sympy.Symbol(name, integer=True, positive=True)
            if lower is not None and upper is not None:
                self.env.var_to_range[sym] = ValueRanges(lower, upper)
            if hint is not None:
                symbol_values(self.env)[sym] = sympy.Integer(hint)
            self.names[name] = sym

    def size(self, d: Any) -> Any:
        if not isinstance(d, _Sym):
            return d
        import sympy

        expr = sympy.sympify(d.expr, locals=self.names)
        values = symbol_values(self.env)
        hint = expr.xreplace(values) if all(s in values for s in expr.free_symbols) else None
        return self.env.create_symintnode(expr, hint=None if hint is None else int(hint))

    def val(self, packed: Any) -> Any:
        if isinstance(packed, _SymTensor):
            with self.mode:
                return torch.empty_strided([self.size(d) for d in packed.shape],
                                           [self.size(d) for d in packed.stride], dtype=packed.dtype)
        if isinstance(packed, _Sym):
            return self.size(packed)
        if type(packed) in (list, tuple):
            return type(packed)(self.val(v) for v in packed)
        return packed


# what pickling a value that cannot be pickled raises: PicklingError, TypeError ("cannot pickle
# 'X' object"), AttributeError ("Can't pickle local object"), a tensor subclass's __reduce__
# refusing (RuntimeError, NotImplementedError), a value too deep (RecursionError)
NOT_PICKLABLE: tuple[type[Exception], ...] = (pickle.PicklingError, TypeError, AttributeError, ValueError,
                                              RuntimeError)


# meta['tensor_meta'] with symbolic sizes does not pickle: it is made again from meta['val'] when
# unpacked (Torch-TensorRT's validators read it: without it, bitwise_and of a dynamic graph was
# refused in the explorer's worker and kept in TensorRT in the kernel)
_TENSOR_META_FROM_VAL = "hierviz_tensor_meta_from_val"


def _pack_meta(meta: dict, symbols: dict) -> dict:
    out: dict[str, Any] = {}
    for key, value in meta.items():
        if key == "val":
            out[key] = _pack_val(value, symbols)
            continue
        try:
            pickle.dumps(value)
        except NOT_PICKLABLE:  # meta that does not pickle (original_aten, ...) stays behind
            if key == "tensor_meta":
                out[_TENSOR_META_FROM_VAL] = True
            continue
        out[key] = value
    return out


def tensor_meta_of(val: Any) -> Any:
    """meta['tensor_meta'] of a value, as torch.fx's ShapeProp makes it (None: no tensor in it)."""
    from torch.fx.node import map_aggregate
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    found = []

    def one(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            found.append(v)
            return _extract_tensor_metadata(v)
        return v

    made = map_aggregate(val, one)
    return made if found else None


def pack_graph(gm: GraphModule) -> dict[str, Any]:
    """An aten GraphModule as picklable plain data (see the module docstring)."""
    nodes = []
    attrs: dict[str, Any] = {}
    symbols: dict[str, tuple] = {}
    for n in gm.graph.nodes:
        if n.op == "call_module":
            raise ConfigError(f"the graph calls submodule {n.target!r}; only aten graphs (from hv.capture) "
                              "can be written as data: capture the model with hv.capture first.")
        if n.op == "get_attr":
            obj = fetch_attr(gm, str(n.target))
            attrs[str(n.target)] = obj.detach() if isinstance(obj, torch.Tensor) else obj
        nodes.append((n.name, n.op, _pack_target(n.target), _pack_arg(n.args), _pack_arg(n.kwargs),
                      _pack_meta(n.meta, symbols)))
    return {"nodes": nodes, "attrs": attrs, "codegen": gm.graph._codegen, "symbols": symbols,
            "ops": op_sources(gm)}


def unpack_graph(data: dict[str, Any], example_inputs: Any = None) -> GraphModule:
    """The GraphModule `pack_graph` described: same node names, ops, weights and meta; the
    modules that register its custom ops imported first (CustomOpUnavailable, an ImportError,
    naming the op that cannot be had here)."""
    register_ops(data.get("ops", {}))
    graph = Graph()
    env: dict[str, Node] = {}
    symbols = _Symbols(data["symbols"]) if data.get("symbols") else None
    for name, op, target, args, kwargs, meta in data["nodes"]:
        args, kwargs = _unpack_arg(args, env), _unpack_arg(kwargs, env)
        if symbols is not None and "val" in meta:
            meta = {**meta, "val": symbols.val(meta["val"])}
        if op == "output":
            graph.output(args[0]).meta.update(meta)
            continue
        node = graph.create_node(op, _unpack_target(target), args, kwargs, name=name)
        node.meta.update(meta)
        if node.meta.pop(_TENSOR_META_FROM_VAL, False) and node.meta.get("val") is not None:
            made = tensor_meta_of(node.meta["val"])
            if made is not None:
                node.meta["tensor_meta"] = made
        env[name] = node
    root = torch.nn.Module()
    for path, value in data["attrs"].items():
        owner, leaf = owner_of(root, path)
        if isinstance(value, torch.nn.Parameter):
            owner.register_parameter(leaf, value)
        elif isinstance(value, torch.Tensor):
            owner.register_buffer(leaf, value)
        else:
            setattr(owner, leaf, value)
    graph._codegen = data["codegen"]
    gm = GraphModule(root, graph)
    missing = [n for n in gm.graph.nodes if n.op not in ("output",) and n.meta.get("val", 0) is None]
    if missing and example_inputs is not None:
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp
        from torch.utils._pytree import tree_leaves

        FakeTensorProp(gm).propagate(*tree_leaves(example_inputs))
    return gm


__all__ = ["pack_graph", "unpack_graph", "fetch_attr", "owner_of", "set_path", "symbol_values", "tensor_meta_of"]
