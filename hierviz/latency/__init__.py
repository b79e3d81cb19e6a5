"""Latency: compile each subgraph with its backend, time the split model, check it, cache compiles.

    m = hv.measure(part, example_inputs)          # hv.Measurement
    m.median_ms, m.speedup, m.per_subgraph

Pieces: `compilers` (one per backend; `register_compiler` for your own), `cache` (compiled
subgraphs keyed by structure), `timing` (CUDA events / perf_counter_ns and statistics),
`lift` (weights as inputs, device moves, structural fingerprints).
"""

from __future__ import annotations

from hierviz.latency.cache import CompileCache, clear_cache, default_cache
from hierviz.latency.compilers import Compiler, compilers, get_compiler, register_compiler, unregister_compiler
from hierviz.latency.core import TOLERANCES, compare, measure
from hierviz.latency.result import Measurement, MeasureWarning
from hierviz.latency.timing import NOISY_CV, Stats, time_fn


__all__ = ["measure", "Measurement", "MeasureWarning", "CompileCache", "default_cache", "clear_cache",
           "Compiler", "register_compiler", "unregister_compiler", "get_compiler", "compilers",
           "compare", "TOLERANCES", "Stats", "time_fn", "NOISY_CV"]
