"""hierviz: see and tune Torch-TensorRT's hierarchical adjacency partitioner.

    import hierviz as hv
    part = hv.partition(model, example_inputs, min_block_size=3)
"""

from __future__ import annotations

import importlib
from typing import Any

from hierviz import support
from hierviz.capturing import capture
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

from hierviz import zoo  # noqa: E402
from hierviz.explorer import plot_latency, plot_subgraphs, sweep  # noqa: E402
from hierviz.latency import Measurement, measure  # noqa: E402
from hierviz.partitioner import Partition, Subgraph, diff, partition  # noqa: E402

from hierviz.explorer.widget import Explorer, explore  # noqa: E402


def __getattr__(name: str) -> Any:
    if name == "trt":
        return importlib.import_module("hierviz.trt")
    raise AttributeError(f"module 'hierviz' has no attribute {name!r}")


__all__ = [
    "Config", "Support", "support", "capture", "HiervizError", "ConfigError", "CaptureError",
    "RenderError", "MeasureError", "TensorRTUnavailableError", "partition", "Partition", "Subgraph",
    "diff", "measure", "Measurement", "sweep", "explore", "Explorer", "plot_latency", "plot_subgraphs",
    "zoo",
]
