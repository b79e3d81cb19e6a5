"""Every TensorRT engine of a partition converted and built on this machine (`part.build()`).

    build_partition.py  Partition.build / MultiGraphPartition.build: run, convert, build, fix
    builds.py          hv.Builds, what they found (.df, .ok, the words)
    build_row.py       hv.BuildRow, one engine's build (a row of Builds.df)
    graph_run.py       the lowered graph run once in PyTorch, node by node only where it fails (stage "run")
    subgraph_builds.py each subgraph built once, through the engine store
    build_keys.py      what makes two builds the same engine: content, profile, settings, versions
    engine_store.py    built engines on disk under those keys, bounded and checked on read
    after_failure.py   what Torch-TensorRT really runs after a failure, per ir
    engine_fix.py      the fix: ops moved to PyTorch or a setting Torch-TensorRT names, shown to build
    fix_search.py      its candidates, each built once, and which fix is preferred
    fix_trials.py      the builds it spends (a candidate's engines, a smallest failing part)
    fix_cost.py        what a fix costs: ops moved out of TensorRT, accelerated ops, subgraphs
    named_settings.py  the setting a Torch-TensorRT error names as its remedy (truncate_double)
    frozen_random.py   the random ops an engine evaluates once, at build (their values frozen)
    reduction.py       the smallest part of a failed subgraph that fails the same way
    repro.py           hv.Repro: that part, saved as a standalone repro (repro_files.py; its inputs
                       and their Dims: repro_shapes.py)
"""

from __future__ import annotations

from hierviz.building.build_row import BuildRow
from hierviz.building.builds import Builds
from hierviz.building.repro import Repro

__all__ = ["BuildRow", "Builds", "Repro"]
