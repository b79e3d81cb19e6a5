"""`SupportVerdicts`: whether each backend's support takes a node, asked once per op where the
answer holds for every node of it. The assignment pass and demote_to="next" read it; the plan
keeps it for the next backend."""

from __future__ import annotations

import contextlib
from typing import Iterator, Sequence

from hierviz.partitioner.engine.graph_index import GraphIndex
from hierviz.settings.config import Config


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


__all__ = ["SupportVerdicts"]
