"""Weight lifting, device moves and structural fingerprints of subgraphs.

A subgraph of the split module reads its weights through `get_attr` nodes. `lift` rebuilds it
as a new GraphModule whose weights (parameters, buffers, constants) are trailing placeholders,
so the same graph can be compiled once and run with the weights of any partition whose
subgraph has that structure. The lifted graph always returns a flat tuple, and holds no
tensors of its own, so it can be cached without keeping a model alive.

Nothing here modifies the GraphModule it is given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch.fx import GraphModule, Node
from torch.utils.weak import WeakIdKeyDictionary

from hierviz.capturing.graph_codec import fetch_attr, set_path
from hierviz.foundation.digests import digest, stamp as _stamp, tensor_digest, tensor_key
from hierviz.foundation.opnames import qualname

# Meta entries holding (fake) tensors of the capture's fake mode: dropped from lifted copies,
# because a compiler given real example inputs must not meet a foreign fake mode, and because
# on another device the recorded devices are wrong.
_TENSOR_META_KEYS = ("val", "tensor_meta", "example_value", "unbacked_bindings")


@dataclass
class Lifted:
    """A subgraph with its weights as trailing inputs.

    `gm(*inputs, *weights)` computes what the original did with `inputs`; it returns a tuple
    of `n_outputs` values. `single` says whether the original returned one value (not a
    tuple). `weight_names` are the original attribute paths, `weights` their tensors on the
    target device (detached, shared between calls), `sources` the original tensors.
    """

    gm: GraphModule
    n_inputs: int
    weight_names: tuple[str, ...]
    weights: tuple[torch.Tensor, ...]
    sources: tuple[torch.Tensor, ...]
    n_outputs: int
    single: bool
    children: tuple[tuple[str, torch.nn.Module], ...] = ()
    dynamic: tuple = ()  # symbolic_shapes of the source subgraph: empty for a static capture


# ----------------------------------------------------------------------------- device moves
# Moved copies of weights, keyed by the original tensor (weakly): every measure of every
# partition of one captured graph sees the same moved tensor, so weights cross to the device
# once per process and compiled artifacts that bake weights can recognise them.
_MOVED: WeakIdKeyDictionary = WeakIdKeyDictionary()


def on_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`t` detached and on `device`; the same tensor object for the same source and device
    while the source is unchanged."""
    per_device = _MOVED.get(t)
    if per_device is None:
        per_device = {}
        _MOVED[t] = per_device
    stamp = _stamp(t)
    hit = per_device.get(str(device))
    if hit is not None and hit[0] == stamp:
        return hit[1]
    moved = t.detach()
    if moved.device != device:
        moved = moved.to(device)
    per_device[str(device)] = (stamp, moved)
    return moved


def _same_device(a: torch.device, b: torch.device) -> bool:
    if a.type != b.type:
        return False
    if a.type == "cuda":
        ia = a.index if a.index is not None else torch.cuda.current_device()
        ib = b.index if b.index is not None else torch.cuda.current_device()
        return ia == ib
    return True


def _retarget(value: Any, device: torch.device | None) -> Any:
    """Device literals in node arguments moved to `device` (for graphs captured elsewhere)."""
    if device is None:
        return value
    if isinstance(value, torch.device):
        return value if _same_device(value, device) else device
    if isinstance(value, (list, tuple)):
        out = [_retarget(v, device) for v in value]
        return type(value)(out) if isinstance(value, list) else tuple(out)
    if isinstance(value, dict):
        return {k: _retarget(v, device) for k, v in value.items()}
    return value


def _retarget_kwargs(kwargs: dict, device: torch.device | None) -> dict:
    if device is None:
        return kwargs
    out = dict(_retarget(kwargs, device))
    dev = out.get("device")
    if isinstance(dev, str):
        try:
            if not _same_device(torch.device(dev), device):
                out["device"] = device
        except RuntimeError:
            pass
    return out


# ----------------------------------------------------------------------------- lifting
def lift(module: GraphModule, device: torch.device | None = None, *, keep_meta: bool = False) -> Lifted:
    """`module` rebuilt with its weights as trailing placeholders (see Lifted).

    With `device`, the weights are moved there and device literals in the graph (e.g. the
    `device=` of `arange`) are rewritten to it. Nodes keep their meta except the recorded
    (fake) tensors, unless `keep_meta` (for compilers that read shapes from meta, as
    Torch-TensorRT's converters do).
    """
    clean = (lambda meta: dict(meta)) if keep_meta else _clean_meta
    src = module.graph
    graph = torch.fx.Graph()
    env: dict[Node, Node] = {}
    placeholders = [n for n in src.nodes if n.op == "placeholder"]
    for n in placeholders:
        new = graph.placeholder(n.name, type_expr=n.type)
        new.meta = clean(n.meta)
        env[n] = new
    weight_targets: list[str] = list(dict.fromkeys(n.target for n in src.nodes if n.op == "get_attr"))
    tensors: list[str] = []
    others: dict[str, Any] = {}
    for t in weight_targets:
        value = fetch_attr(module, t)
        if isinstance(value, torch.Tensor):
            tensors.append(t)
        else:  # a script object or nested module: kept as an attribute
            others[t] = value
    weight_ph: dict[str, Node] = {}
    for i, t in enumerate(tensors):
        # a Python name: module paths may hold any character (regnet's "block1-0")
        ph = graph.placeholder(f"_lifted_{i}_{re.sub(r'[^0-9a-zA-Z_]', '_', t)}")
        if keep_meta:
            ph.meta["val"] = fetch_attr(module, t)
        weight_ph[t] = ph
    children: list[tuple[str, torch.nn.Module]] = []
    n_outputs, single = 0, True
    root = torch.nn.Module()
    for name, value in others.items():
        set_path(root, name, value)
    for n in src.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "get_attr":
            env[n] = weight_ph[n.target] if n.target in weight_ph else graph.get_attr(n.target)
            continue
        if n.op == "output":
            result = n.args[0]
            single = not isinstance(result, (tuple, list))
            flat = (result,) if single else tuple(result)
            n_outputs = len(flat)
            graph.output(tuple(_map(v, env) for v in flat))
            continue
        if n.op == "call_module":
            child = fetch_attr(module, n.target)
            set_path(root, n.target, child)
            children.append((str(n.target), child))
        new = graph.create_node(n.op, n.target, _retarget(_map(n.args, env), device),
                                _retarget_kwargs(_map(n.kwargs, env), device), n.name, n.type)
        new.meta = clean(n.meta)
        env[n] = new
    gm = GraphModule(root, graph, class_name="LiftedSubgraph")
    dims = tuple(tuple(i for i, d in enumerate(n.meta["val"].shape) if isinstance(d, torch.SymInt))
                 if is_symbolic(n.meta.get("val")) else () for n in placeholders)
    if any(dims):
        gm.meta["hierviz_dynamic_dims"] = dims  # read by compilers that compile for dynamic shapes
    sources = tuple(fetch_attr(module, t) for t in tensors)
    weights = tuple(on_device(s, device) if device is not None else s.detach() for s in sources)
    return Lifted(gm=gm, n_inputs=len(placeholders), weight_names=tuple(tensors), weights=weights,
                  sources=sources, n_outputs=n_outputs, single=single, children=tuple(children),
                  dynamic=symbolic_shapes(module))


def _map(value: Any, env: dict[Node, Node]) -> Any:
    return torch.fx.node.map_arg(value, lambda n: env[n])


def _clean_meta(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if k not in _TENSOR_META_KEYS}


def is_symbolic(value: Any) -> bool:
    """Whether `value` is a tensor whose recorded shape has symbolic sizes (a dynamic capture)."""
    return isinstance(value, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in value.shape)


def symbolic_shapes(gm: GraphModule) -> tuple:
    """The symbolic input shapes of `gm` with each symbol's range, e.g.
    ((0, ('s77', '8'), (('s77', 2, 16),)),); empty for static graphs. Part of compile-cache keys:
    an engine built for one range must not serve another."""
    out = []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, n in enumerate(placeholders):
        val = n.meta.get("val")
        if not is_symbolic(val):
            continue
        ranges = []
        for d in val.shape:
            if isinstance(d, torch.SymInt):
                env = d.node.shape_env
                for sym in sorted(d.node.expr.free_symbols, key=str):
                    r = env.var_to_range.get(sym) if env is not None else None
                    ranges.append((str(sym), str(getattr(r, "lower", "?")), str(getattr(r, "upper", "?"))))
        out.append((i, tuple(str(d) for d in val.shape), tuple(ranges)))
    return tuple(out)


def bake(lifted: Lifted, example_inputs: Sequence[Any]) -> GraphModule:
    """The lifted graph with its weights put back as attributes (for compilers that build
    weights into the artifact, as TensorRT does). Placeholders carry `meta['val']`, as
    Torch-TensorRT's `construct_submodule_inputs` expects: the captured symbolic shape when the
    capture was dynamic (so TensorRT gets min/opt/max inputs), else the example input."""
    graph = torch.fx.Graph()
    root = torch.nn.Module()
    for name, child in lifted.children:
        set_path(root, name, child)
    env: dict[Node, Node] = {}
    position = 0
    for n in lifted.gm.graph.nodes:
        if n.op == "placeholder":
            if position < lifted.n_inputs:
                new = graph.placeholder(n.name)
                value = example_inputs[position] if position < len(example_inputs) else None
                if is_symbolic(n.meta.get("val")):  # a dynamic capture: keep the symbolic shape
                    new.meta["val"] = n.meta["val"]
                elif isinstance(value, torch.Tensor):
                    new.meta["val"] = value
            else:
                w = position - lifted.n_inputs
                attr = f"_w{w}"
                root.register_buffer(attr, lifted.weights[w])
                new = graph.get_attr(attr)
                new.meta["val"] = lifted.weights[w]
            position += 1
            env[n] = new
            continue
        if n.op == "get_attr":
            env[n] = graph.get_attr(n.target)
            value = fetch_attr(lifted.gm, n.target)
            set_path(root, n.target, value)
            continue
        env[n] = graph.node_copy(n, lambda a: env[a])
    return GraphModule(root, graph, class_name="BakedSubgraph")


# ----------------------------------------------------------------------------- fingerprints
def _norm(value: Any, index: dict[Node, int]) -> Any:
    if isinstance(value, Node):
        return ("%", index[value])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_norm(v, index) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((str(k), _norm(v, index)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", _norm(value.start, index), _norm(value.stop, index), _norm(value.step, index))
    if isinstance(value, float):
        return ("f", value.hex() if value == value else "nan")
    if isinstance(value, (bool, int, str, type(None))):
        return value
    if isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return (type(value).__name__, str(value))
    if isinstance(value, torch.Tensor):  # a tensor literal in the graph: shape, dtype and content
        return ("tensor", tensor_key(value), tensor_digest(value))
    return (type(value).__qualname__, repr(value))


def graph_signature(gm: GraphModule) -> tuple:
    """The ops of `gm` with their arguments, independent of node names."""
    index: dict[Node, int] = {}
    rows: list[tuple] = []
    for i, n in enumerate(gm.graph.nodes):
        index[n] = i
        if n.op == "placeholder":
            rows.append(("placeholder",))
        elif n.op == "get_attr":
            value = fetch_attr(gm, n.target)
            rows.append(("get_attr", repr(type(value)), id(value)))
        elif n.op == "call_module":
            child = fetch_attr(gm, n.target)
            sig = graph_signature(child) if isinstance(child, GraphModule) else ("module", id(child))
            rows.append(("call_module", sig, _norm(n.args, index), _norm(n.kwargs, index)))
        else:
            target = qualname(n.target) if n.op != "call_method" else str(n.target)
            rows.append((n.op, target, _norm(n.args, index), _norm(n.kwargs, index)))
    return tuple(rows)



__all__ = ["Lifted", "lift", "bake", "is_symbolic", "symbolic_shapes", "graph_signature", "tensor_key", "tensor_digest",
           "digest", "on_device"]
