"""Partitioning: hv.partition, the Partition result and its per-node record, hv.diff and
the upstream adapter.

Modules: graph_index (the integer-indexed graph every engine reads), plan (the result types
every engine builds: Assignment, RawSubgraph, EngineResult), engine (hierviz's engine: the
passes/ package run in order), result (Partition, Subgraph: the per-node record and questions
built from an engine's result), record (the per-node record), reasons (the names everything
downstream shares: reason codes and texts, FALLBACK, GRAPH, tags), report (the dryrun-style
text, ops(), summary(), hv.diff), split (the split GraphModule), upstream
(engine="torch_tensorrt"), compiled (engine="fast" / "global": torch_tensorrt.compile's
partitioners). Downstream packages import from here, never from graph_index, plan, engine or
passes.
"""

from __future__ import annotations

from typing import Any

from torch.fx import GraphModule

from hierviz.capturing import capture, is_aten_graph
from hierviz.config import Config
from hierviz.errors import ConfigError, checked_arguments
from hierviz.partitioner.engine import run as run_engine  # `engine` is partition()'s argument
from hierviz.partitioner.reasons import (
    CALLABLE_OPS,
    DEAD_CODE,
    DEMOTED,
    DEMOTED_NEXT,
    FALLBACK,
    FALLBACK_REASONS,
    FOLLOWS_PRODUCER,
    GRAPH,
    NOT_CALLABLE,
    REASON_CODES,
    REASONS,
    SUPPORTED,
    TORCH_EXECUTED,
    UNSUPPORTED,
    VALIDATOR,
    parse_tag,
)
from hierviz.partitioner.record import NODE_COLUMNS, NodeRecord, NodeTable, TensorSpec, tensor_spec
from hierviz.partitioner.report import diff
from hierviz.partitioner.result import Partition, Subgraph
from hierviz.partitioner.saved import SavedPartition, load_partition
from hierviz.partitioner.check import check

# engine= values: hierviz's hierarchical partitioner; upstream's hierarchical one ("hierarchical"
# is another name for it); what torch_tensorrt.compile runs ("fast", its default, and "global").
ENGINES = ("hierviz", "torch_tensorrt", "hierarchical", "fast", "global")
ENGINE_ALIASES = {"hierarchical": "torch_tensorrt"}


def parse_engine(engine: object) -> str:
    """The engine name partition() runs ('hierarchical' -> 'torch_tensorrt'); ConfigError
    naming the engines otherwise."""
    if isinstance(engine, str) and engine.strip().lower() in ENGINES:
        name = engine.strip().lower()
        return ENGINE_ALIASES.get(name, name)
    import difflib

    close = difflib.get_close_matches(str(engine).lower(), ENGINES, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}{hint}: 'fast' is what "
                      "torch_tensorrt.compile partitions with by default, 'global' its use_fast_partitioner=False, "
                      "'torch_tensorrt'/'hierarchical' upstream's hierarchical partitioner, 'hierviz' hierviz's own.")


def graph_of(model_or_graph: Any, example_inputs: Any = None, *, dynamic_shapes: Any = None,
             kwargs: dict | None = None) -> GraphModule:
    """The graph to partition: an aten-level GraphModule as given; a model, an ExportedProgram
    or any other GraphModule (symbolic_trace, ExportedProgram.module()) captured first, with
    `dynamic_shapes` and `kwargs` passed to hv.capture."""
    captured = isinstance(model_or_graph, Partition) or (
        isinstance(model_or_graph, GraphModule) and is_aten_graph(model_or_graph))
    if captured and (dynamic_shapes is not None or kwargs is not None):
        raise ConfigError("dynamic_shapes / kwargs apply when capturing a model; this graph is already captured: "
                          "pass them to hv.capture(model, inputs, dynamic_shapes=..., kwargs=...) instead.")
    if isinstance(model_or_graph, Partition):
        return model_or_graph.graph
    if captured:
        return model_or_graph
    if dynamic_shapes is None and kwargs is None:
        return capture(model_or_graph, example_inputs)
    return capture(model_or_graph, example_inputs, dynamic_shapes=dynamic_shapes, kwargs=kwargs)


def make_config(config: Config | dict | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """A Config from a Config, a dict (Config.from_dict) or None (the defaults), with
    `overrides` (Config fields) applied: how hv.partition (and what calls it) reads its config
    argument, through Config.from_dict and Config.replace (hierviz.config parses every field)."""
    if config is None:
        config = Config()
    elif isinstance(config, dict):
        config = Config.from_dict(config)
    elif not isinstance(config, Config):
        raise ConfigError(f"config must be a hv.Config or a dict, not {type(config).__name__}")
    return config.replace(**overrides) if overrides else config


@checked_arguments
def partition(model_or_graph: Any, example_inputs: Any = None, config: Config | dict | None = None,
              *, engine: str = "hierviz", dynamic_shapes: Any = None, kwargs: dict | None = None,
              **overrides: Any) -> Partition:
    """Partition a model (captured first) or an aten GraphModule with `config`.

    `overrides` are Config fields: `hv.partition(gm, min_block_size=3)`; `dynamic_shapes` and
    `kwargs` go to hv.capture when a model is captured. The input is never
    modified and the result is the same in every process. `engine="torch_tensorrt"` (or
    "hierarchical") runs upstream's hierarchical partitioner on a copy instead, for comparison;
    `engine="fast"` / `"global"` the partitioners torch_tensorrt.compile runs (fast is its
    default), with compile's rules, on a copy.
    """
    if isinstance(example_inputs, Config):
        if config is not None:
            raise ConfigError("two configs given: pass example inputs second and the Config as config=...")
        example_inputs, config = None, example_inputs  # hv.partition(gm, cfg)
    cfg = make_config(config, overrides)
    engine = parse_engine(engine)
    if engine in ("fast", "global"):
        from hierviz.partitioner.compiled import check_config, partition_compiled

        check_config(cfg, engine)  # before capturing: a wrong setting fails at once
        gm = graph_of(model_or_graph, example_inputs, dynamic_shapes=dynamic_shapes, kwargs=kwargs)
        return partition_compiled(gm, cfg, engine)
    gm = graph_of(model_or_graph, example_inputs, dynamic_shapes=dynamic_shapes, kwargs=kwargs)
    if cfg.torch_executed_ops:
        from hierviz.partitioner.lowered import warn_lowered_away

        warn_lowered_away(gm, cfg)  # an op the lowering removed would force nothing, silently
    if engine == "hierviz":
        return Partition(gm, cfg, run_engine(gm, cfg))
    from hierviz.partitioner.upstream import partition_upstream  # engine == "torch_tensorrt"

    return partition_upstream(gm, cfg)


__all__ = ["partition", "Partition", "Subgraph", "TensorSpec", "tensor_spec", "NodeRecord", "NodeTable",
           "NODE_COLUMNS", "REASON_CODES", "FALLBACK_REASONS", "FALLBACK", "GRAPH", "parse_tag", "diff",
           "graph_of", "make_config", "load_partition", "SavedPartition", "check", "ENGINES", "parse_engine", "CALLABLE_OPS", "SUPPORTED", "FOLLOWS_PRODUCER",
           "TORCH_EXECUTED", "UNSUPPORTED", "VALIDATOR", "DEMOTED", "DEMOTED_NEXT", "NOT_CALLABLE", "DEAD_CODE", "REASONS"]
