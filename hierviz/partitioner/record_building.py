"""Record building: the per-node record (`NodeTable`, record.py) of an engine's result, every
column in one pass over the graph, with the reason codes' precedence decided once."""

from __future__ import annotations

from hierviz.partitioner.engine.plan import EngineResult
from hierviz.partitioner.reason_texts import ReasonTexts
from hierviz.partitioner.reasons import DEMOTED, DEMOTED_NEXT, FALLBACK, GRAPH, TORCH_EXECUTED
from hierviz.partitioner.record import NodeTable, module_of, value_facts
from hierviz.settings.config import Config


def node_table(res: EngineResult, config: Config) -> NodeTable:
    """The NodeTable of an engine result: every column in one pass over the graph."""
    index = res.index
    n = len(index.nodes)
    sub = [-1] * n
    for k, sg in enumerate(res.subgraphs):
        for i in sg.nodes:
            sub[i] = k
    sg_backend = tuple(sg.backend for sg in res.subgraphs)
    codes = list(res.assignment.code)  # the one place the codes' precedence is decided
    for i in res.moved:
        codes[i] = DEMOTED_NEXT
    for i in res.demoted:
        codes[i] = DEMOTED
    code = tuple(codes)
    stacks: dict[tuple, tuple] = {}  # one tuple per distinct module stack
    module_stack, shapes, dtypes, counts = [], [], [], []
    for node in index.nodes:
        st = module_of(node)
        module_stack.append(stacks.setdefault(st, st))
        shape, dtype, count = value_facts(node)
        shapes.append(shape)
        dtypes.append(dtype)
        counts.append(count)
    return NodeTable(
        name=tuple(index.names),
        op=tuple(index.ops),
        kind=tuple(node.op for node in index.nodes),
        eligible_backend=tuple((FALLBACK if b is None else b) if c else None
                               for b, c in zip(res.assignment.backend, index.callable)),
        backend=tuple(GRAPH if k < 0 else sg_backend[k] for k in sub),
        subgraph=tuple(sub),
        reason_code=code,
        dtype=tuple(dtypes),
        shape=tuple(shapes),
        count=tuple(counts),
        module_stack=tuple(module_stack),
        inputs=tuple(index.inputs),
        users=tuple(index.users),
        compute=tuple(c and not nc for c, nc in zip(index.callable, index.non_compute)),
        subgraph_tag=tuple(res.tags),
        subgraph_backend=sg_backend,
        subgraph_is_acc=tuple(sg.is_acc for sg in res.subgraphs),
        subgraph_members=tuple(tuple(sorted(sg.nodes)) for sg in res.subgraphs),
        target=tuple(op if c else str(node.target) for op, c, node in zip(index.ops, index.callable, index.nodes)),
        forced_from=tuple(detail if c == TORCH_EXECUTED and detail else None
                          for c, detail in zip(code, res.assignment.detail)),
        explain=ReasonTexts(res, config, sub, code),
    )
