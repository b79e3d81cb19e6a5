"""Torch-TensorRT's lowering of one dynamo graph, as its torch.compile backend runs it.

`torch.compile(model, backend="torch_tensorrt")` hands each FX graph dynamo captures to
`dynamo/backend/backends.py:_pretraced_backend`, whose front half this runs with
Torch-TensorRT's own functions: `fold_get_attr_item_calls`; then, under the graph's
FakeTensorMode, `repair_input_aliasing`, `remove_detach` and `_cast_bool_sdpa_attn_masks`;
`aot_export_joint_simple(trace_joint=False, decompositions=get_decompositions(...))`;
`remove_sym_nodes`; `post_lowering`. What follows in upstream (`compile_module`, the
partitioner) is hierviz's partition of the result. Without a GPU the decompositions that
allocate on upstream's default device allocate on the CPU (`lowering_device`), so a CPU capture
never meets a `cuda:0` FakeTensor.
"""

from __future__ import annotations

import unittest.mock
from typing import Any, Sequence, cast

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from hierviz.errors import CaptureError
from hierviz.trt.loading import default_settings, lowering_device, require


# what `_pretraced_backend` catches around its lowering, partitioning and conversion (its
# `except (AssertionError, RuntimeError, TypeError)`): that graph is returned as dynamo gave it and
# runs eagerly, unless pass_through_build_failures=True; anything else leaves the backend, and
# torch.compile raises BackendCompilerFailed
BACKEND_CATCHES: tuple[type[BaseException], ...] = (AssertionError, RuntimeError, TypeError)


def caught_by_backend(exc: BaseException) -> bool:
    """Whether torch.compile's torch_tensorrt backend catches `exc` and runs its graph eagerly
    (subclasses too, as an `except` clause matches them: NotImplementedError is a RuntimeError)."""
    return isinstance(exc, BACKEND_CATCHES)


def dynamo_settings() -> Any:
    """The CompilationSettings torch.compile's backend lowers with when given no options
    (`parse_dynamo_kwargs`: the defaults, require_full_compilation forced off)."""
    return default_settings(require_full_compilation=False)


def fake_mode_of(sample_inputs: Sequence[Any]) -> FakeTensorMode:
    """The FakeTensorMode of dynamo's example inputs (a backend is given FakeTensors)."""
    from torch._dynamo.utils import detect_fake_mode

    fake_mode = detect_fake_mode(sample_inputs)
    if fake_mode is None:
        raise CaptureError("a dynamo graph's example inputs hold no FakeTensor; pass the inputs "
                           "torch.compile gave the backend")
    return fake_mode


def lower_dynamo_graph(gm: torch.fx.GraphModule, sample_inputs: Sequence[Any],
                       settings: Any = None) -> torch.fx.GraphModule:
    """The aten graph `_pretraced_backend` partitions for dynamo's graph `gm` (changed in place:
    pass a copy) and its example inputs (dynamo's FakeTensors)."""
    require()
    from torch._functorch.aot_autograd import aot_export_joint_simple
    from torch_tensorrt.dynamo.backend.backends import _cast_bool_sdpa_attn_masks
    from torch_tensorrt.dynamo.lowering import (
        get_decompositions,
        post_lowering,
        remove_detach,
        remove_sym_nodes,
        repair_input_aliasing,
    )
    from torch_tensorrt.dynamo.lowering.passes.fold_get_attr_item_calls import fold_get_attr_item_calls

    settings = settings if settings is not None else dynamo_settings()
    fake_mode = fake_mode_of(sample_inputs)
    with lowering_device():
        gm = fold_get_attr_item_calls(gm, sample_inputs)
        with unittest.mock.patch.object(fake_mode, "allow_non_fake_inputs", True), fake_mode:
            repair_input_aliasing(gm, settings)
            remove_detach(gm, settings)
            _cast_bool_sdpa_attn_masks(gm)
            # torch annotates `args` a tuple and the result a Callable: it flattens any sequence of
            # inputs and returns the traced GraphModule
            gm = cast(torch.fx.GraphModule, aot_export_joint_simple(
                gm, sample_inputs, trace_joint=False,  # type: ignore[arg-type]  # any flat sequence
                decompositions=get_decompositions(settings.enable_experimental_decompositions,
                                                  settings.decompose_attention,
                                                  settings.use_distributed_mode_trace,
                                                  use_fp32_acc=settings.use_fp32_acc)))
            remove_sym_nodes(gm, sample_inputs, settings)
            gm = post_lowering(gm, settings)
    return gm


__all__ = ["BACKEND_CATCHES", "caught_by_backend", "dynamo_settings", "fake_mode_of", "lower_dynamo_graph"]
