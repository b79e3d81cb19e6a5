"""Exploring and comparing settings: the `hv.explore` widget, `hv.sweep` and its plots."""

from __future__ import annotations

from hierviz.explorer.cache import cache_info, cached_partition, clear_cache
from hierviz.explorer.plots import plot_latency, plot_subgraphs
from hierviz.explorer.sweep import sweep
from hierviz.explorer.widget import Explorer, explore
from hierviz.partitioner import diff


__all__ = ["explore", "Explorer", "sweep", "diff", "plot_latency", "plot_subgraphs",
           "cache_info", "cached_partition", "clear_cache"]
