"""Latency: compile each subgraph with its backend, time the split model, check it, cache compiles.

    m = hv.measure(part, example_inputs)          # hv.Measurement
    m = measure_with(part, example_inputs, MeasureOptions(iters=20))   # the options as one checked record
    m.median_ms, m.speedup, m.per_subgraph, m.fallbacks, m.precision
    split = compile_split(part, example_inputs, "cuda")   # the compiled split module
    split.module(*inputs)

Modules, in the order of the work: `plan` (device, which compiler per subgraph, refusing what
cannot be compiled here), `compilers` (one per backend; `register_compiler` for your own),
`compiling` (each subgraph through the compile cache, with fallback), `split` (the compiled
split module: `compile_split`), `timing` (CUDA events / perf_counter_ns, statistics),
`compare` (outputs against eager), `precision` (TF32, the same for every backend), `cache`
(compiled subgraphs keyed by structure, bounded), `lift` (weights as inputs, device moves,
structural fingerprints), `result` (Measurement, SubgraphRecord), `core` (`measure`, the entry), `numerics`
(`hv.numerics`: per-subgraph error against eager, the culprit).
"""

from __future__ import annotations

from hierviz.latency.compiling.compile_cache import CompileCache, clear_cache, default_cache
from hierviz.latency.output_match import TOLERANCES, compare
from hierviz.latency.compiling.backend_compilers import (Compiler, compilers, get_compiler, register_compiler,
                                                         unregister_compiler)
from hierviz.latency.measure_call import measure, measure_with
from hierviz.latency.measure_options import MeasureOptions
from hierviz.latency.numerics import Numerics, numerics
from hierviz.latency.measurement import Measurement, MeasureWarning, SubgraphRecord
from hierviz.latency.compiling.compiled_split import CompiledSplit, compile_split
from hierviz.latency.timing import NOISY_CV, Stats, time_fn


__all__ = ["measure", "measure_with", "MeasureOptions",
           "numerics", "Numerics", "compile_split", "CompiledSplit", "Measurement", "MeasureWarning",
           "SubgraphRecord", "CompileCache", "default_cache", "clear_cache", "Compiler", "register_compiler",
           "unregister_compiler", "get_compiler", "compilers", "compare", "TOLERANCES", "Stats", "time_fn", "NOISY_CV"]
