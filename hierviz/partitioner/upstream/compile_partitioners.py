"""engine="fast" / "global": the partition torch_tensorrt.compile makes, as an ordinary Partition.

`torch_tensorrt.compile` never runs the hierarchical partitioner: it partitions with its
adjacency partitioner (`partitioning.fast_partition`, `use_fast_partitioner=True`, the
default), falling back to `partitioning.global_partition` when that raises
`FxNetSplitterInternalError`, or with the global one when `use_fast_partitioner=False`. This
module runs the installed Torch-TensorRT's own partitioners, with compile's rules around them
(hierviz.trt.run_compile_partitioner), on a copy of the captured graph, and reads their blocks
back into the engine's result type, with a reason for every node: supported, unsupported,
validator rejected, torch_executed_ops, demoted below min_block_size (or the whole graph left
in PyTorch by compile's early return), removed as dead code.
"""

from __future__ import annotations


from torch.fx import GraphModule

from hierviz import trt
from hierviz.settings.config import Config
from hierviz.errors import ConfigError
from hierviz.partitioner.counts import SUPPORTED_NODES
from hierviz.partitioner.engine.graph_index import GraphIndex, index_graph
from hierviz.partitioner.engine.plan import (Assignment, EngineResult, RawSubgraph, subgraph_edges, tags_for,
                                             topological_order)
from hierviz.partitioner.reasons import DEAD_CODE, FALLBACK, NOT_CALLABLE, SUPPORTED, TORCH_EXECUTED
from hierviz.partitioner.reasons import UNSUPPORTED, VALIDATOR
from hierviz.partitioner.graph_copy import copy_graph_module
from hierviz.partitioner.partition_result import Partition, from_engine_result
from hierviz.partitioner.splitter import build_split_module
from hierviz.support.sources import added_ops, tensorrt

INSTALL = 'pip install "hierviz[tensorrt]" (GPU machines) or "hierviz[tensorrt-rtx]" (anywhere, no GPU needed)'


def check_available(engine: str) -> None:
    """ConfigError saying what to install when torch_tensorrt, whose partitioner `engine` runs,
    is not available here. (Which settings fast / global take is a rule of the settings table,
    checked when the Config is made: hierviz.settings.config.)"""
    if not trt.available():
        raise ConfigError(f"engine={engine!r} runs the installed Torch-TensorRT's own partitioner, and "
                          f"torch_tensorrt is not available here ({trt.info().error}); install it: {INSTALL}.")


def partition_compiled(gm: GraphModule, config: Config) -> Partition:
    """The partition torch_tensorrt.compile makes of `gm` (`config.engine` "fast" or "global")."""
    engine = config.engine
    check_available(engine)
    index = index_graph(gm)
    work = copy_graph_module(gm)
    made = trt.run_compile_partitioner(work, fast=engine == "fast", min_block_size=config.min_block_size,
                                       torch_executed_ops=set(config.torch_executed_ops),
                                       require_full_compilation=config.require_full_compilation,
                                       extra_supported=added_ops(config.support_for("tensorrt")) or frozenset())
    result = _result(index, config, made)
    notes = []
    if made.fell_back:
        notes.append(f"the fast partitioner failed ({made.fell_back}); torch_tensorrt.compile retried with the "
                     "global partitioner, whose partition this is")
    if made.early_return is not None:
        notes.append(f"only {SUPPORTED_NODES(made.early_return)} < min_block_size {config.min_block_size}: "
                     "torch_tensorrt.compile leaves the whole graph in PyTorch")
    module = None
    if made.removed:  # the split module is built on the graph the partitioner kept
        kept = copy_graph_module(gm, lazy=True)  # only split: its own code is never needed
        kept.graph.eliminate_dead_code()
        module = build_split_module(kept, result, original=gm)
    return from_engine_result(gm, config, result, module=module, notes=tuple(notes))


def _result(index: GraphIndex, config: Config, made: trt.CompilePartition) -> EngineResult:
    n = len(index.nodes)
    sup = tensorrt(validate=True)
    backend: list[str | None] = [None] * n
    code = [NOT_CALLABLE] * n
    detail: list = [None] * n
    with sup.checking():
        for i in index.callable_indices:
            name = index.names[i]
            if name in made.removed:
                code[i] = DEAD_CODE
            elif name in made.supported:
                backend[i], code[i], detail[i] = "tensorrt", SUPPORTED, {}
            elif index.ops[i] in config.torch_executed_ops:
                code[i] = TORCH_EXECUTED
            else:
                v = sup.verdict(index.nodes[i])
                # accepted: the partitioner refused it for a reason of its own (complex dtype, ...)
                why = v.why if not v.ok else "Torch-TensorRT's partitioner does not take it (e.g. a complex dtype)"
                code[i] = VALIDATOR if v.code == VALIDATOR else UNSUPPORTED
                detail[i] = {"tensorrt": why}
    pos = index.position
    blocks = [(True, made_names) for made_names in made.acc] + [(False, names) for names in made.torch]
    if made.early_return is not None:
        blocks = [(False, [index.names[i] for i in index.callable_indices])]
    groups = [(is_acc, sorted(pos[m] for m in names if m in pos)) for is_acc, names in blocks]
    groups = [(is_acc, members) for is_acc, members in groups if members]
    subgraphs = [RawSubgraph(is_acc, "tensorrt" if is_acc else FALLBACK, members)
                 for is_acc, members in _blocks_in_order(index, groups)]
    final_acc = {i for sg in subgraphs if sg.is_acc for i in sg.nodes}
    demoted: dict[int, tuple[str, int]] = {}
    size_of: dict[str, int] = {}
    for is_acc, names in made.before_demotion:
        if is_acc:
            size_of.update(dict.fromkeys(names, len(names)))
    for i in index.callable_indices:
        if backend[i] is not None and i not in final_acc:
            demoted[i] = ("tensorrt", 0 if made.early_return is not None else size_of.get(index.names[i], 0))
    raw = [RawSubgraph(is_acc, "tensorrt" if is_acc else FALLBACK,
                       sorted(pos[m] for m in names if m in pos)) for is_acc, names in made.before_demotion]
    return EngineResult(index, Assignment(backend, code, detail), raw or subgraphs, subgraphs,
                        tags_for(subgraphs), demoted, early_return=made.early_return)


def _blocks_in_order(index: GraphIndex, groups: list[tuple[bool, list[int]]]) -> list[tuple[bool, list[int]]]:
    """The blocks in a topological order of the block graph (Kahn's, the block with the
    earliest first node first), so that the split module runs them in order."""
    groups = sorted(groups, key=lambda group: group[1][0])  # blocks are disjoint: first nodes differ
    preds, succs = subgraph_edges(len(index.nodes), [members for _, members in groups], index.users)
    order = topological_order(range(len(groups)), preds, succs)
    if len(order) != len(groups):  # pragma: no cover - upstream's blocks never form a cycle
        raise ConfigError("torch_tensorrt's partitioner returned blocks that depend on each other in a cycle")
    return [groups[k] for k in order]
