"""engine="torch_tensorrt": run upstream's hierarchical partitioner on a copy of the graph and
wrap its result in the same Partition type, so that the two can be compared."""

from __future__ import annotations

from torch.fx import GraphModule

from hierviz import trt
from hierviz.config import Config
from hierviz.errors import ConfigError, HiervizError
from hierviz.partitioner import engine as eng
from hierviz.partitioner.result import Partition, copy_graph_module
from hierviz.support import OpSetSupport


def support_map(config: Config) -> dict[str, set[str]]:
    result = {}
    for b in config.priority:
        sup = config.support_for(b)
        if not isinstance(sup, OpSetSupport) or sup.per_node:
            raise ConfigError(f"engine='torch_tensorrt' understands only op-set support; "
                              f"{b!r} uses {sup!r}. Use engine='hierviz' for where()/validate=True.")
        result[b] = set(sup.names)
    return result


def partition_upstream(gm: GraphModule, config: Config) -> Partition:
    work = copy_graph_module(gm)
    try:
        split, _ = trt.run_upstream_partitioner(
            work,
            min_block_size=config.min_block_size,
            torch_executed_ops=set(config.torch_executed_ops),
            backend_support_map=support_map(config),
            backend_priority=list(config.priority),
            require_full_compilation=config.require_full_compilation,
            skip_fusion=config.skip_fusion,
        )
    except HiervizError:
        raise
    except AssertionError as exc:
        raise ConfigError(f"upstream partitioner: {exc}") from exc
    return Partition(gm, config, _result_from_tags(gm, work, config), engine="torch_tensorrt", module=split)


def _result_from_tags(gm: GraphModule, work: GraphModule, config: Config) -> eng.EngineResult:
    index = eng.index_graph(gm)
    copied = {n.name: n for n in work.graph.nodes}
    n = len(index.nodes)
    backend: list[str | None] = [None] * n
    code = [eng.NOT_CALLABLE] * n
    detail: list = [None] * n
    tag_nodes: dict[str, list[int]] = {}
    for i in index.callable_indices:
        node = copied.get(index.names[i])
        b = getattr(node, "backend", "None") if node is not None else "None"
        backend[i] = None if b == "None" else b
        if index.ops[i] in config.torch_executed_ops:
            code[i] = eng.TORCH_EXECUTED
        elif eng.is_non_compute(index.ops[i]):
            code[i] = eng.FOLLOWS_PRODUCER
            detail[i] = next((j for j in index.inputs[i] if index.callable[j]), i)
        else:
            code[i] = eng.SUPPORTED if backend[i] else eng.UNSUPPORTED
            detail[i] = {}
        tag = getattr(node, "tag", None) if node is not None else None
        tag_nodes.setdefault(tag or "_run_on_gpu_dead_code", []).append(i)
    order = sorted(tag_nodes, key=lambda t: (t == "_run_on_gpu_dead_code", int(t.rsplit("_", 1)[1]) if t[-1].isdigit() else 0))
    subgraphs = []
    for tag in order:
        is_acc = tag.startswith("_run_on_acc_")
        b = tag[len("_run_on_acc_"):].rsplit("_", 1)[0] if is_acc else eng.FALLBACK
        subgraphs.append(eng.RawSubgraph(is_acc, b, tag_nodes[tag]))
    demoted = {}
    for sg in subgraphs:
        if not sg.is_acc:
            for i in sg.nodes:
                if backend[i] is not None and code[i] == eng.SUPPORTED:
                    demoted[i] = (backend[i], 0)
    assignment = eng.Assignment(backend, code, detail)
    return eng.EngineResult(index, assignment, subgraphs, subgraphs, order, demoted)
