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
from typing import Any

import torch

# Torch-TensorRT's modules whose classes the settings are made of
_TORCH_TENSORRT = ("torch_tensorrt._Device", "torch_tensorrt._enums", "torch_tensorrt.dynamo._settings")
# sympy's constructors that take a string as a name or a number, never as an expression to parse
_NAMED = ("Symbol", "Dummy", "Integer", "Rational", "Float")
_BUILTINS = ("set", "frozenset", "list", "tuple", "dict", "complex", "slice", "bytearray")
_DISPATCH = pickle._Unpickler.dispatch  # type: ignore[attr-defined]  # the pure-Python unpickler's opcode table


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


class _Checked(pickle._Unpickler):  # type: ignore[name-defined]  # the pure-Python one: its opcodes can be checked
    """An unpickler that makes only what `_allowed` names and checks each call before it."""

    dispatch = dict(_DISPATCH)

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.made: list[Any] = []

    def find_class(self, module: str, name: str) -> Any:
        obj = _allowed(module, name)
        if obj is None:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which engine metadata does not hold")
        self.made.append(obj)
        return obj

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("it holds a persistent reference, which engine metadata does not hold")

    def check_call(self, func: Any, args: Any, kwargs: Any) -> None:
        if not any(func is m for m in self.made) or not isinstance(func, type):
            raise pickle.UnpicklingError(f"it calls {func!r:.60}, which engine metadata does not")
        if func.__module__.startswith(("sympy.", "torch.utils._sympy.")) and func.__name__ not in _NAMED \
                and (_strings(args) or _strings(kwargs)):
            raise pickle.UnpicklingError(f"it gives {func.__name__} a string to parse")

    def _reduce(self) -> None:
        self.check_call(self.stack[-2], self.stack[-1], {})
        _DISPATCH[pickle.REDUCE[0]](self)

    def _newobj(self) -> None:
        self.check_call(self.stack[-2], self.stack[-1], {})
        _DISPATCH[pickle.NEWOBJ[0]](self)

    def _newobj_ex(self) -> None:
        self.check_call(self.stack[-3], self.stack[-2], self.stack[-1])
        _DISPATCH[pickle.NEWOBJ_EX[0]](self)

    def _refused(self) -> None:
        raise pickle.UnpicklingError("it uses pickle's protocol 0/1 object opcodes, which engine metadata does not")

    dispatch[pickle.REDUCE[0]] = _reduce
    dispatch[pickle.NEWOBJ[0]] = _newobj
    dispatch[pickle.NEWOBJ_EX[0]] = _newobj_ex
    dispatch[pickle.INST[0]] = _refused
    dispatch[pickle.OBJ[0]] = _refused


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
        return _Checked(data).load()
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
