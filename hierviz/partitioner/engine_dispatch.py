"""The engines' dispatcher: an aten graph and a Config in, the Partition the Config's engine makes out.

hv.partition, what-ifs (blockers), `Partition.recommend()` for engines other than hierviz's, the sweep's
cache and the build's fix search all partition through `partition_graph`, so every path runs an engine
the same way. It sits above partition_result.py (it makes Partitions), so a Partition that re-partitions
imports it inside the method.
"""

from __future__ import annotations

from torch.fx import GraphModule

from hierviz.settings.config import Config
from hierviz.settings.engine_table import COMPILE_ENGINES
from hierviz.partitioner.engine.hierviz_engine import run as run_engine
from hierviz.partitioner.partition_result import Partition, from_engine_result


def partition_graph(gm: GraphModule, cfg: Config) -> Partition:
    """The partition of an aten graph with a Config (valid as every Config is): the engine
    `cfg.engine` names, run once; nothing is checked again."""
    if cfg.engine in COMPILE_ENGINES:
        from hierviz.partitioner.upstream.compile_partitioners import partition_compiled

        return partition_compiled(gm, cfg)
    if cfg.torch_executed_ops:
        from hierviz.partitioner.lowered import warn_lowered_away

        warn_lowered_away(gm, cfg)  # an op the lowering removed would force nothing, silently
    if cfg.engine == "hierviz":
        return from_engine_result(gm, cfg, run_engine(gm, cfg))
    from hierviz.partitioner.upstream.hierarchical import partition_upstream  # engine == "torch_tensorrt"

    return partition_upstream(gm, cfg)


__all__ = ["partition_graph"]
