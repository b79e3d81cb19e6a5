"""The pickle inside a Torch-TensorRT engine's state, checked before Torch-TensorRT unpickles it.

A TorchTensorRTModule's state (what hierviz's engine files hold, subgraph_engines.save_engine)
carries its CompilationSettings and symbolic shapes as a base64 pickle, which Torch-TensorRT's
`set_extra_state` unpickles as it is. `check_engine_state` reads that pickle first with an
unpickler that can make only what such metadata holds: Torch-TensorRT's settings, device and
enum types, torch dtypes and devices, sympy's numbers, symbols and arithmetic, Python's
containers. Every call the pickle asks for is checked before it is made (a sympy function given a
string would parse it as Python), so a crafted engine file is refused, having run nothing, before
Torch-TensorRT reads it (pickle.UnpicklingError saying why). The engine itself is TensorRT's
data: TensorRT refuses engines that embed host code unless its runtime is told to allow them,
and hierviz never does.
"""

from __future__ import annotations

import base64
import binascii
import io
import pickle
import sys
from typing import Any, Callable

import torch

# Torch-TensorRT's modules whose classes the settings are made of
_TORCH_TENSORRT = ("torch_tensorrt._Device", "torch_tensorrt._enums", "torch_tensorrt.dynamo._settings")
# sympy's constructors that take a string as a name or a number, never as an expression to parse
_NAMED = ("Symbol", "Dummy", "Integer", "Rational", "Float")
_BUILTINS = ("set", "frozenset", "list", "tuple", "dict", "complex", "slice", "bytearray")


def _allowed(module: str, name: str) -> Any:
    """The object a pickle names, when metadata may hold it (modules already imported only)."""
    if "." in name or name.startswith("__") or module not in sys.modules:
        return None
    obj = getattr(sys.modules[module], name, None)
    if module == "torch" and (isinstance(obj, torch.dtype) or obj is torch.device):
        return obj
    if module == "builtins" and name in _BUILTINS:
        return obj
    if module in _TORCH_TENSORRT and isinstance(obj, type):
        return obj
    if module.startswith(("sympy.", "torch.utils._sympy.")) and isinstance(obj, type):
        import sympy

        return obj if issubclass(obj, sympy.Basic) else None
    return None


def _strings(value: Any) -> bool:
    if isinstance(value, str):
        return True
    if isinstance(value, (tuple, list)):
        return any(_strings(v) for v in value)
    if isinstance(value, dict):
        return any(_strings(v) for v in value.values())
    return False


def _check_call(made: list[Any], func: Any, args: Any, kwargs: Any) -> None:
    """pickle.UnpicklingError unless `func` is a class the pickle named through `_allowed` (in
    `made`) and, for a sympy function, none of its arguments is a string it would parse."""
    if not any(func is m for m in made) or not isinstance(func, type):
        raise pickle.UnpicklingError(f"it calls {func!r:.60}, which engine metadata does not")
    if func.__module__.startswith(("sympy.", "torch.utils._sympy.")) and func.__name__ not in _NAMED \
            and (_strings(args) or _strings(kwargs)):
        raise pickle.UnpicklingError(f"it gives {func.__name__} a string to parse")


def _checked_unpickler(data: bytes) -> Any:
    """Python's pure-Python unpickler (its opcodes are a table that can be changed) that makes
    only what `_allowed` names and checks every call (REDUCE, NEWOBJ, NEWOBJ_EX) before making
    it; protocol 0/1 object opcodes and persistent references are refused."""
    unpickler: Any = pickle._Unpickler(io.BytesIO(data))
    made: list[Any] = []
    base = dict(unpickler.dispatch)

    def find_class(module: str, name: str) -> Any:
        obj = _allowed(module, name)
        if obj is None:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which engine metadata does not hold")
        made.append(obj)
        return obj

    def persistent_load(pid: Any) -> Any:
        raise pickle.UnpicklingError("it holds a persistent reference, which engine metadata does not hold")

    def checked(opcode: bytes, arity: int) -> Callable[[Any], None]:
        def run(self: Any) -> None:
            func, *rest = self.stack[-arity:]
            _check_call(made, func, rest[0], rest[1] if arity == 3 else {})
            base[opcode[0]](self)
        return run

    def refused(self: Any) -> None:
        raise pickle.UnpicklingError("it uses pickle's protocol 0/1 object opcodes, which engine metadata does not")

    unpickler.find_class, unpickler.persistent_load = find_class, persistent_load
    unpickler.dispatch = {
        **base, pickle.REDUCE[0]: checked(pickle.REDUCE, 2), pickle.NEWOBJ[0]: checked(pickle.NEWOBJ, 2),
        pickle.NEWOBJ_EX[0]: checked(pickle.NEWOBJ_EX, 3), pickle.INST[0]: refused, pickle.OBJ[0]: refused}
    return unpickler


def check_metadata(encoded: Any) -> Any:
    """The metadata Torch-TensorRT encoded (base64 of a pickle), read with the checked unpickler;
    pickle.UnpicklingError saying why for anything else."""
    if not isinstance(encoded, (str, bytes)):
        raise pickle.UnpicklingError(f"its metadata is a {type(encoded).__name__}, not Torch-TensorRT's encoded text")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise pickle.UnpicklingError("its metadata is not base64") from None
    try:
        return _checked_unpickler(data).load()
    except pickle.UnpicklingError:
        raise
    except (EOFError, TypeError, ValueError, AttributeError, IndexError, KeyError) as exc:
        raise pickle.UnpicklingError(f"its metadata cannot be read ({type(exc).__name__}: {exc})") from None


def check_engine_state(state: Any, metadata_index: int) -> None:
    """pickle.UnpicklingError unless `state` (a TorchTensorRTModule's state_dict, as saved) holds
    engine data and metadata only (see the module docstring); `metadata_index`: where the
    engine's info list holds the metadata (Torch-TensorRT's SERIALIZED_METADATA_IDX)."""
    extra = state.get("_extra_state") if isinstance(state, dict) else None
    if not isinstance(extra, tuple) or len(extra) != 4:
        raise pickle.UnpicklingError("it is not a Torch-TensorRT module's state")
    info = extra[1]
    if info is None:
        return
    if not isinstance(info, (list, tuple)) or len(info) <= metadata_index:
        raise pickle.UnpicklingError("its engine info is not Torch-TensorRT's list")
    check_metadata(info[metadata_index])


__all__ = ["check_engine_state", "check_metadata"]
