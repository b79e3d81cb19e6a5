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

# The functions are bound here, after their subpackages are imported, so that `hv.partition`,
# `hv.measure` and `hv.explore` name the functions, not the subpackages of the same name.
from hierviz import zoo  # noqa: E402
from hierviz.explore import plot_latency, plot_subgraphs, sweep  # noqa: E402
from hierviz.measure import Measurement, measure  # noqa: E402
from hierviz.partition import Partition, Subgraph, diff, partition  # noqa: E402

from hierviz.explore.widget import Explorer, explore  # noqa: E402


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
