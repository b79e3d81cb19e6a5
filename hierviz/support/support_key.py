"""A backend support mapping's key, derived from its content so that it is the same in every
process (an object's id, or the hash of a function, differs from one process to the next):
what a resumed `hv.tune(storage=...)` study compares its settings with.

A support source's content is its `to_dict()` form; a `hv.support.where(predicate)` adds the
predicate's code (module, name, bytecode, constants, the names it reads), its default values
and the values it closes over. Globals a predicate reads are named, not read.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Mapping

import torch

from hierviz.foundation.digests import json_digest

SCALARS = (type(None), bool, int, float, str)


def name_of(fn: Any) -> str:
    """A callable's module and qualified name ('torch.ops.aten.relu.default' for an op)."""
    if isinstance(fn, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return "torch.ops." + str(fn)
    return f"{getattr(fn, '__module__', None)}.{getattr(fn, '__qualname__', type(fn).__qualname__)}"


def plain(value: Any) -> Any:
    """`value` as JSON-able content with no memory address in it: containers element by
    element (sets sorted), code by its bytecode, a callable by its name, anything else by its type."""
    if isinstance(value, SCALARS):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, types.CodeType):
        return [value.co_name, value.co_code.hex(), plain(value.co_consts), list(value.co_names)]
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=repr)
    if isinstance(value, Mapping):
        return sorted(([plain(k), plain(v)] for k, v in value.items()), key=repr)
    if callable(value):
        return name_of(value)
    return f"{type(value).__module__}.{type(value).__qualname__}"


def callable_content(fn: Any) -> list:
    """A predicate as content: its name and, for a Python function, its code, default values
    and the values it closes over (for a functools.partial: its function and arguments)."""
    if isinstance(fn, functools.partial):
        return ["partial", callable_content(fn.func), plain(fn.args), plain(fn.keywords)]
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return [name_of(fn)]
    cells = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            cells.append(plain(cell.cell_contents))
        except ValueError:  # a cell not filled yet
            cells.append(None)
    return [name_of(fn), plain(code), plain(getattr(fn, "__defaults__", None)), cells]


def content_key(sources: Mapping[str, Any]) -> str:
    """A short key of a backend -> hv.Support mapping: the same for the same content in every process."""
    content = {str(name): source.content() for name, source in sources.items()}
    return json_digest(content, size=10)


__all__ = ["content_key", "callable_content", "plain", "name_of"]
