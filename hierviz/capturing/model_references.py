"""A capture entry's tensors that are the model's own weights, kept as references (their names in
the model) instead of their bytes, and taken from the model again when the entry is read."""

from __future__ import annotations

from typing import Any

import torch


_MODEL = "hierviz-model-tensor"  # an attrs value ("hierviz-model-tensor", name, shared): the model's tensor


def _model_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    named = [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]
    return dict(named)


def referenced(attrs: dict[str, Any], model: torch.nn.Module | None) -> dict[str, Any]:
    """The graph's tensors, those equal to one of the model's (same name, or same storage) as
    references: shared with the model when the graph shares it, as a fresh capture does."""
    if model is None:
        return attrs
    mine = _model_tensors(model)
    by_storage = {(t.data_ptr(), t.shape, t.stride(), t.dtype): name for name, t in mine.items() if t.numel()}
    out = {}
    for path, value in attrs.items():
        out[path] = value
        if not isinstance(value, torch.Tensor) or not value.numel():
            continue
        name = by_storage.get((value.data_ptr(), value.shape, value.stride(), value.dtype))
        shared = name is not None
        if name is None and path in mine:
            theirs = mine[path]
            if theirs.shape == value.shape and theirs.dtype == value.dtype and torch.equal(theirs, value):
                name = path
        if name is not None:
            out[path] = (_MODEL, name, shared, isinstance(value, torch.nn.Parameter), value.requires_grad)
    return out


def resolved(attrs: dict[str, Any], model: torch.nn.Module | None) -> dict[str, Any]:
    """The stored tensors, references taken from the model (a copy where the capture had one)."""
    refs = {p: v for p, v in attrs.items() if isinstance(v, tuple) and len(v) == 5 and v[0] == _MODEL}
    if not refs:
        return attrs
    if model is None:
        raise ValueError("the entry refers to the model's weights, and no model was given")
    mine = _model_tensors(model)
    out = dict(attrs)
    for path, (_, name, shared, parameter, grad) in refs.items():
        tensor = mine[name].detach() if not shared else mine[name]
        if not shared:
            tensor = tensor.clone()
        if parameter and not isinstance(tensor, torch.nn.Parameter):
            tensor = torch.nn.Parameter(tensor, requires_grad=grad)
        out[path] = tensor
    return out


__all__ = ["referenced", "resolved"]
