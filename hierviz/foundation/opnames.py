"""Op names: the qualified strings Torch-TensorRT uses for node targets, and lookup of
unknown names with close matches; and `CALLABLE_OPS`, the fx node kinds that are ops."""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import functools
import sys
from typing import Any, Iterable, Iterator

import torch
from torch.fx.node import _get_qualified_name

from hierviz.errors import ConfigError

# The fx node kinds that are ops (and are partitioned); the others are inputs, weights, the output.
CALLABLE_OPS = ("call_function", "call_method", "call_module")


def qualname(target: Any) -> str:
    """The name Torch-TensorRT prints for a node target, e.g. 'torch.ops.aten.add.Tensor'."""
    if isinstance(target, str):
        return target
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return "torch.ops." + str(target)
    try:
        return _get_qualified_name(target)
    except (AttributeError, RuntimeError, TypeError):  # no __name__/__module__, or a lambda without source
        return str(target)


def packet_name(name: str) -> str:
    """'torch.ops.aten.add.Tensor' -> 'torch.ops.aten.add'; other names unchanged."""
    parts = name.split(".")
    if name.startswith("torch.ops.") and len(parts) == 5:
        return ".".join(parts[:4])
    return name


def packets_in(names: Iterable[str]) -> frozenset[str]:
    """The packet names among `names` ('torch.ops.aten.add': every overload of add)."""
    return frozenset(n for n in names if n.startswith("torch.ops.") and n.count(".") == 3)


def in_op_set(name: str, names: frozenset[str], packets: frozenset[str]) -> bool:
    """Whether op `name` is in a set of op names whose `packets` (packets_in(names)) stand for
    all their overloads: the one matching rule of support sets, torch_executed_ops and the
    non-compute ops."""
    return name in names or (bool(packets) and packet_name(name) in packets)


def overload_names(name: str) -> list[str]:
    """A qualified op name as Torch-TensorRT's torch_executed_ops matches it, one overload at a
    time: a packet ('torch.ops.aten.addmm') as every overload of it ('torch.ops.aten.addmm.default',
    '...out', ...), any other name as it is. (hierviz's own matching takes a packet for all its
    overloads, in_op_set; Torch-TensorRT's compares each node's overload name.)"""
    found = _resolve(name)
    if isinstance(found, torch._ops.OpOverloadPacket):
        return [f"{name}.{overload}" for overload in found.overloads()]
    return [name]


def _resolve(name: str) -> Any:
    """The object a qualified op name refers to, or None."""
    if name.startswith("torch.ops."):
        obj: Any = torch.ops
        for part in name.split(".")[2:]:
            try:
                obj = getattr(obj, part)
            except (AttributeError, RuntimeError):
                return None
        if isinstance(obj, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            return obj
        return None
    module, _, attr = name.rpartition(".")
    if not module:
        return None
    if _AS_SAVED.get():  # a name read from a file imports nothing: only modules already imported answer
        return getattr(sys.modules.get(module), attr, None)
    import importlib

    try:
        mod = importlib.import_module(module)
    except (ImportError, ValueError, TypeError):  # no such module, or not a module name
        return None
    return getattr(mod, attr, None)


@functools.lru_cache(maxsize=1)
def _known_names() -> tuple[str, ...]:
    names = []
    for packet in dir(torch.ops.aten):
        try:
            pk = getattr(torch.ops.aten, packet)
        except (AttributeError, RuntimeError):
            continue
        if not isinstance(pk, torch._ops.OpOverloadPacket):
            continue
        base = f"torch.ops.aten.{packet}"
        names.append(base)
        for ov in pk.overloads():
            names.append(f"{base}.{ov}")
    names += ["_operator.getitem", "_operator.add", "_operator.mul"]
    return tuple(sorted(set(names)))


def closest(name: str, n: int = 3) -> list[str]:
    """Real op names closest to `name`."""
    known = _known_names()
    short = name.rsplit(".", 2)
    hits = difflib.get_close_matches(name, known, n=n, cutoff=0.6)
    if not hits and len(short) > 1:
        hits = [k for k in known if short[-2] in k.split(".")][:n]
    return hits


def split_names(text: str) -> list[str]:
    """'a, b,c' -> ['a', 'b', 'c'] (op names as text: comma-separated)."""
    return [t.strip() for t in text.split(",") if t.strip()]


# torch submodules whose functions lower to aten ops named '<submodule>_<name>'.
_PREFIXED = ("special", "linalg", "fft", "nested")


def lowers_to(name: str) -> list[str]:
    """Aten op names a torch-level function name ('torch.relu', 'torch.special.i0e',
    'torch.nn.functional.gelu') most likely lowers to; [] when none is found."""
    parts = name.split(".")
    last = parts[-1]
    packets = [f"{p}_{last}" for p in parts[1:-1] if p in _PREFIXED] + [last, last.rstrip("_")]
    out: list[str] = []
    for packet in dict.fromkeys(packets):
        pk = getattr(torch.ops.aten, packet, None) if packet else None
        if isinstance(pk, torch._ops.OpOverloadPacket):
            overloads = sorted((o for o in pk.overloads() if "out" not in o),  # out= forms never appear
                               key=lambda o: (o != "default", o))
            out += [f"torch.ops.aten.{packet}.{o}" for o in overloads[:3]]
    return out


def _torch_level(name: str) -> bool:
    """A name of a torch-level Python function (torch.relu, torch.nn.functional.gelu): aten
    graphs never call those, so such a name would never match a node."""
    if not name.startswith("torch.") or name.startswith("torch.ops."):
        return False
    attr = name.rsplit(".", 1)[-1]
    return not (attr.startswith("sym_") or attr.startswith("_sym"))


# torch_executed_ops entries that name a source op (hv.source_ops): "source:torch.ops.aten.silu.default"
SOURCE_PREFIX = "source:"


_AS_SAVED: contextvars.ContextVar[bool] = contextvars.ContextVar("hierviz_names_as_saved", default=False)


@contextlib.contextmanager
def names_as_saved() -> Iterator[None]:
    """Inside it, qualified op names ('torch.ops.<namespace>.<op>.<overload>', '_operator.getitem')
    are taken as written, never looked up in this process, and no name imports a module: reading
    a saved partition, whose ops may have been registered only in the process that saved it
    (transformers registers torch.ops.transformers.grouped_mm_fallback when Mixtral runs), and
    which may come from someone else (a name in it must not run a module's import-time code)."""
    token = _AS_SAVED.set(True)
    try:
        yield
    finally:
        _AS_SAVED.reset(token)


def normalize(op: Any, field: str = "torch_executed_ops") -> str:
    """Turn an OpOverload, packet or name string into its qualified name; 'aten.x.y' and
    'x.y' (an aten op) are accepted. Unknown names raise ConfigError naming close matches;
    torch-level names (torch.relu) raise ConfigError naming the aten ops they lower to.
    'source:<op>' (hv.source_ops) keeps its prefix, the op normalised."""
    if isinstance(op, str) and op.strip().startswith(SOURCE_PREFIX):
        return SOURCE_PREFIX + normalize(op.strip()[len(SOURCE_PREFIX):], field)
    if isinstance(op, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return qualname(op)
    if callable(op) and not isinstance(op, str):
        op = qualname(op)
    if not isinstance(op, str):
        raise ConfigError.for_setting(field, f"op names are strings such as 'torch.ops.aten.relu.default' (or "
                                      f"the op itself, torch.ops.aten.relu.default), not {type(op).__name__} {op!r}.")
    name = op.strip()
    if not name:
        raise ConfigError.for_setting(field, "an empty op name; use qualified names such as "
                                             "'torch.ops.aten.add.Tensor'.")
    if _AS_SAVED.get() and "." in name and all(p.isidentifier() for p in name.split(".")):
        return name  # a saved name: as written, never looked up (names_as_saved)
    if name.startswith("aten."):
        name = "torch.ops." + name
    elif not name.startswith("torch.ops.") and _resolve(name) is None and \
            _resolve("torch.ops.aten." + name) is not None:
        name = "torch.ops.aten." + name  # 'relu.default' / 'relu'
    if _torch_level(name) and _resolve(name) is not None:
        aten = lowers_to(name)
        msg = (f"{op!r} is a torch-level function; the captured graph holds aten ops, so it "
               "would never match a node.")
        msg += (" Use the aten op(s) it lowers to: " + ", ".join(repr(a) for a in aten) + "."
                if aten else " Use the aten names Partition.ops() lists.")
        raise ConfigError.for_setting(field, msg)
    if _resolve(name) is None:
        hint = closest(name)
        msg = f"unknown op name {op!r}."
        if hint:
            msg += " Did you mean " + ", ".join(repr(h) for h in hint) + "?"
        msg += " Use qualified names such as 'torch.ops.aten.add.Tensor' (see Partition.ops())."
        raise ConfigError.for_setting(field, msg)
    return name


def normalize_all(ops: Iterable[Any], field: str = "torch_executed_ops") -> frozenset[str]:
    """Every op of `ops` normalised (a single string is one name)."""
    if isinstance(ops, (str, bytes)):
        ops = [ops]
    try:
        items = list(ops)
    except TypeError:
        raise ConfigError(f"{field} must be a set of op names, e.g. {{'torch.ops.aten.relu.default'}}, "
                          f"not {type(ops).__name__} {ops!r}.") from None
    return frozenset(normalize(o, field) for o in items)
