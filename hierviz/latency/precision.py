"""FP32 precision, the same for every backend during a measurement, and its record.

On NVIDIA GPUs since Ampere, FP32 matmuls and convolutions may run in TF32 (10-bit mantissa),
much faster and less exact. Torch runs FP32 matmuls at "highest" precision by default but lets
cuDNN convolutions use TF32; TensorRT builds with TF32 on unless `disable_tf32`. Comparing
backends that differ here measures precision, not the backends, so `hv.measure(tf32=...)` sets
one choice for all of them: `tf32=False` (the default) is strict FP32 everywhere (torch matmul
precision "highest", cuDNN TF32 off, TensorRT `disable_tf32=True`), `tf32=True` allows TF32
everywhere. Torch's settings are restored afterwards. FP16/BF16 is measured by casting the model
and inputs before `hv.capture` (TensorRT engines compute in the graph's dtype).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch

from hierviz.errors import MeasureError
from hierviz.foundation.arguments import check_bool


def _state() -> tuple[str, bool]:
    return torch.get_float32_matmul_precision(), bool(torch.backends.cudnn.allow_tf32)


@contextlib.contextmanager
def fp32_precision(tf32: bool) -> Iterator[None]:
    """Torch's FP32 matmul and cuDNN TF32 settings for `tf32` inside the block; restored after."""
    saved = _state()
    try:
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        torch.backends.cudnn.allow_tf32 = bool(tf32)
        yield
    finally:
        torch.set_float32_matmul_precision(saved[0])
        torch.backends.cudnn.allow_tf32 = saved[1]


def precision_key() -> tuple[str, bool]:
    """Torch's current FP32 settings, part of compile-cache keys (TorchInductor's generated
    kernels depend on them)."""
    return _state()


def record(tf32: bool, dtypes: set[str], backends: set[str]) -> dict[str, Any]:
    """What precision each backend ran at, for `Measurement.precision`."""
    matmul, cudnn = _state()
    out: dict[str, Any] = {"tf32": bool(tf32), "dtypes": sorted(dtypes),
                           "torch_float32_matmul_precision": matmul, "torch_cudnn_allow_tf32": cudnn}
    if "tensorrt" in backends:
        out["tensorrt_disable_tf32"] = not tf32
    if "inductor" in backends:
        out["inductor"] = f"follows torch (float32 matmul precision {matmul!r})"
    return out


def check_tf32(tf32: Any) -> bool:
    """`tf32` when it is True or False, else a MeasureError."""
    return check_bool(tf32, "tf32", MeasureError)


__all__ = ["fp32_precision", "precision_key", "record", "check_tf32"]
