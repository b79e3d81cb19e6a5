"""The `Support` base class every support source derives from: its key (hashable, compared by
what it describes), its description, and the questions the engine asks of a source (`verdict`,
`check`, `accepts_name`, `constant_for`, the `checking()` context, `how`, `to_dict`, `content`),
answered per op target unless a subclass looks at each node.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from hierviz.foundation.opnames import qualname
from hierviz.support.verdict import ACCEPTED, Verdict, refused


class Support:
    """Which nodes a backend accepts. Hashable and comparable by what it describes."""

    per_node: bool = False  # True when check() depends on more than the node's target

    def __init__(self, key: tuple, description: str) -> None:
        self._key = key
        self.description = description

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Support) and self._key == other._key

    def __repr__(self) -> str:
        return f"Support({self.description})"

    def accepts_name(self, name: str) -> bool:
        """Whether an op with this qualified name is supported (target-level answer)."""
        raise NotImplementedError

    def verdict(self, node: torch.fx.Node) -> Verdict:
        """Whether this source takes one node, and if not, the code and reason."""
        if type(self).check is not Support.check:  # a subclass that answers check() itself
            ok, why = self.check(node)
            return ACCEPTED if ok else refused(why)
        name = qualname(node.target)
        return ACCEPTED if self.accepts_name(name) else refused(self.rejection(name))

    def check(self, node: torch.fx.Node) -> tuple[bool, str]:
        """(accepted, reason when not accepted) for one node: `verdict(node)` as a pair."""
        v = self.verdict(node)
        return v.ok, v.why

    def rejection(self, name: str) -> str:
        return f"not in {self.description}"

    def constant_for(self, node: torch.fx.Node) -> bool:
        """Whether `verdict(node)` is the verdict of every node with this node's target in the
        same graph while the current `checking()` context is open, so that a caller may keep
        it per target. True for sources that decide per op target."""
        return not self.per_node

    def checking(self) -> Any:
        """A context that `check` is called in for many nodes at once (set-up done once)."""
        return contextlib.nullcontext()

    def how(self, name: str) -> str:
        """How the backend runs an accepted op, when it has several ways ('' otherwise)."""
        return ""

    def to_dict(self) -> dict:
        raise NotImplementedError

    def content(self) -> Any:
        """What this source takes, as JSON-able content that is the same in every process
        (hierviz.support.support_key): its to_dict() form, unless the source holds code."""
        return self.to_dict()


__all__ = ["Support"]
