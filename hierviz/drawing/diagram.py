"""`Diagram`: what `Partition.render` returns, a `graphviz.Digraph` that also says what it drew.

`Diagram.info` (read-only mapping) holds at least `view` (the view drawn, after 'auto' chose)
and `nodes` (how many nodes dot will lay out); views add their own facts: `edge_labels`
('label', 'xlabel' or None), `clusters`, `boundary_edges`, `boxes`, `grouped`, `group_size`,
`focus`, `focus_kind`, `truncated`, ... Importing this module imports graphviz.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, Sequence

import graphviz


class Diagram(graphviz.Digraph):
    """A graphviz.Digraph built by hierviz, with `.info` about what it drew."""

    def __init__(self, body: Sequence[str], info: Mapping[str, Any], *, comment: str) -> None:
        super().__init__(name="hierviz", comment=comment)
        self.body.extend(body)
        self.info: Mapping[str, Any] = MappingProxyType(dict(info))


__all__ = ["Diagram"]
