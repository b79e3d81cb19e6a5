"""Exploring and comparing settings: the `hv.explore` widget, `hv.sweep` and its plots,
`hv.tune` (tuning.py, one trial tune_trial.py, the space tune_space.py, the result tune_result.py; trials on
Ray: ray_executor.py), `hv.compare_engines` (engines.py: what torch_tensorrt.compile runs beside the
hierarchical partitions).

The widget is three parts: controls.py (the ipywidgets), controller.py (control state ->
Config -> Partition, history and caches; no ipywidgets) and panels.py (pure functions from a
Partition to panel HTML); widget.py joins them. ipywidgets and matplotlib load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from hierviz.explorer.cache import cache_info, cached_partition, clear_cache
from hierviz.explorer.sweep import sweep
from hierviz.partitioner import diff

_LAZY = {"Explorer": "hierviz.explorer.widget", "explore": "hierviz.explorer.widget",
         "plot_latency": "hierviz.explorer.plots", "plot_subgraphs": "hierviz.explorer.plots",
         "tune": "hierviz.explorer.tuning", "TuneResult": "hierviz.explorer.tuning",
         "compare_engines": "hierviz.explorer.engines"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hierviz.explorer' has no attribute {name!r}")


__all__ = ["explore", "Explorer", "sweep", "tune", "TuneResult", "compare_engines", "diff", "plot_latency", "plot_subgraphs",
           "cache_info", "cached_partition", "clear_cache"]
