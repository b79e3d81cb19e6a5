"""Exploring and comparing settings: the `hv.explore` widget, `hv.sweep` and its plots."""

from __future__ import annotations

from hierviz.explore.cache import cache_info, cached_partition, clear_cache
from hierviz.explore.plots import plot_latency, plot_subgraphs
from hierviz.explore.sweep import sweep
from hierviz.explore.widget import Explorer, explore
from hierviz.partition import diff


__all__ = ["explore", "Explorer", "sweep", "diff", "plot_latency", "plot_subgraphs",
           "cache_info", "cached_partition", "clear_cache"]
