"""Comparing and searching settings: `hv.sweep` (sweep.py, one row rows.py, its grid check grid.py, its table
columns columns.py, its plots plots.py), `hv.tune` (tuning.py, measuring its trials tune_trial.py, the default
space tune_space.py, the search as Optuna sees it optuna_space.py, the result tune_result.py, its arguments'
check tune_options.py, its verdict tune_verdict.py),
`hv.compare_engines` (engine_comparison.py: what torch_tensorrt.compile runs beside the hierarchical partitions),
the Ray executor (ray_executor.py) and the bounded partition cache they share (partition_cache.py). pandas and
matplotlib load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from hierviz.compare.partition_cache import cache_info, cached_partition, clear_cache
from hierviz.compare.sweep import sweep


_LAZY = {"plot_latency": "hierviz.compare.plots", "plot_subgraphs": "hierviz.compare.plots",
         "tune": "hierviz.compare.tuning", "TuneResult": "hierviz.compare.tuning",
         "compare_engines": "hierviz.compare.engine_comparison"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hierviz.compare' has no attribute {name!r}")


__all__ = ["sweep", "tune", "TuneResult", "compare_engines", "plot_latency", "plot_subgraphs",
           "cache_info", "cached_partition", "clear_cache"]
