"""hierviz: see and tune Torch-TensorRT's hierarchical adjacency partitioner.

    import hierviz as hv
    part = hv.partition(model, example_inputs, min_block_size=3)

The public names of the API, and the one place that joins the layers: it registers
Partition's conveniences (render, save, compile, build) on the partitioner's seam (partitioner/handoff.py).
Configuration, capture and partitioning load
with the package; measuring, sweeping, tuning, the explorer widget and the zoo load on first
use, and so do their heavy dependencies (pandas, ipywidgets, tqdm, graphviz, matplotlib):
`benchmarks/import_time.py` keeps `import hierviz` cheap.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any, Callable

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
from hierviz.partitioner import (MultiGraphPartition, Partition, Subgraph, check, diff, handoff, load_partition,
                                 partition)
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



# Partition's conveniences hand the partition to the layers above it, which the partitioner cannot import
# (they import it): they are installed on its seam here, each loading its layer on first use. Each loader says
# the real function's type, so mypy checks it against the slot's signature.
def _render() -> handoff.Render:
    from hierviz.drawing.views import render
    return render


def _save() -> handoff.Save:
    from hierviz.drawing.files import save
    return save


def _html() -> Callable[[Partition], str]:
    from hierviz.drawing.notebook import notebook_html
    return notebook_html


def _render_graphs() -> handoff.RenderGraphs:
    from hierviz.drawing.by_graph.frames import render_graphs
    return render_graphs


def _save_graphs() -> handoff.SaveGraphs:
    from hierviz.drawing.by_graph.graphs_export import save_graphs
    return save_graphs


def _html_graphs() -> Callable[[MultiGraphPartition], str]:
    from hierviz.drawing.by_graph.graphs_export import notebook_html_graphs
    return notebook_html_graphs


def _compile() -> handoff.Compile:
    from hierviz.latency.deploy import compiled_model
    return compiled_model


def _compile_graphs() -> handoff.CompileGraphs:
    from hierviz.latency.by_graph.compiled_graphs import compile_graphs
    return compile_graphs


def _build() -> handoff.Build:
    from hierviz.building.build_partition import build
    return build


def _build_graphs() -> handoff.BuildGraphs:
    from hierviz.building.build_partition import build_graphs
    return build_graphs


def _measure_blockers() -> handoff.MeasureBlockers:
    from hierviz.latency.whatif import measure_blockers
    return measure_blockers


_seam = handoff.seam
_seam.render, _seam.save, _seam.html = handoff.lazily(_render), handoff.lazily(_save), handoff.lazily(_html)
_seam.render_graphs, _seam.save_graphs, _seam.html_graphs = (
    handoff.lazily(_render_graphs), handoff.lazily(_save_graphs), handoff.lazily(_html_graphs))
_seam.compile, _seam.compile_graphs = handoff.lazily(_compile), handoff.lazily(_compile_graphs)
_seam.build, _seam.build_graphs = handoff.lazily(_build), handoff.lazily(_build_graphs)
_seam.measure_blockers = handoff.lazily(_measure_blockers)


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
