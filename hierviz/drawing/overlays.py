"""The one overlay interface: what a measurement (`measurement=`, time_overlay.py), a diff
(`against=`, diff_overlay.py) or a numerics check (`numerics=`, accuracy.py) adds to a drawing of
a partition, as per-node values and per-subgraph decorations, like Model Explorer's
`GraphNodeData` (its per-node data overlay). Every view (graph.py, collapsed.py, focus.py,
modules.py) and the Model Explorer export read overlays only through `Overlay`
(context.make_overlays builds the ones a call asks for)."""

from __future__ import annotations

from typing import Any, Sequence


class Overlay:
    """One overlay of a partition `p`'s drawing (nodes and subgraphs by index in `p.records`).

    Per node: `node_value(i)` (a number, or None where the overlay says nothing: Model
    Explorer's node data, `data_name` / `data_suffix` / `gradient`), `node_key(i)` (what makes
    two nodes look different; the module view rolls up only blocks whose keys match) and
    `node_attrs(i)` (Model Explorer attributes). Per drawn element: `decorate_node`,
    `decorate_subgraph` (subgraph k), `decorate_ops` (a box standing for several ops: a module,
    a run of subgraphs) append label lines (HTML-like) and tooltip lines and set DOT attributes;
    `weigh_edge` a boundary edge's label and width; `fell_back(k)` why subgraph k ran in
    PyTorch instead of its backend. `title` is said after the view's name,
    `legend_html` is its legend row."""

    data_name = ""  # Model Explorer node data: what the values are ("": the overlay has none)
    data_suffix = ""  # the node-data file beside the graph JSON: part.json -> part<suffix>
    gradient: tuple[dict, ...] = ()  # Model Explorer's colour stops over the values

    def node_value(self, i: int) -> float | None:
        return None

    def node_key(self, i: int) -> Any:
        return None

    def node_attrs(self, i: int) -> list[tuple[str, str]]:
        return []

    def decorate_node(self, i: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        """Node i of the full or focus view."""

    def decorate_subgraph(self, k: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        """Subgraph k: a box of the collapsed view, a cluster of the full and focus views."""

    def decorate_ops(self, ops: Sequence[int], lines: list[str], tip: list[str], attrs: dict,
                     bar: bool = True) -> None:
        """A box or cluster standing for the nodes `ops` (a module; a run of subgraphs, `bar=False`)."""

    def weigh_edge(self, specs: Sequence[Any], text: str | None, pen: float,
                   tip: list[str]) -> tuple[str | None, float]:
        """A boundary edge carrying tensors `specs`: its label and pen width."""
        return text, pen

    def fell_back(self, k: int) -> str | None:
        """Why subgraph k ran in eager PyTorch instead of its backend (a measured fallback), else
        None; every view then draws it as PyTorch (Ctx.fell_back)."""
        return None

    def title(self) -> str:
        return ""

    def legend_html(self) -> str:
        return ""


def node_keys(overlays: Sequence[Overlay], backends: Sequence[str]) -> list[Any]:
    """Per node, what the module view compares to roll up repeated blocks: its backend, and
    each overlay's key."""
    if not overlays:
        return list(backends)
    return [(b, *(ov.node_key(i) for ov in overlays)) for i, b in enumerate(backends)]


def fell_back(overlays: Sequence[Overlay], subgraphs: int) -> dict[int, str]:
    """Subgraph k -> why it ran in eager PyTorch instead of its backend, from the overlays (a
    measurement's fallbacks), for the subgraphs that did."""
    out = {}
    for k in range(subgraphs):
        why = next((w for w in (overlay.fell_back(k) for overlay in overlays) if w), None)
        if why:
            out[k] = why
    return out


def ran_on(backends: Sequence[str], subgraph: Sequence[int], fell: dict[int, str], fallback: str) -> list[str]:
    """Per node, where it ran: its backend, or `fallback` (PyTorch) when its subgraph is in `fell`."""
    if not fell:
        return list(backends)
    return [fallback if k >= 0 and k in fell else b for b, k in zip(backends, subgraph)]


def titles(overlays: Sequence[Overlay]) -> str:
    """What the overlays add to a view's title: ' \u00b7 <title>' for each that has one."""
    return "".join(f" \u00b7 {text}" for text in (overlay.title() for overlay in overlays) if text)


__all__ = ["Overlay", "node_keys", "fell_back", "ran_on", "titles"]
