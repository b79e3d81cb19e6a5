"""Pass 1, assignment: each callable node's eligible backend and why (`assign`), and which
backends' support takes a node (`SupportVerdicts`, also demote_to="next"'s next backend)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hierviz.settings.config import Config
from hierviz.errors import ConfigError
from hierviz.foundation.opnames import in_op_set, packets_in
from hierviz.partitioner.engine.graph_index import GraphIndex
from hierviz.partitioner.engine.plan import Assignment
from hierviz.partitioner.engine.support_verdicts import SupportVerdicts
from hierviz.partitioner.reasons import (  # the codes this pass gives each node (reasons.py)
    FOLLOWS_PRODUCER,
    NOT_CALLABLE,
    SUPPORTED,
    TORCH_EXECUTED,
    UNSUPPORTED,
    VALIDATOR,
)
from hierviz.capturing.provenance import source_op, split_sources


def assign(index: GraphIndex, config: Config) -> Assignment:
    """Each callable node's eligible backend: the first in priority whose support takes it,
    unless it is in torch_executed_ops. A getitem or view whose producer runs in backend b
    stays with it when b's support takes the node too (or b is PyTorch, which takes
    anything); otherwise it gets its own verdict like every other node."""
    n = len(index.nodes)
    backend: list[str | None] = [None] * n
    code = [NOT_CALLABLE] * n
    detail: list[Any] = [None] * n
    support_verdicts = SupportVerdicts(index, config)
    supports = list(support_verdicts.supports.items())  # in priority order
    takes = support_verdicts.takes
    teo, sources = split_sources(config.torch_executed_ops)
    teo_packets = packets_in(teo)
    source_packets = packets_in(sources)
    verdicts: dict[str, tuple[str | None, str, Any]] = {}  # op name -> decision, when the same for all its nodes
    per_node = any(s.per_node for _, s in supports)

    def decide(i: int) -> tuple[str | None, str, Any]:
        rejections: dict[str, str] = {}
        validator = False
        for b, sup in supports:
            v = sup.verdict(index.nodes[i])
            if v.ok:
                return b, SUPPORTED, rejections
            rejections[b] = v.why
            validator = validator or v.code == VALIDATOR
        return None, VALIDATOR if validator else UNSUPPORTED, rejections

    def assign_one(i: int) -> None:
        name = index.ops[i]
        if in_op_set(name, teo, teo_packets):
            code[i], detail[i] = TORCH_EXECUTED, None
            return
        if sources:  # hv.source_ops: the op of the exported graph this node came from
            src = source_op(index.nodes[i])
            if src is not None and in_op_set(src, sources, source_packets):
                code[i], detail[i] = TORCH_EXECUTED, src
                return
        if index.non_compute[i]:
            producer = next((j for j in index.inputs[i] if index.callable[j]), None)
            if producer is not None:
                b = backend[producer]
                if b is None or takes(b, i):
                    backend[i], code[i], detail[i] = b, FOLLOWS_PRODUCER, producer
                    return
        verdict = verdicts.get(name)
        if verdict is None:
            verdict = decide(i)
            # kept per op when every source's verdict holds for all nodes of the op (always, when
            # no source decides per node)
            if not per_node or all(sup.constant_for(index.nodes[i]) for _, sup in supports):
                verdicts[name] = verdict
        backend[i], code[i], detail[i] = verdict

    with support_verdicts.checking():
        for i in range(n):
            if index.callable[i]:
                assign_one(i)
    return Assignment(backend, code, detail)


def check_full_compilation(index: GraphIndex, assignment: Assignment) -> None:
    """require_full_compilation=True: ConfigError listing the ops that would run in PyTorch."""
    missing = [i for i in index.callable_indices if assignment.backend[i] is None]
    if not missing:
        return
    counts = Counter(index.ops[i] for i in missing)
    listed = ", ".join(f"{op} x{c}" for op, c in counts.most_common(8))
    raise ConfigError(
        f"require_full_compilation=True, but {len(missing)} node(s) would run in PyTorch: {listed}. "
        "Give those ops a backend (support={...}), drop them from torch_executed_ops, or set "
        "require_full_compilation=False."
    )
