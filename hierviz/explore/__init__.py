"""Exploring and comparing settings: the `hv.explore` widget, `hv.sweep` and its plots."""

from __future__ import annotations

from typing import Any

from hierviz.explore.cache import cache_info, cached_partition, clear_cache
from hierviz.explore.plots import plot_latency, plot_subgraphs
from hierviz.explore.sweep import sweep
from hierviz.partition import diff


def __getattr__(name: str) -> Any:  # the widget module imports ipywidgets: load it on first use
    if name in ("explore", "Explorer"):
        from hierviz.explore import widget

        value = getattr(widget, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hierviz.explore' has no attribute {name!r}")


__all__ = ["explore", "Explorer", "sweep", "diff", "plot_latency", "plot_subgraphs",
           "cache_info", "cached_partition", "clear_cache"]
