"""engine="torch_tensorrt": run upstream's hierarchical partitioner on a copy of the graph and
wrap its result in the same Partition type, so that the two can be compared.

Reason codes follow what upstream did: a getitem takes the backend of the callable node
before it in graph order (upstream's NON_COMPUTE_NODES rule; its "torch.ops.aten.view" entry
never matches a view's qualified name, so views are checked like any other op); demoted
nodes carry the size of upstream's own subgraph before its small-block pass; nodes its
dead-code elimination removed are in no subgraph (code `dead_code`). Upstream checks op
names only, so validated TensorRT support is applied as `tensorrt(validate=False)` and the
Partition's config says so."""

from __future__ import annotations

from torch.fx import GraphModule

from hierviz import trt
from hierviz.settings.config import Config, derive
from hierviz.support.support_map import SupportMap
from hierviz.errors import ConfigError, HiervizError
from hierviz.partitioner.engine.graph_index import GraphIndex, index_graph
from hierviz.partitioner.engine.plan import Assignment, EngineResult, RawSubgraph
from hierviz.partitioner.reasons import DEAD_CODE, FALLBACK, FOLLOWS_PRODUCER, NOT_CALLABLE, SUPPORTED
from hierviz.partitioner.reasons import TORCH_EXECUTED, UNSUPPORTED, parse_tag, tag_number
from hierviz.partitioner.graph_copy import copy_graph_module
from hierviz.partitioner.partition_result import Partition, from_engine_result
from hierviz.partitioner.splitter import with_input_check
from hierviz.support import sources as support_mod
from hierviz.support.composed import ComposedSupport
from hierviz.support.op_sets import OpSetSupport
from hierviz.support.tensorrt_support import TensorRTSupport

UPSTREAM_NON_COMPUTE = "_operator.getitem"  # the only NON_COMPUTE_NODES entry that matches a node


def names_only(config: Config) -> Config:
    """`config` as upstream's hierarchical partitioner applies it: it checks op names only, so
    validated TensorRT support (the default) becomes `tensorrt(validate=False)`."""
    changed = {b: support_mod.tensorrt(validate=False) for b in config.priority
               if isinstance(sup := config.support_for(b), TensorRTSupport) and sup.per_node}
    if not changed:
        return config
    return derive(config, {"support": SupportMap({**(config.support or {}), **changed})}, together=False)


def by_name(sup: object) -> bool:
    """Whether upstream can apply `sup` by op names: an op set (TensorRT's registry checked by
    name, as upstream does), or chain / any_chain of those."""
    if isinstance(sup, ComposedSupport):
        return all(by_name(part) for part in sup.parts)
    return isinstance(sup, TensorRTSupport) or (isinstance(sup, OpSetSupport) and not sup.per_node)


def support_map(config: Config, index: GraphIndex) -> dict[str, set[str]]:
    """Upstream's backend_support_map: for each backend, the graph's ops its support takes."""
    result = {}
    ops = {index.ops[i] for i in index.callable_indices}
    for b in config.priority:
        sup = config.backend_support(b)
        if not by_name(sup):
            raise ConfigError(f"engine='torch_tensorrt' understands only op-set support; "
                              f"{b!r} uses {sup!r}. Use engine='hierviz' for where() support.")
        result[b] = {name for name in ops if sup.accepts_name(name)}
    return result


def partition_upstream(gm: GraphModule, config: Config) -> Partition:
    config = names_only(config)
    index = index_graph(gm)
    work = copy_graph_module(gm)
    before: list[tuple[bool, str, list[str]]] = []
    try:
        split, _ = trt.run_upstream_partitioner(
            work,
            before_demotion=before,
            min_block_size=config.min_block_size,
            torch_executed_ops=set(config.torch_executed_ops),
            backend_support_map=support_map(config, index),
            backend_priority=list(config.priority),
            require_full_compilation=config.require_full_compilation,
            skip_fusion=config.skip_fusion,
        )
    except HiervizError:
        raise
    except AssertionError as exc:
        raise ConfigError(f"upstream partitioner: {exc}") from exc
    return from_engine_result(gm, config, _result_from_tags(index, work, config, before),
                              module=with_input_check(split, gm))


def _result_from_tags(index: GraphIndex, work: GraphModule, config: Config,
                      before: list[tuple[bool, str, list[str]]]) -> EngineResult:
    copied = {n.name: n for n in work.graph.nodes}
    n = len(index.nodes)
    backend: list[str | None] = [None] * n
    code = [NOT_CALLABLE] * n
    detail: list = [None] * n
    tag_nodes: dict[str, list[int]] = {}
    previous = None  # the callable node upstream's getitem rule follows
    for i in index.callable_indices:
        node = copied.get(index.names[i])
        if node is None:  # removed by upstream's eliminate_dead_code
            code[i] = DEAD_CODE
            continue
        b = getattr(node, "backend", "None")
        backend[i] = None if b == "None" else b
        if index.ops[i] == UPSTREAM_NON_COMPUTE:
            code[i] = FOLLOWS_PRODUCER
            detail[i] = previous if previous is not None else i
        else:
            previous = i
            if index.ops[i] in config.torch_executed_ops:
                code[i] = TORCH_EXECUTED
            else:
                code[i] = SUPPORTED if backend[i] else UNSUPPORTED
                detail[i] = {}
        tag_nodes.setdefault(node.tag, []).append(i)
    order = sorted(tag_nodes, key=tag_number)
    subgraphs = []
    for tag in order:
        is_acc, b = parse_tag(tag)
        subgraphs.append(RawSubgraph(is_acc, b, tag_nodes[tag]))
    # a node is demoted when upstream's traversal put it in an accelerated subgraph and its
    # small-block pass moved it to PyTorch
    was_in: dict[str, tuple[str, int]] = {}
    for is_acc, b, names in before:
        if is_acc:
            for name in names:
                was_in[name] = (b, len(names))
    demoted = {}
    for sg in subgraphs:
        if not sg.is_acc:
            for i in sg.nodes:
                if index.names[i] in was_in:
                    demoted[i] = was_in[index.names[i]]
    raw = [RawSubgraph(is_acc, b if is_acc else FALLBACK, [index.position[m] for m in names])
           for is_acc, b, names in before]
    assignment = Assignment(backend, code, detail)
    return EngineResult(index, assignment, raw, subgraphs, order, demoted)
