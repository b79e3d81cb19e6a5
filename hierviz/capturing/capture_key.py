"""The capture cache's key: a digest of everything that can change a model's capture, so that an
entry is found again in a new process only for the same model, inputs and versions.

The key (`capture_key`) is made of: the class and `forward` source of every submodule (and the
contents of the file each class is defined in), their other attributes (a transformers config's
flags, say), their hooks, the values of every parameter, buffer and tensor attribute, the
train/eval flags, the example inputs' structure, shapes and dtypes (and non-tensor values),
`dynamic_shapes`, the device the capture lowers for (hierviz.capturing.target_device.target_key:
the reference GPU with torch's SDPA settings, or the CPU), the entry format, the versions of torch
and hierviz, and the installed Torch-TensorRT distribution (its name and version, read from its
metadata: torch_tensorrt is not imported). A model it cannot describe (a parameter on the meta
device, a forward with no code) is not keyed, so not cached. `file_digest` is also what a kept
torch.compile capture checks its traced source files by.
"""

from __future__ import annotations

import inspect
import os
import types
from typing import Any

import torch

from hierviz import trt
from hierviz.capturing.disk_cache import FORMAT
from hierviz.capturing.target_device import DEFAULT_TARGET, target_key
from hierviz.foundation.digests import PartsDigest, data_digest, tensor_digest, tensor_digests
from hierviz.support.support_key import plain
from hierviz.version import __version__

_DEPTH = 4  # how deep a submodule's attributes are described


class _NotCacheable(Exception):
    """The model has something the key cannot describe."""


def capture_key(model: torch.nn.Module, inputs: Any, dynamic_shapes: Any, target: Any = None) -> str | None:
    """The cache key of capturing `model` with `inputs` (a hashable description of the example
    inputs) and `dynamic_shapes` (the same of those) for `target` (the target device's key,
    hierviz.capturing.target_device.target_key; None: the default target's), or None when the
    model cannot be keyed."""
    target = target if target is not None else target_key(DEFAULT_TARGET)
    h = PartsDigest()
    h.add((FORMAT, __version__, torch.__version__, lowering(), inputs, dynamic_shapes, target))
    _hash_side_by_side(model)
    try:
        seen: dict[int, str] = {}
        memo: dict[int, str] = {}
        for name, module in model.named_modules(remove_duplicate=False):
            h.add((name, module.training, _class_key(type(module)),
                   _describe(_renumbered_hooks(vars(module)), _DEPTH, memo)))
            for attr, value in _tensors(module):
                h.add((name, attr, _tensor_digest(value, seen)))
    except _NotCacheable:
        return None
    return h.hexdigest()


def _hash_side_by_side(model: torch.nn.Module) -> None:
    """Take the digests of the model's plain tensors on a few threads (`tensor_digests`: a 1.1B
    model's 2.2 GB in about half the time); the key reads them back. A tensor that cannot be
    hashed is left to the key, which says the model is not cacheable."""
    plain = {id(t): t for module in model.modules() for _, t in _tensors(module)
             if t.device.type != "meta" and t.layout == torch.strided}
    try:
        tensor_digests(plain.values())
    except (RuntimeError, TypeError, ValueError):  # (the key hashes each again and says which fails)
        pass


def lowering() -> tuple[str, str] | str:
    """The lowering hierviz runs, named without importing torch_tensorrt (5 s): the installed
    Torch-TensorRT distribution (name, version), whose lowering and default settings capture
    runs, or torch's own decompositions without one."""
    return trt.installed_distribution() or "torch decompositions"


_CLASS_KEYS: dict[type, str] = {}
_FILE_DIGESTS: dict[tuple[str, float, int], str] = {}


def _class_key(cls: type) -> str:
    """The class's qualified name, its forward's source and the digest of the file it is in."""
    known = _CLASS_KEYS.get(cls)
    if known is None:
        forward: Any = getattr(cls, "forward", None)  # None or not a function: getsource's TypeError
        try:
            source = inspect.getsource(forward)
        except (OSError, TypeError):
            code = getattr(forward, "__code__", None)
            if code is None:
                raise _NotCacheable(f"{cls.__qualname__}.forward has no source or code") from None
            source = repr(plain(code))  # no memory address in it (a nested lambda's code object has one)
        known = _CLASS_KEYS[cls] = f"{cls.__module__}.{cls.__qualname__}|{source}|{_file_digest(cls)}"
    return known


def _file_digest(cls: type) -> str:
    try:
        path = inspect.getsourcefile(cls) or ""
    except (OSError, TypeError):  # a class defined in `python -c`, a builtin
        return ""
    return file_digest(path)


def file_digest(path: str) -> str:
    """The digest of a source file's contents ('' when it cannot be read), kept per (path,
    mtime, size) for the process."""
    try:
        stat = os.stat(path)
    except (OSError, TypeError, ValueError):
        return ""
    key = (path, stat.st_mtime, stat.st_size)
    if key not in _FILE_DIGESTS:
        with open(path, "rb") as f:
            _FILE_DIGESTS[key] = data_digest(f.read())
    return _FILE_DIGESTS[key]


def _renumbered_hooks(state: dict[str, Any]) -> dict[str, Any]:
    """A module's attributes with its hook dicts (`_forward_hooks`, `_forward_hooks_with_kwargs`,
    ...) keyed by each hook's place among the module's hooks instead of its handle id, a
    counter of every hook made in the process so far."""
    hooks = [name for name, value in state.items() if "hooks" in name and isinstance(value, dict)]
    ids = sorted({k for name in hooks for k in state[name] if isinstance(k, int)})
    if not ids:
        return state
    place = {handle: n for n, handle in enumerate(ids)}
    return {**state, **{name: {place.get(k, k): v for k, v in state[name].items()} for name in hooks}}


# described elsewhere; and names with "hash" in them are process-specific (a transformers
# GenerationConfig's _original_object_hash is hash() of a string, salted per process)
_SKIPPED = {"_parameters", "_buffers", "_modules", "training"}
_PLAIN = (int, float, bool, str, bytes, type(None), complex)


def _describe(value: Any, depth: int, memo: dict[int, str]) -> Any:
    """A text description of a module attribute that is equal in every process for equal
    values: scalars by value, containers item by item, functions and classes by name, hooks
    by their functions, other objects by their attributes (to `depth`); tensors are hashed
    separately (`_tensors`), so only their place is described here."""
    if isinstance(value, _PLAIN):
        return repr(value)
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, torch.nn.Module):
        return "module"
    if isinstance(value, (torch.dtype, torch.device, torch.memory_format, torch.layout)):
        return str(value)
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(type(value)))}"
    if depth <= 0:
        return type(value).__qualname__
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, dict):
        out = repr(sorted((str(k), _describe(v, depth - 1, memo)) for k, v in value.items()
                          if str(k) not in _SKIPPED and "hash" not in str(k).lower()))
    elif isinstance(value, (list, tuple)):
        out = repr([_describe(v, depth - 1, memo) for v in value])
    elif isinstance(value, (set, frozenset)):
        out = repr(sorted(_describe(v, depth - 1, memo) for v in value))
    elif hasattr(value, "__dict__"):
        out = f"{type(value).__qualname__}{_describe(vars(value), depth - 1, memo)}"
    else:
        out = type(value).__qualname__
    memo[id(value)] = out
    return out


def _tensors(module: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    """The module's own parameters, buffers and tensor attributes."""
    found: list[tuple[str, torch.Tensor]] = [(k, v) for k, v in module._parameters.items() if v is not None]
    found += [(k, v) for k, v in module._buffers.items() if v is not None]
    found += [(k, v) for k, v in vars(module).items() if isinstance(v, torch.Tensor)]
    return found


def _tensor_digest(t: torch.Tensor, seen: dict[int, str]) -> str:
    if id(t) in seen:  # a tied weight: hashed once
        return seen[id(t)]
    if t.device.type == "meta" or t.layout != torch.strided:
        raise _NotCacheable("a tensor without plain values")
    try:
        digest = tensor_digest(t)  # once per process: the build key takes the same one
    except Exception as exc:
        raise _NotCacheable(f"a tensor whose values cannot be read: {exc}") from exc
    seen[id(t)] = out = f"{t.dtype}{tuple(t.shape)}{tuple(t.stride())}{digest}"
    return out


__all__ = ["capture_key", "file_digest", "lowering"]
