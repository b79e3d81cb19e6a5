"""Support sources built from what they are given rather than from a backend: `PredicateSupport`
(`where()`: the user's callable decides each node; one that raises refuses and warns once) and
`ComposedSupport` (`chain(...)`: every source takes the node; `any_chain(...)`: one does, as
torch.fx's OperatorSupportBase composes).
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from typing import Any, Callable

import torch

from hierviz.errors import ConfigError
from hierviz.foundation.opnames import qualname
from hierviz.support.support_base import Support
from hierviz.support.support_key import callable_content
from hierviz.support.verdict import ACCEPTED, UNSUPPORTED, VALIDATOR, Verdict, refused

logger = logging.getLogger(__name__)


class PredicateSupport(Support):
    per_node = True

    def __init__(self, predicate: Callable[[torch.fx.Node], bool], name: str | None) -> None:
        label = name or getattr(predicate, "__name__", "predicate")
        super().__init__(("where", predicate), f"where({label})")
        self.predicate = predicate
        self._warned = False

    def accepts_name(self, name: str) -> bool:  # pragma: no cover - per-node only
        raise TypeError("where() support is decided per node")

    def verdict(self, node: torch.fx.Node) -> Verdict:
        try:
            ok = bool(self.predicate(node))
        except Exception as exc:  # the user's predicate; reported, not fatal
            logger.debug("%s raised on node %s", self.description, node.name, exc_info=True)
            why = f"{self.description} raised {type(exc).__name__}: {exc}"
            if not self._warned:  # once per support: a broken predicate fails on every node
                self._warned = True
                warnings.warn(f"hv.support.{why} on node {node.name!r} ({qualname(node.target)}); "
                              "the node is treated as not supported. Fix the predicate so that it "
                              "returns True/False for every node (this warning is shown once).",
                              RuntimeWarning, stacklevel=2)
            return refused(why)
        return ACCEPTED if ok else refused(f"rejected by {self.description}")

    def to_dict(self) -> dict:
        return {"kind": "where", "name": self.description}

    def content(self) -> Any:
        return {**self.to_dict(), "predicate": callable_content(self.predicate)}


class ComposedSupport(Support):
    """`chain(...)` (every source takes the node) or `any_chain(...)` (one does), as torch.fx's
    OperatorSupportBase composes; a refusal is validator_rejected when one of the refusals is."""

    def __init__(self, kind: str, parts: tuple[Support, ...]) -> None:
        bad = [p for p in parts if not isinstance(p, Support)]
        if not parts or bad:
            raise ConfigError(f"hv.support.{kind}() takes hv.Support sources (hv.support.ops(...), ...), "
                              f"not {[type(p).__name__ for p in bad] or 'nothing'}.")
        super().__init__((kind, parts), f"{kind}({', '.join(p.description for p in parts)})")
        self.kind, self.parts, self.per_node = kind, parts, any(p.per_node for p in parts)

    def constant_for(self, node: torch.fx.Node) -> bool:
        return all(p.constant_for(node) for p in self.parts)

    def accepts_name(self, name: str) -> bool:
        answers = (p.accepts_name(name) for p in self.parts)
        return all(answers) if self.kind == "chain" else any(answers)

    def verdict(self, node: torch.fx.Node) -> Verdict:
        verdicts = [p.verdict(node) for p in self.parts]
        refusals = [v for v in verdicts if not v.ok]
        accepted = not refusals if self.kind == "chain" else len(refusals) < len(verdicts)
        if accepted:
            return ACCEPTED
        code = VALIDATOR if any(v.code == VALIDATOR for v in refusals) else UNSUPPORTED
        return refused("; ".join(v.why for v in refusals), code)

    @contextlib.contextmanager
    def checking(self) -> Any:
        with contextlib.ExitStack() as stack:
            yield [stack.enter_context(p.checking()) for p in self.parts]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "of": [p.to_dict() for p in self.parts]}

    def content(self) -> Any:
        return {"kind": self.kind, "of": [p.content() for p in self.parts]}


def chain(*sources: Support) -> Support:
    """A node is supported when every source takes it (torch.fx's `chain`)."""
    return ComposedSupport("chain", sources)


def any_chain(*sources: Support) -> Support:
    """A node is supported when one of the sources takes it (torch.fx's `any_chain`)."""
    return ComposedSupport("any_chain", sources)


__all__ = ["PredicateSupport", "ComposedSupport", "chain", "any_chain"]
