"""hierviz: see and tune Torch-TensorRT's hierarchical adjacency partitioner.

    import hierviz as hv
    part = hv.partition(model, example_inputs, min_block_size=3)

The public names of the API. Configuration, capture and partitioning load
with the package; measuring, sweeping, tuning, the explorer widget and the zoo load on first
use, and so do their heavy dependencies (pandas, ipywidgets, tqdm, graphviz, matplotlib):
`benchmarks/import_time.py` keeps `import hierviz` cheap.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from hierviz.support import sources as support
from hierviz.capturing.aten_capture import CaptureWarning, capture
from hierviz.settings.config import Config
from hierviz.errors import (
    BuildError,
    CaptureError,
    ConfigError,
    ConfigWarning,
    HiervizError,
    MeasureError,
    PartitionCheckError,
    RenderError,
    SavedModelNotFoundError,
    SavedPartitionError,
    TensorRTUnavailableError,
)
from hierviz.capturing.by_graph.dynamo_capture import DynamoCapture
from hierviz.capturing.by_graph.graph_break import GraphBreak
from hierviz.partitioner import MultiGraphPartition, Partition, Subgraph, check, diff, load_partition, partition
from hierviz.capturing.provenance import source_ops
from hierviz.support.support_base import Support
from hierviz.version import __version__ as __version__

# hierviz logs what its boundaries contain (a widget callback, a background job, a compiler
# plugin) with the traceback; a library adds no handler of its own, so nothing reaches stderr
# unless the user configures logging.
logging.getLogger("hierviz").addHandler(logging.NullHandler())

# name -> the module that defines it, imported when the name is first used.
_LAZY = {
    "measure": "hierviz.latency",
    "Measurement": "hierviz.latency",
    "MeasureWarning": "hierviz.latency.measurement",
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
    "Builds": "hierviz.building",
    "BuildRow": "hierviz.building",
    "Repro": "hierviz.building",
}
# submodules reachable as attributes before anything imported them (hv.drawing.to_json(p))
_LAZY_MODULES = {"zoo": "hierviz.zoo", "trt": "hierviz.trt", "drawing": "hierviz.drawing",
                 "latency": "hierviz.latency", "compare": "hierviz.compare",
                 "widget": "hierviz.widget", "building": "hierviz.building"}


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
    "RenderError", "MeasureError", "BuildError", "TensorRTUnavailableError", "SavedModelNotFoundError", "partition",
    "Partition", "Subgraph", "diff", "measure", "Measurement", "numerics", "Numerics", "sweep", "explore",
    "Explorer", "plot_latency", "plot_subgraphs", "tune", "TuneResult", "compare_engines", "zoo", "source_ops",
    "ConfigWarning", "CaptureWarning", "MeasureWarning",
    "check", "load_partition", "PartitionCheckError", "SavedPartitionError", "Builds", "BuildRow", "Repro",
    "MultiGraphPartition", "DynamoCapture", "GraphBreak",
]
