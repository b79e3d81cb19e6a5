"""Pass 1, assignment: each callable node's eligible backend and why (`assign`), and which
backends' support takes a node (`SupportVerdicts`, also demote_to="next"'s next backend)."""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any, Iterator, Sequence

from hierviz.config import Config
from hierviz.errors import ConfigError
from hierviz.opnames import in_op_set, packets_in
from hierviz.partitioner.graph_index import GraphIndex
from hierviz.partitioner.plan import Assignment
from hierviz.partitioner.reasons import (  # the codes this pass gives each node (reasons.py)
    FOLLOWS_PRODUCER,
    NOT_CALLABLE,
    SUPPORTED,
    TORCH_EXECUTED,
    UNSUPPORTED,
    VALIDATOR,
)
from hierviz.provenance import source_op, split_sources


class SupportVerdicts:
    """Whether a backend's support takes a node: verdicts kept per (backend, op) where they
    hold for every node of the op (`Support.constant_for`), others asked per node."""

    def __init__(self, index: GraphIndex, config: Config) -> None:
        self.index = index
        self.priority = config.priority
        self.supports = {b: config.backend_support(b) for b in config.priority}
        self._verdicts: dict[tuple[str, str], bool] = {}

    def takes(self, b: str, i: int) -> bool:
        key = (b, self.index.ops[i])
        ok = self._verdicts.get(key)
        if ok is None:
            sup, node = self.supports[b], self.index.nodes[i]
            ok = sup.verdict(node).ok
            if sup.constant_for(node):
                self._verdicts[key] = ok
        return ok

    @contextlib.contextmanager
    def checking(self) -> Iterator[None]:
        """Every support's `checking()` context (e.g. the converter registry set up once),
        entered once around many verdicts."""
        with contextlib.ExitStack() as stack:
            for sup in self.supports.values():
                stack.enter_context(sup.checking())
            yield

    def after(self, backend: str, nodes: Sequence[int]) -> str | None:
        """The first backend after `backend` in priority that takes all of `nodes`, or None
        (demote_to="next")."""
        if backend not in self.priority:
            return None
        for b in self.priority[self.priority.index(backend) + 1:]:
            with self.supports[b].checking():
                if all(self.takes(b, i) for i in nodes):
                    return b
        return None


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
