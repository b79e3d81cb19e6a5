"""hierviz: see and tune Torch-TensorRT's hierarchical adjacency partitioner.

    import hierviz as hv
    part = hv.partition(model, example_inputs, min_block_size=3)
"""

from __future__ import annotations

import importlib
from typing import Any

from hierviz import support
from hierviz.capture import capture
from hierviz.config import Config
from hierviz.errors import (
    CaptureError,
    ConfigError,
    HiervizError,
    MeasureError,
    RenderError,
    TensorRTUnavailableError,
)
from hierviz.support import Support

__version__ = "0.1.0"

# Heavier parts load on first use, so `import hierviz` stays quick.
_LAZY = {
    "partition": ("hierviz.partition", "partition"),
    "Partition": ("hierviz.partition", "Partition"),
    "Subgraph": ("hierviz.partition", "Subgraph"),
    "diff": ("hierviz.partition", "diff"),
    "measure": ("hierviz.measure", "measure"),
    "Measurement": ("hierviz.measure", "Measurement"),
    "sweep": ("hierviz.explore", "sweep"),
    "explore": ("hierviz.explore", "explore"),
    "Explorer": ("hierviz.explore", "Explorer"),
    "zoo": ("hierviz.zoo", None),
    "trt": ("hierviz.trt", None),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module_name, attr = _LAZY[name]
        module = importlib.import_module(module_name)
        value = module if attr is None else getattr(module, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hierviz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_LAZY))


__all__ = [
    "Config", "Support", "support", "capture", "HiervizError", "ConfigError", "CaptureError",
    "RenderError", "MeasureError", "TensorRTUnavailableError", *_LAZY,
]
