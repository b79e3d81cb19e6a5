"""An aten graph as JSON and a dict of tensors, read back without running anything from the file.

A compiled model saved to a folder may be sent to someone else, so its graph is written in a form
that loading cannot turn into code (no pickle): `graph_json(gm)` gives a JSON document (each node's
name, op, op name, arguments and the meta that names where it came from) and the graph's weights as
plain tensors (saved with `torch.save`, read with `weights_only=True`); `graph_from_json` rebuilds
the GraphModule. An op is named, never imported: an aten (or other registered) operator is looked up
in `torch.ops`, a Python function only from a short list of arithmetic ones (what torch.export writes
for symbolic sizes); `call_module` and `call_method` nodes are refused both ways. A graph that holds
anything else is refused when written (ValueError saying what), and a document that does not follow
this format is refused when read (ValueError saying where).

`meta['val']` is not written: the reader propagates values again from the inputs (what
`hierviz.latency.deploy.recorded_meta` does), and `meta['tensor_meta']`, where a node had one,
is made again from those values by `restore_tensor_meta`.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

import torch
from torch.fx import Graph, GraphModule, Node
from torch.fx.graph import CodeGen, _PyTreeCodeGen, _PyTreeInfo
from torch.utils import _pytree as pytree

from hierviz.capturing.graph_codec import owner_of, tensor_meta_of
from hierviz import trt

FORMAT = "hierviz-graph/1"
OPS = ("placeholder", "get_attr", "call_function", "output")
TENSOR_META = "tensor_meta"  # in the document: True when the node had meta['tensor_meta']
RESTORE_TENSOR_META = "hierviz_restore_tensor_meta"  # the same, in a read node's meta until restore_tensor_meta

_ARITHMETIC = ("getitem", "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "abs", "eq", "ne",
               "lt", "le", "gt", "ge", "and_", "or_", "xor", "not_", "invert", "lshift", "rshift")
_TORCH_SYM = ("sym_float", "sym_int", "sym_max", "sym_min", "sym_not", "sym_ite", "sym_sqrt", "sym_sum", "_assert",
              "_check", "_check_is_size")
# the Python functions a saved graph may call, by the name it is saved under
PYTHON_TARGETS: dict[str, Callable[..., Any]] = {
    **{f"operator.{n}": getattr(operator, n) for n in _ARITHMETIC},
    **{f"math.{n}": getattr(math, n) for n in ("ceil", "floor", "trunc", "sqrt")},
    **{f"torch.{n}": getattr(torch, n) for n in _TORCH_SYM if hasattr(torch, n)},
}
_PYTHON_NAMES = {id(fn): name for name, fn in PYTHON_TARGETS.items()}

_KINDS = {"dtype": torch.dtype, "layout": torch.layout, "memory_format": torch.memory_format}


# ----------------------------------------------------------------------------- writing
def _target_name(target: Any) -> dict[str, str]:
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return {"op": str(target).replace("::", ".")}
    if isinstance(target, torch._ops.HigherOrderOperator):
        return {"op": f"{target.namespace}.{target.name()}"}
    name = _PYTHON_NAMES.get(id(target))
    if name is None:
        raise ValueError(f"the graph calls {getattr(target, '__qualname__', target)!r}, which is not an operator "
                         "registered with torch (only those, and Python's arithmetic, can be saved as data)")
    return {"fn": name}


def _value(value: Any) -> Any:
    """An argument as JSON: plain values as they are, the rest tagged ({kind: ...})."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": str(value)}
    if isinstance(value, Node):
        return {"node": value.name}
    if isinstance(value, list):  # fx's immutable_list too
        return [_value(v) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [_value(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[_value(k), _value(v)] for k, v in value.items()]}
    if isinstance(value, slice):
        return {"slice": [_value(value.start), _value(value.stop), _value(value.step)]}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    for kind, cls in _KINDS.items():
        if isinstance(value, cls):
            return {kind: str(value).removeprefix("torch.")}
    raise ValueError(f"the graph holds an argument of type {type(value).__name__} ({value!r:.60}), "
                     "which cannot be saved as data")


def _class_name(cls: Any) -> str:
    return cls if isinstance(cls, str) else f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', cls)}"


def _meta(meta: dict) -> dict[str, Any]:
    """The meta that says where a node came from, as JSON (the rest is left out)."""
    out: dict[str, Any] = {}
    if isinstance(meta.get("stack_trace"), str):
        out["stack_trace"] = meta["stack_trace"]
    stack = meta.get("nn_module_stack")
    if isinstance(stack, dict):
        out["nn_module_stack"] = {str(k): [str(v[0]), _class_name(v[1])] for k, v in stack.items()
                                  if isinstance(v, tuple) and len(v) == 2}
    fn = meta.get("torch_fn")
    if isinstance(fn, tuple) and all(isinstance(s, str) for s in fn):
        out["torch_fn"] = list(fn)
    if isinstance(meta.get("seq_nr"), int):
        out["seq_nr"] = meta["seq_nr"]
    if meta.get("tensor_meta") is not None:
        out[TENSOR_META] = True
    return out


def _codegen_document(graph: Graph) -> Any:
    codegen = graph._codegen
    if isinstance(codegen, _PyTreeCodeGen):
        info = codegen.pytree_info
        return {"orig_args": list(info.orig_args),
                "in_spec": None if info.in_spec is None else pytree.treespec_dumps(info.in_spec),
                "out_spec": None if info.out_spec is None else pytree.treespec_dumps(info.out_spec)}
    if type(codegen) is CodeGen:
        return None
    raise ValueError(f"the graph's code generator {type(codegen).__name__} cannot be saved as data")


def _document(gm: GraphModule, tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    nodes = []
    attrs: list[dict[str, Any]] = []
    for n in gm.graph.nodes:
        if n.op not in OPS:
            raise ValueError(f"node {n.name} is a {n.op} node; only aten graphs (from hv.capture) can be saved")
        if n.op == "get_attr":
            attrs.append(_attr(gm, str(n.target), tensors))
        target = _target_name(n.target) if n.op == "call_function" else str(n.target)
        nodes.append({"name": n.name, "op": n.op, "target": target, "args": _value(n.args),
                      "kwargs": _value(n.kwargs), "meta": _meta(n.meta)})
    return {"nodes": nodes, "attrs": attrs, "codegen": _codegen_document(gm.graph)}


def _attr(gm: GraphModule, path: str, tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    obj: Any = gm
    for part in path.split("."):
        obj = getattr(obj, part)
    if isinstance(obj, GraphModule):
        return {"path": path, "graph": _document(obj, tensors)}
    if isinstance(obj, torch.Tensor) and type(obj) in (torch.Tensor, torch.nn.Parameter):
        key = f"t{len(tensors)}"
        tensors[key] = obj.detach().cpu()
        return {"path": path, "tensor": key, "parameter": isinstance(obj, torch.nn.Parameter),
                "requires_grad": obj.requires_grad}
    raise ValueError(f"the graph's attribute {path!r} is a {type(obj).__name__}, which cannot be saved as data")


def graph_json(gm: GraphModule) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """`gm` as a JSON-safe document and its weights as plain tensors by key (see the module
    docstring); ValueError saying what, for a graph that holds something else."""
    tensors: dict[str, torch.Tensor] = {}
    doc = _document(gm, tensors)
    return {"format": FORMAT, **doc}, tensors


# ----------------------------------------------------------------------------- reading
def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(what)


def _identifier(name: Any, what: str) -> str:
    _check(isinstance(name, str) and name.isidentifier(), f"{what} {name!r} is not a name")
    return name


def _dotted(path: Any, what: str, dunder: bool = False) -> str:
    """`path` when it is names (or indices) joined by dots; without `dunder`, none of them a
    `__name__` (an attribute path never reaches Python's own attributes)."""
    _check(isinstance(path, str), f"{what} {path!r} is not a dotted name")
    for part in path.split("."):
        _check(part.isdigit() or part.isidentifier(), f"{what} {path!r} is not a dotted name")
        _check(dunder or not part.startswith("__"), f"{what} {path!r} reaches a Python attribute")
    return path


def _lookup(name: str) -> Any:
    """What `name` ('aten.add.Tensor', 'higher_order.cond') is in torch.ops, or None."""
    obj: Any = torch.ops
    for part in _dotted(name, "op", dunder=True).split("."):
        try:
            obj = getattr(obj, part)
        except (AttributeError, RuntimeError):
            return None
    return obj


def _operator(name: str) -> Any:
    """The operator `name` names, registered in this process (Torch-TensorRT's own ops, such as
    tensorrt.conv_asym_pad, once torch_tensorrt is imported through hierviz.trt); nothing the
    document names is imported."""
    obj = _lookup(name)
    if obj is None and name.split(".")[0] == "tensorrt" and trt.load()[0] is not None:
        obj = _lookup(name)
    if obj is None:
        raise ValueError(f"op {name} is not registered in this process: import the library that defines it "
                         "(your own torch.library ops, or a library's) before loading")
    _check(isinstance(obj, (torch._ops.OpOverload, torch._ops.OpOverloadPacket, torch._ops.HigherOrderOperator)),
           f"{name} is not an operator")
    return obj


def _target(op: str, target: Any) -> Any:
    if op == "get_attr":
        return _dotted(target, "the get_attr target")
    if op == "placeholder":
        return _identifier(target, "the placeholder")
    if op == "output":
        _check(target == "output", f"the output target {target!r} is not 'output'")
        return target
    _check(isinstance(target, dict) and len(target) == 1, f"call target {target!r} is not an op")
    (kind, name), = target.items()
    _check(isinstance(name, str), f"call target {target!r} is not an op")
    if kind == "op":
        return _operator(name)
    _check(kind == "fn" and name in PYTHON_TARGETS, f"{name!r} is not a function a saved graph may call")
    return PYTHON_TARGETS[name]


def _check_str(value: Any, what: str) -> str:
    _check(isinstance(value, str), f"{what} {value!r} is not a string")
    return value


def _read_value(value: Any, env: dict[str, Node]) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_read_value(v, env) for v in value]
    _check(isinstance(value, dict) and len(value) == 1, f"argument {value!r:.80} is not one this format writes")
    (kind, data), = value.items()
    if kind == "node":
        _check(isinstance(data, str) and data in env, f"argument refers to {data!r}, not an earlier node")
        return env[data]
    if kind in ("tuple", "slice", "dict"):
        _check(isinstance(data, list), f"{kind} {data!r:.80} is not a list")
        items = [_read_value(v, env) for v in data]
        if kind == "tuple":
            return tuple(items)
        if kind == "slice":
            _check(len(items) == 3, f"slice {data!r} does not have 3 parts")
            return slice(*items)
        _check(all(isinstance(p, list) and len(p) == 2 for p in items), f"dict {data!r:.80} is not a list of pairs")
        return {_hashable(k): v for k, v in items}
    _check(isinstance(data, str), f"{kind} {data!r:.80} is not a string")
    if kind == "float":
        _check(data in ("inf", "-inf", "nan"), f"float {data!r} is not inf, -inf or nan")
        return float(data)
    if kind == "device":
        try:
            return torch.device(data)
        except (RuntimeError, ValueError):
            raise ValueError(f"{data!r} is not a device") from None
    _check(kind in _KINDS, f"argument kind {kind!r} is not one this format writes")
    found = getattr(torch, _identifier(data, kind), None)
    _check(isinstance(found, _KINDS[kind]), f"{data!r} is not a torch {kind}")
    return found


def _hashable(key: Any) -> Any:
    _check(isinstance(key, (str, int, float, bool, tuple)) or key is None, f"dict key {key!r:.60} is not a value")
    return key


def _read_meta(meta: Any, name: str) -> dict[str, Any]:
    _check(isinstance(meta, dict), f"node {name}'s meta is not an object")
    out: dict[str, Any] = {}
    if "stack_trace" in meta:
        out["stack_trace"] = _check_str(meta["stack_trace"], f"node {name}'s stack_trace")
    if "nn_module_stack" in meta:
        stack = meta["nn_module_stack"]
        pairs = isinstance(stack, dict) and all(
            isinstance(v, list) and len(v) == 2 and all(isinstance(s, str) for s in v) for v in stack.values())
        _check(pairs, f"node {name}'s nn_module_stack is not a map of [path, class]")
        out["nn_module_stack"] = {k: (v[0], v[1]) for k, v in stack.items()}
    if "torch_fn" in meta:
        fn = meta["torch_fn"]
        _check(isinstance(fn, list) and all(isinstance(s, str) for s in fn), f"node {name}'s torch_fn is not strings")
        out["torch_fn"] = tuple(fn)
    if "seq_nr" in meta:
        _check(isinstance(meta["seq_nr"], int) and not isinstance(meta["seq_nr"], bool), f"node {name}'s seq_nr")
        out["seq_nr"] = meta["seq_nr"]
    if meta.get(TENSOR_META) is True:
        out[RESTORE_TENSOR_META] = True
    return out


def _read_codegen(data: Any) -> CodeGen:
    if data is None:
        return CodeGen()
    _check(isinstance(data, dict) and isinstance(data.get("orig_args"), list), "codegen is not an object")

    def spec(text: Any) -> Any:
        if text is None:
            return None
        try:
            return pytree.treespec_loads(_check_str(text, "a pytree spec"))
        except KeyError as exc:
            raise ValueError(f"the model's inputs or outputs hold the type {exc}, which is not registered as a pytree "
                             "node here: import the library that defines it before loading") from None
        except (TypeError, NotImplementedError) as exc:  # json's ValueError passes as it is
            raise ValueError(f"a pytree spec cannot be read: {exc}") from None

    args = [_identifier(a, "an argument name") for a in data["orig_args"]]
    return _PyTreeCodeGen(_PyTreeInfo(args, spec(data.get("in_spec")), spec(data.get("out_spec"))))


def _read_graph(doc: Any, tensors: dict[str, Any]) -> GraphModule:
    _check(isinstance(doc, dict) and isinstance(doc.get("nodes"), list) and isinstance(doc.get("attrs"), list),
           "the document has no list of nodes and attrs")
    root = torch.nn.Module()
    for attr in doc["attrs"]:
        _check(isinstance(attr, dict), f"attr {attr!r:.60} is not an object")
        owner, leaf = owner_of(root, _dotted(attr.get("path"), "attr path"))
        if "graph" in attr:
            owner.add_module(leaf, _read_graph(attr["graph"], tensors))
            continue
        key = attr.get("tensor")
        _check(isinstance(key, str) and isinstance(tensors.get(key), torch.Tensor),
               f"attr {attr['path']} names no tensor of the weights file")
        grad = attr.get("requires_grad") is True
        if attr.get("parameter") is True:
            owner.register_parameter(leaf, torch.nn.Parameter(tensors[key], requires_grad=grad))
        else:
            owner.register_buffer(leaf, tensors[key].requires_grad_(grad))
    graph = Graph()
    env: dict[str, Node] = {}
    for n in doc["nodes"]:
        _check(isinstance(n, dict), f"node {n!r:.60} is not an object")
        name, op = _identifier(n.get("name"), "node name"), n.get("op")
        _check(op in OPS, f"node {name}'s op {op!r} is not one of {', '.join(OPS)}")
        _check(name not in env, f"node name {name} is used twice")
        args, kwargs = _read_value(n.get("args"), env), _read_value(n.get("kwargs"), env)
        _check(isinstance(args, tuple) and isinstance(kwargs, dict), f"node {name}'s args or kwargs are malformed")
        meta = _read_meta(n.get("meta", {}), name)
        if op == "output":
            _check(len(args) == 1, "the output node does not have one argument")
            graph.output(args[0]).meta.update(meta)
            continue
        target = _target(op, n.get("target"))
        if op == "get_attr":
            _check(_has_path(root, target), f"node {name} reads {target}, which the document does not hold")
        node = graph.create_node(op, target, args, kwargs, name=name)
        _check(node.name == name, f"node name {name} is not one torch.fx keeps")
        node.meta.update(meta)
        env[name] = node
    graph._codegen = _read_codegen(doc.get("codegen"))
    gm = GraphModule(root, graph)
    return gm


def _has_path(root: torch.nn.Module, path: str) -> bool:
    obj: Any = root
    for part in path.split("."):
        if part not in getattr(obj, "__dict__", {}) and part not in obj._modules and part not in obj._parameters \
                and part not in obj._buffers:
            return False
        obj = getattr(obj, part)
    return True


def graph_from_json(doc: Any, tensors: Any) -> GraphModule:
    """The GraphModule `graph_json` wrote, its weights from `tensors`; ValueError saying where for
    a document that does not follow the format (no part of it is run)."""
    _check(isinstance(doc, dict) and doc.get("format") == FORMAT, f"the document is not format {FORMAT}")
    _check(isinstance(tensors, dict), "the weights are not a dict of tensors")
    return _read_graph(doc, tensors)


def restore_tensor_meta(gm: GraphModule) -> None:
    """meta['tensor_meta'] made again from meta['val'] on the nodes that had one when saved."""
    for node in gm.graph.nodes:
        if node.meta.pop(RESTORE_TENSOR_META, False) is True and node.meta.get("val") is not None:
            made = tensor_meta_of(node.meta["val"])
            if made is not None:
                node.meta["tensor_meta"] = made


__all__ = ["graph_json", "graph_from_json", "restore_tensor_meta", "FORMAT", "PYTHON_TARGETS"]
