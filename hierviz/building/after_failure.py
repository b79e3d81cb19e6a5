"""What Torch-TensorRT really runs after a subgraph fails to convert or build, on each `ir`.

Read from Torch-TensorRT 2.14:
- `torch_tensorrt.compile(ir="dynamo")` converts every subgraph in `compile_module` and lets
  any exception through: the model is not compiled.
- torch.compile's backend (`dynamo/backend/backends.py`, `_pretraced_backend`) catches
  `AssertionError`, `RuntimeError` and `TypeError` from lowering, partitioning and conversion,
  and returns dynamo's graph as it was: that whole graph runs eagerly in PyTorch, unless
  `pass_through_build_failures=True`, which raises. Any other exception leaves the backend, and
  torch.compile raises `BackendCompilerFailed`.
A builder that returns no engine makes `TRTInterpreter.run` raise `RuntimeError`.
"""

from __future__ import annotations

import builtins

from hierviz.trt import BACKEND_CATCHES

# what Torch-TensorRT's torch.compile backend catches and answers by running the graph eagerly
# (the classes themselves, and `caught_by_backend(exc)`, are hierviz.trt's: capture falls back the same way)
CAUGHT_BY_BACKEND = tuple(c.__name__ for c in BACKEND_CATCHES)


def runs_instead(ir: str, exception: str, graph: str = "") -> str:
    """What Torch-TensorRT does after a subgraph's conversion or build raised `exception` (a
    class name), on `ir` ("dynamo" or "torch_compile"); `graph`: the dynamo graph's name."""
    if ir == "torch_compile":
        which = f"graph {graph}" if graph else "this graph"
        known = getattr(builtins, exception, None)  # a builtin subclass (NotImplementedError) is caught too
        if exception in CAUGHT_BY_BACKEND or (isinstance(known, type) and issubclass(known, BACKEND_CATCHES)):
            return (f"torch.compile runs the whole of {which} eagerly in PyTorch (Torch-TensorRT's backend catches "
                    f"the {exception}; pass_through_build_failures=True raises instead)")
        return (f"torch.compile raises BackendCompilerFailed: Torch-TensorRT's backend catches only "
                f"{', '.join(CAUGHT_BY_BACKEND)}, not {exception}")
    return f"torch_tensorrt.compile raises {exception}: the model is not compiled"


__all__ = ["CAUGHT_BY_BACKEND", "runs_instead"]
