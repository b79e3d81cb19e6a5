"""Partitioning: hv.partition, the Partition result and its per-node record, hv.diff, and
Torch-TensorRT's partitioners run on the same graph.

A worked example. Five ops in a row, a TensorRT that takes four of them and a TorchInductor
that takes the fifth; `priority` says which backend a node goes to first, `min_block_size`
the fewest nodes an accelerated subgraph may have (a smaller one runs in PyTorch):

    >>> import torch
    >>> import hierviz as hv
    >>> class Net(torch.nn.Module):
    ...     def forward(self, x):
    ...         a = torch.relu(x + 1)
    ...         b = torch.sigmoid(a) * 2
    ...         return torch.tanh(b)
    >>> support = {"tensorrt": hv.support.ops(["aten.add", "aten.relu", "aten.mul", "aten.tanh"]),
    ...            "inductor": hv.support.ops(["aten.sigmoid"])}
    >>> def split(min_block_size):
    ...     part = hv.partition(Net(), (torch.randn(2, 3),), priority=("tensorrt", "inductor"),
    ...                         support=support, min_block_size=min_block_size)
    ...     for s in part.subgraphs:
    ...         print(s.tag, s.nodes)
    >>> split(min_block_size=1)
    _run_on_acc_tensorrt_0 ('add', 'relu')
    _run_on_acc_inductor_1 ('sigmoid',)
    _run_on_acc_tensorrt_2 ('mul', 'tanh')
    >>> split(min_block_size=2)  # sigmoid's block of one is too small: it runs in PyTorch
    _run_on_acc_tensorrt_0 ('add', 'relu')
    _run_on_gpu_1 ('sigmoid',)
    _run_on_acc_tensorrt_2 ('mul', 'tanh')
    >>> split(min_block_size=3)  # every block is too small: the whole graph runs in PyTorch
    _run_on_gpu_0 ('add', 'relu', 'sigmoid', 'mul', 'tanh')

`part.reason_of("sigmoid")` says why a node runs where it runs ("demoted to PyTorch: its
inductor subgraph had 1 node(s) < min_block_size 2").

Modules: partition_result (Partition: the questions asked of an engine's result), subgraph
(Subgraph), record (the per-node record) built by record_building, reason_texts (a node's
reason text, built on demand), reasons (the names everything downstream shares: reason codes
and texts, FALLBACK, GRAPH, tags), report (the dryrun-style text, ops(), summary()), counts
(each count defined once, with its words), check (hv.check), lowered (torch_executed_ops
entries that match no node), partition_diff (hv.diff), splitter and split_module (the split
GraphModule), graph_copy (a graph copied for the passes that write to it). Packages: engine
(hierviz's engine: graph_index, the integer-indexed graph every engine reads; plan, the result
types every engine builds; support_verdicts; its passes/ run in order by hierviz_engine),
upstream (engine="torch_tensorrt", "fast", "global": Torch-TensorRT's partitioners, and what
torch_tensorrt.compile runs today), blockers (what keeps nodes out of the accelerated
backends), by_graph (the graph-by-graph MultiGraphPartition), saved (saved partitions).
The packages above never import engine: they ask partition().
"""

from __future__ import annotations

from typing import Any, Mapping, cast

from torch.fx import GraphModule

from hierviz.capturing.aten_capture import capture, check_ir, is_aten_graph
from hierviz.capturing.by_graph.dynamo_capture import DynamoCapture
from hierviz.settings.config import Config
from hierviz.settings.engine_table import COMPILE_ENGINES, ENGINES, parse_engine
from hierviz.errors import ConfigError, SavedPartitionError, checked_arguments
from hierviz.capturing.inputs import check_capture_extras
from hierviz.capturing.target_device import DEFAULT_TARGET, check_target_device
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
    NOTHING_TO_PARTITION,
    REASON_CODES,
    REASONS,
    SUPPORTED,
    TORCH_EXECUTED,
    UNSUPPORTED,
    VALIDATOR,
    parse_tag,
)
from hierviz.partitioner.record import NODE_COLUMNS, NodeRecord, NodeTable, TensorSpec, tensor_spec
from hierviz.partitioner.partition_diff import diff
from hierviz.partitioner.partition_result import Partition
from hierviz.partitioner.engine_dispatch import partition_graph
from hierviz.partitioner.subgraph import Subgraph
from hierviz.partitioner.saved.saved_partition import SavedPartition
from hierviz.partitioner.saved.load import load_partition
from hierviz.partitioner.check import check
from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition, partition_graphs, runs_by_graph


def graph_of(model_or_graph: Any, example_inputs: Any = None, *, dynamic_shapes: Any = None,
             kwargs: dict | None = None, target_device: str = DEFAULT_TARGET) -> GraphModule:
    """The graph to partition: an aten-level GraphModule as given; a model, an ExportedProgram
    or any other GraphModule (symbolic_trace, ExportedProgram.module()) captured first, with
    `dynamic_shapes`, `kwargs` and `target_device` passed to hv.capture."""
    captured = isinstance(model_or_graph, Partition) or (
        isinstance(model_or_graph, GraphModule) and is_aten_graph(model_or_graph))
    if captured and (dynamic_shapes is not None or kwargs is not None):
        raise ConfigError("dynamic_shapes / kwargs apply when capturing a model; this graph is already captured: "
                          "pass them to hv.capture(model, inputs, dynamic_shapes=..., kwargs=...) instead.")
    if isinstance(model_or_graph, Partition):
        return model_or_graph.graph
    if captured:
        return model_or_graph
    # ir="dynamo" (capture's default) captures one GraphModule; only ir="torch_compile" gives a DynamoCapture
    if dynamic_shapes is None and kwargs is None:
        return cast(GraphModule, capture(model_or_graph, example_inputs, target_device=target_device))
    return cast(GraphModule, capture(model_or_graph, example_inputs, dynamic_shapes=dynamic_shapes, kwargs=kwargs,
                                     target_device=target_device))


def make_config(config: Config | Mapping[str, Any] | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """A Config from a Config (valid as it is), a dict or other mapping (Config.from_dict) or None (the
    defaults), with `overrides` (Config fields, each checked by its row) applied: how
    hv.partition (and what calls it) reads its config argument."""
    if config is None:
        config = Config()
    elif isinstance(config, Mapping):  # hv.tune(base=) and hv.sweep's grid base take any mapping
        config = Config.from_dict(config)
    elif not isinstance(config, Config):
        raise ConfigError(f"config must be a hv.Config or a dict, not {type(config).__name__}")
    return config.replace(**overrides) if overrides else config


@checked_arguments
def partition(model_or_graph: Any, example_inputs: Any = None, config: Config | dict | None = None,
              *, engine: str | None = None, dynamic_shapes: Any = None, kwargs: dict | None = None,
              ir: str = "dynamo", target_device: str = DEFAULT_TARGET, **overrides: Any
              ) -> Partition | MultiGraphPartition:
    """Partition a model (captured first) or an aten GraphModule with `config`.

    `overrides` are Config fields: `hv.partition(gm, min_block_size=3)`; `dynamic_shapes`,
    `kwargs` and `target_device` go to hv.capture when a model is captured ("cuda", the default:
    lowered as Torch-TensorRT lowers it on a CUDA GPU, on any machine; "cpu": as on a CPU; the
    report says which). The input is never
    modified and the result is the same in every process. `engine` (a Config field, given
    here it overrides the config's; default "hierviz") = "torch_tensorrt" (or "hierarchical")
    runs upstream's hierarchical partitioner on a copy instead, for comparison;
    `engine="fast"` / `"global"` the partitioners torch_tensorrt.compile runs (fast is its
    default), with compile's rules, on a copy.

    `ir="torch_compile"`: what torch.compile(model, backend="torch_tensorrt") runs, graph by
    graph: a MultiGraphPartition (hierviz.partitioner.by_graph.multi_graph) of every graph dynamo
    captures (hv.capture(..., ir="torch_compile")); a DynamoCapture or MultiGraphPartition given
    instead of the model is re-partitioned without capturing again.

    A Partition (or MultiGraphPartition) given as the model is re-partitioned from its own
    config: `hv.partition(part, torch_executed_ops=builds.fix)` keeps part's min_block_size.
    """
    check_ir(ir)
    check_capture_extras(dynamic_shapes, kwargs)
    check_target_device(target_device)
    if isinstance(example_inputs, Config):
        if config is not None:
            raise ConfigError("two configs given: pass example inputs second and the Config as config=...")
        example_inputs, config = None, example_inputs  # hv.partition(gm, cfg)
    if config is None and isinstance(model_or_graph, (Partition, MultiGraphPartition)):
        config = model_or_graph.config  # hv.partition(part, **overrides) changes only what it overrides
    cfg = make_config(config, overrides if engine is None else {**overrides, "engine": engine})
    if cfg.engine in COMPILE_ENGINES:
        from hierviz.partitioner.upstream.compile_partitioners import check_available

        check_available(cfg.engine)  # before capturing: a missing torch_tensorrt fails at once
    if runs_by_graph(model_or_graph, ir):
        return _partition_by_graph(model_or_graph, example_inputs, cfg, dynamic_shapes, kwargs, target_device)
    gm = graph_of(model_or_graph, example_inputs, dynamic_shapes=dynamic_shapes, kwargs=kwargs,
                  target_device=target_device)
    return partition_graph(gm, cfg)


def _partition_by_graph(model: Any, example_inputs: Any, cfg: Config, dynamic_shapes: Any,
                        kwargs: dict | None, target_device: str = DEFAULT_TARGET) -> MultiGraphPartition:
    """hv.partition(..., ir="torch_compile"): the model captured graph by graph (or a capture
    given), each graph partitioned with `cfg`."""
    if isinstance(model, MultiGraphPartition):
        if not isinstance(model.capture, DynamoCapture):  # loaded from a file: the graphs are not there
            raise SavedPartitionError(f"re-partitioning needs the model's graphs, and a partition loaded from "
                                      f"{str(getattr(model, 'saved_from', 'a file'))!r} has none: "
                                      "hv.partition(model, inputs, config, ir='torch_compile').")
        model = model.capture
    if not isinstance(model, DynamoCapture):
        if dynamic_shapes is not None:
            raise ConfigError("ir='torch_compile' captures with dynamic=False, as torch_tensorrt.compile("
                              "ir='torch_compile') does: drop dynamic_shapes, or use ir='dynamo'.")
        model = capture(model, example_inputs, kwargs=kwargs, ir="torch_compile", target_device=target_device)
    return partition_graphs(model, cfg)


__all__ = ["partition", "Partition", "Subgraph", "MultiGraphPartition", "partition_graphs", "TensorSpec",
           "runs_by_graph", "tensor_spec", "NodeRecord", "NodeTable", "NODE_COLUMNS", "REASON_CODES",
           "FALLBACK_REASONS", "FALLBACK",
           "GRAPH", "parse_tag", "diff", "graph_of", "make_config", "partition_graph", "load_partition",
           "SavedPartition", "check", "ENGINES", "parse_engine", "CALLABLE_OPS", "SUPPORTED", "FOLLOWS_PRODUCER",
           "TORCH_EXECUTED", "UNSUPPORTED", "VALIDATOR", "DEMOTED", "DEMOTED_NEXT", "NOT_CALLABLE", "DEAD_CODE",
           "REASONS", "NOTHING_TO_PARTITION"]
