"""hierviz: see and tune Torch-TensorRT's hierarchical adjacency partitioner.

    import hierviz as hv
    part = hv.partition(model, example_inputs, min_block_size=3)

The public names of the API and nothing else. Configuration, capture and partitioning load
with the package; measuring, sweeping, tuning, the explorer widget and the zoo load on first
use, and so do their heavy dependencies (pandas, ipywidgets, tqdm, graphviz, matplotlib):
`benchmarks/import_time.py` keeps `import hierviz` cheap.
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
    SavedModelNotFoundError,
    TensorRTUnavailableError,
)
from hierviz.partitioner import Partition, Subgraph, diff, partition
from hierviz.provenance import source_ops
from hierviz.support import Support

__version__ = "0.1.0"

# name -> the module that defines it, imported when the name is first used.
_LAZY = {
    "measure": "hierviz.latency",
    "Measurement": "hierviz.latency",
    "numerics": "hierviz.latency",
    "Numerics": "hierviz.latency",
    "sweep": "hierviz.compare",
    "explore": "hierviz.widget",
    "Explorer": "hierviz.widget",
    "plot_latency": "hierviz.compare",
    "plot_subgraphs": "hierviz.compare",
    "tune": "hierviz.compare",
    "TuneResult": "hierviz.compare",
    "compare_engines": "hierviz.compare",
}
# submodules reachable as attributes before anything imported them (hv.drawing.to_json(p))
_LAZY_MODULES = {"zoo": "hierviz.zoo", "trt": "hierviz.trt", "drawing": "hierviz.drawing",
                 "latency": "hierviz.latency", "compare": "hierviz.compare",
                 "widget": "hierviz.widget"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _LAZY_MODULES:
        value = importlib.import_module(_LAZY_MODULES[name])
    else:
        raise AttributeError(f"module 'hierviz' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_MODULES))


__all__ = [
    "Config", "Support", "support", "capture", "HiervizError", "ConfigError", "CaptureError",
    "RenderError", "MeasureError", "TensorRTUnavailableError", "SavedModelNotFoundError", "partition",
    "Partition", "Subgraph", "diff", "measure", "Measurement", "numerics", "Numerics", "sweep", "explore",
    "Explorer", "plot_latency", "plot_subgraphs", "tune", "TuneResult", "compare_engines", "zoo", "source_ops",
]
