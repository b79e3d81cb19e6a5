"""A node's reason text (`NodeTable.reason(i)`, `.short_reason(i)`), built on demand from the
engine's reason codes and details, one node at a time."""

from __future__ import annotations

from hierviz.capturing.provenance import short_op
from hierviz.partitioner.counts import SUPPORTED_NODES
from hierviz.partitioner.engine.plan import EngineResult
from hierviz.partitioner.reasons import (
    DEAD_CODE,
    FOLLOWS_PRODUCER,
    GRAPH,
    TORCH_EXECUTED,
    UNSUPPORTED,
    VALIDATOR,
    short_reason,
)
from hierviz.settings.config import Config


def nodes_of(count: int) -> str:
    """'1 node', '<n> nodes'."""
    return f"{count} node" if count == 1 else f"{count} nodes"


class ReasonTexts:
    """Reason texts from the engine's reason codes and details, built one node at a time."""

    def __init__(self, res: EngineResult, config: Config, sub: list[int], code: tuple[str, ...]) -> None:
        self.res, self.config, self.sub, self.code = res, config, sub, code

    def backend(self, i: int) -> str:
        k = self.sub[i]
        return GRAPH if k < 0 else self.res.subgraphs[k].backend

    def __call__(self, i: int, short: bool = False) -> str:
        return self.short(i) if short else self.long(i)

    def short(self, i: int) -> str:
        res = self.res
        code = self.code[i]
        if code == TORCH_EXECUTED and res.assignment.detail[i]:  # as NodeTable.forced_from
            return f"forced from {short_op(res.assignment.detail[i])}"
        return short_reason(code, backend=res.assignment.backend[i], min_block_size=self.config.min_block_size)

    def long(self, i: int) -> str:
        res = self.res
        index = res.index
        op = index.ops[i]
        if not index.callable[i]:
            kind = {"placeholder": "graph input", "get_attr": "weight/constant", "output": "graph output"}
            return f"{kind.get(index.nodes[i].op, index.nodes[i].op)}: not partitioned"
        min_size = self.config.min_block_size
        moved = "; ".join(f"demoted from {a} to {b}: its {a} subgraph had {nodes_of(k)} < {min_size}"
                          for a, b, k in res.moved.get(i, ()))
        if moved and i not in res.demoted:
            return moved
        if i in res.demoted:
            backend, size = res.demoted[i]
            if moved:
                return (f"{moved}; then demoted to PyTorch: its {backend} subgraph had {size} node(s) < "
                        f"min_block_size {min_size}, and no later backend in priority takes all its nodes")
            if res.early_return is not None:
                return (f"runs in PyTorch: eligible for {backend}, but the graph has only "
                        f"{SUPPORTED_NODES(res.early_return)} < min_block_size {min_size}, so torch_tensorrt.compile "
                        "leaves the whole graph in PyTorch")
            if not size:  # upstream's engine does not keep its subgraphs before demotion
                return (f"demoted to PyTorch: eligible for {backend}, but its subgraph was smaller "
                        f"than min_block_size {min_size}")
            return f"demoted to PyTorch: its {backend} subgraph had {size} node(s) < min_block_size {min_size}"
        code, detail = res.assignment.code[i], res.assignment.detail[i]
        where = self.backend(i)
        if code == DEAD_CODE:
            return "removed by upstream's dead-code elimination; runs nowhere"
        if code == TORCH_EXECUTED:
            if detail:  # hv.source_ops
                return (f"runs in PyTorch: forced from {short_op(detail)}: Torch-TensorRT's lowering turned "
                        f"{detail} into nodes such as this {op}, and torch_executed_ops names that source op")
            return f"runs in PyTorch: {op} is in torch_executed_ops"
        if code == FOLLOWS_PRODUCER:
            return (f"non-compute node ({op.rsplit('.', 2)[-2] if op.startswith('torch.ops') else op}): "
                    f"follows its producer {index.names[detail]}, runs in {where}")
        if code in (UNSUPPORTED, VALIDATOR):
            why = "; ".join(f"{b}: {r}" for b, r in detail.items())
            return f"runs in PyTorch: no support in any backend ({why})"
        skipped = "; ".join(f"{b}: {r}" for b, r in (detail or {}).items())
        chosen = res.assignment.backend[i]
        assert chosen is not None, "a supported node has its backend"
        support = self.config.backend_support(chosen)
        how = support.how(op)
        text = f"runs in {where}: {op} supported by {support.description}" + (f" ({how})" if how else "")
        if where != res.assignment.backend[i]:
            text += f" (merged into a {where} subgraph)"
        return text + (f" (skipped {skipped})" if skipped else "")
