"""Op names: the qualified strings Torch-TensorRT uses for node targets, and lookup of
unknown names with close matches."""

from __future__ import annotations

import difflib
import functools
from typing import Any, Iterable

import torch
from torch.fx.node import _get_qualified_name

from hierviz.errors import ConfigError


def qualname(target: Any) -> str:
    """The name Torch-TensorRT prints for a node target, e.g. 'torch.ops.aten.add.Tensor'."""
    if isinstance(target, str):
        return target
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return "torch.ops." + str(target)
    try:
        return _get_qualified_name(target)
    except Exception:
        return str(target)


def packet_name(name: str) -> str:
    """'torch.ops.aten.add.Tensor' -> 'torch.ops.aten.add'; other names unchanged."""
    parts = name.split(".")
    if name.startswith("torch.ops.") and len(parts) == 5:
        return ".".join(parts[:4])
    return name


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
    import importlib

    try:
        mod = importlib.import_module(module)
    except Exception:
        return None
    return getattr(mod, attr, None)


@functools.lru_cache(maxsize=1)
def _known_names() -> tuple[str, ...]:
    names = []
    for packet in dir(torch.ops.aten):
        if packet.startswith("_") and not packet.startswith("_native") and not packet.startswith("_to"):
            pass
        try:
            pk = getattr(torch.ops.aten, packet)
        except Exception:
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


def normalize(op: Any, field: str = "torch_executed_ops") -> str:
    """Turn an OpOverload, packet or name string into its qualified name; raise
    ConfigError naming close matches when the op does not exist."""
    if not isinstance(op, str):
        return qualname(op)
    name = op.strip()
    if name.startswith("aten."):
        name = "torch.ops." + name
    if _resolve(name) is None:
        hint = closest(name)
        msg = f"{field}: unknown op name {op!r}."
        if hint:
            msg += " Did you mean " + ", ".join(repr(h) for h in hint) + "?"
        msg += " Use qualified names such as 'torch.ops.aten.add.Tensor' (see Partition.ops())."
        raise ConfigError(msg)
    return name


def normalize_all(ops: Iterable[Any], field: str = "torch_executed_ops") -> frozenset[str]:
    if isinstance(ops, (str, bytes)):
        ops = [ops]
    return frozenset(normalize(o, field) for o in ops)
