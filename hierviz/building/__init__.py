"""Every TensorRT engine of a partition converted and built on this machine (`part.build()`).

    build_partition.py  Partition.build / MultiGraphPartition.build: run, convert, build, fix
    builds.py          hv.Builds, what they found (.df, .ok, the words)
    graph_run.py       the lowered graph run once in PyTorch, node by node (stage "run")
    subgraph_builds.py each subgraph built once, through the engine store
    build_keys.py      what makes two builds the same engine: content, profile, settings, versions
    engine_store.py    built engines on disk under those keys, bounded and checked on read
    after_failure.py   what Torch-TensorRT really runs after a failure, per ir
    engine_fix.py      ops moved to PyTorch until every engine builds, shown to build
"""

from __future__ import annotations

from hierviz.building.builds import Builds

__all__ = ["Builds"]
