"""Capture: turn a model into the aten graph Torch-TensorRT would partition.

The pipeline is Torch-TensorRT's own compile front half: `torch.export`, then
`pre_export_lowering`, the Torch-TensorRT decompositions, then `post_lowering`. Without
torch_tensorrt installed, torch's default decompositions are used instead.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any, Sequence

import torch
from torch.fx import GraphModule

from hierviz import trt
from hierviz.errors import CaptureError

_CACHE: "weakref.WeakKeyDictionary[Any, dict[Any, GraphModule]]" = weakref.WeakKeyDictionary()


def _as_tuple(example_inputs: Any) -> tuple:
    if example_inputs is None:
        return ()
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, list):
        return tuple(example_inputs)
    if isinstance(example_inputs, tuple):
        return example_inputs
    return (example_inputs,)


def _spec(value: Any) -> Any:
    """A hashable description of inputs: shapes, dtypes and devices, not values."""
    if isinstance(value, torch.Tensor):
        return ("T", tuple(value.shape), str(value.dtype), value.device.type)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_spec(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _spec(v)) for k, v in value.items())))
    return ("V", repr(value))


def _hint(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".lower()
    if any(k in text for k in ("data-dependent", "data dependent", "guardondatadependent",
                                "dynamic control flow", "could not guard", "could not extract specialized integer")):
        return ("the model branches on tensor values (data-dependent control flow). Rewrite the "
                "branch with torch.cond / torch.where, or move it out of forward().")
    if any(k in text for k in ("cache", "pytree", "unsupported output", "not a tensor", "dynamiccache")):
        return ("the model returns or takes a type torch.export cannot flatten (a KV cache, for "
                "example). For Hugging Face models pass use_cache=False / config.use_cache=False.")
    if any(k in text for k in ("constraint", "dynamic_shapes", "specialized", "dim(")):
        return ("the dynamic_shapes you passed conflict with the model: check the Dim ranges and "
                "which dimensions really vary.")
    if "unsupported" in text or "not implemented" in text:
        return "torch.export does not support an operation in this model; see the cause above."
    return "see the cause above; torch.export must succeed for Torch-TensorRT to compile the model."


def _is_aten_graph(gm: GraphModule) -> bool:
    for node in gm.graph.nodes:
        if node.op == "call_module" and node.target != "_guards_fn":
            return False
        if node.op == "call_function" and not isinstance(node.target, torch._ops.OpOverload):
            if getattr(node.target, "__module__", "") not in ("_operator", "operator"):
                return False
    return True


def _drop_guards(gm: GraphModule) -> GraphModule:
    """Remove the exported `_guards_fn` call so it does not become a subgraph of its own."""
    changed = False
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and str(node.target).startswith("_guards_fn") and not node.users:
            gm.graph.erase_node(node)
            changed = True
    # Torch-TensorRT's post_lowering already drops the node but leaves the submodule behind.
    called = {str(n.target) for n in gm.graph.nodes if n.op == "call_module"}
    for name, _ in list(gm.named_children()):
        if name.startswith("_guards_fn") and name not in called:
            delattr(gm, name)
            changed = True
    if changed:
        gm.recompile()
    return gm


def _export(model: torch.nn.Module, args: tuple, kwargs: dict | None, dynamic_shapes: Any) -> Any:
    try:
        return torch.export.export(model, args, kwargs=kwargs, dynamic_shapes=dynamic_shapes, strict=False)
    except Exception as exc:
        raise CaptureError(
            f"torch.export failed for {type(model).__name__}: {type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}\n"
            f"Hint: {_hint(exc)}"
        ) from exc


def _lower(ep: Any) -> GraphModule:
    """Torch-TensorRT's lowering of an ExportedProgram (torch's defaults without it)."""
    if trt.available():
        lowering = trt.lowering()
        settings = trt.default_settings()
        try:
            with trt._answer_cuda_queries():
                ep = lowering.pre_export_lowering(ep, settings)
                ep = ep.run_decompositions(lowering.get_decompositions(False))
                gm = ep.module()
                gm = lowering.post_lowering(gm, settings)
        except Exception as exc:
            raise CaptureError(
                f"Torch-TensorRT's lowering failed: {type(exc).__name__}: {exc}\n"
                "Hint: this is a Torch-TensorRT limitation for this model; try "
                "hv.capture on a smaller part of the model to find the op."
            ) from exc
    else:
        try:
            ep = ep.run_decompositions()
            gm = ep.module()
        except Exception as exc:
            raise CaptureError(f"run_decompositions failed: {type(exc).__name__}: {exc}") from exc
    return _drop_guards(gm)


def capture(model: Any, example_inputs: Any = None, *, dynamic_shapes: Any = None,
            kwargs: dict | None = None) -> GraphModule:
    """The aten-level graph Torch-TensorRT would partition for `model`.

    Accepts an `nn.Module`, an `ExportedProgram` or a `GraphModule`. The model is never
    modified. Captures are cached by model identity and input specs, so calling this again
    (e.g. to re-partition) does not re-export.
    """
    args = _as_tuple(example_inputs)
    key = (_spec(args), _spec(kwargs or {}), repr(dynamic_shapes))
    try:
        per_model = _CACHE.setdefault(model, {})
    except TypeError:
        per_model = {}
    if key in per_model:
        return per_model[key]

    if isinstance(model, torch.export.ExportedProgram):
        gm = _lower(copy.deepcopy(model))
    elif isinstance(model, GraphModule) and _is_aten_graph(model):
        gm = _drop_guards(copy.deepcopy(model))
        if args and any("val" not in n.meta for n in gm.graph.nodes if n.op == "placeholder"):
            from torch.fx.passes.fake_tensor_prop import FakeTensorProp

            FakeTensorProp(gm).propagate(*args)
    elif isinstance(model, torch.nn.Module):
        if not args and not kwargs:
            raise CaptureError("capture needs example_inputs for an nn.Module: "
                               "hv.capture(model, (torch.randn(1, 3, 224, 224),))")
        gm = _lower(_export(model, args, kwargs, dynamic_shapes))
    else:
        raise CaptureError(
            f"capture takes an nn.Module, ExportedProgram or GraphModule, not {type(model).__name__}."
        )
    per_model[key] = gm
    return gm


__all__ = ["capture"]


