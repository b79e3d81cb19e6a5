"""What is selected in the explorer's diagram: a node, a subgraph or a module, by name.

A click in the page names the element's kind (the diagram's element ids say it); a name set
from Python (`Explorer.selected = "relu"`) is looked up as a node name, then a subgraph tag,
then a module path. A name the shown partition does not have is a ConfigError that says where
the names are listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from hierviz.drawing.dot import ELEMENT_KINDS
from hierviz.errors import ConfigError

if TYPE_CHECKING:
    from hierviz.partitioner import Partition


@dataclass(frozen=True)
class Selection:
    """One selected thing of the diagram: `kind` is "node", "subgraph" or "module"; `name` its
    node name, subgraph tag or module path."""

    kind: str
    name: str

    def trait(self) -> dict[str, str]:
        """As the diagram widget's `selected` holds it."""
        return {"kind": self.kind, "name": self.name}


def module_paths(part: "Partition") -> set[str]:
    """Every module path of the partition's nodes, their parents included ('' left out)."""
    paths: set[str] = set()
    for path in set(part.nodes()["module_path"]):
        parts = str(path or "").split(".")
        for n in range(1, len(parts) + 1):
            if parts[0]:
                paths.add(".".join(parts[:n]))
    return paths


def has(part: "Partition", kind: str, name: str) -> bool:
    """Whether the partition has the `kind` named `name`."""
    if kind == "node":
        return _has_node(part, name)
    if kind == "subgraph":
        return any(sg.tag == name for sg in part.subgraphs)
    return kind == "module" and name in module_paths(part)


def _has_node(part: "Partition", name: str) -> bool:
    try:
        part.record(name)
    except ConfigError:
        return False
    return True


def find(part: "Partition", name: Any) -> Selection:
    """The node, subgraph or module of the shown partition called `name` (looked up in that
    order); a ConfigError saying what to pass when there is none."""
    if not isinstance(name, str):
        raise ConfigError(f"Explorer.selected takes a node name, a subgraph tag or a module path (text), or None to "
                          f"clear it; not {type(name).__name__} {name!r}.")
    for kind in ELEMENT_KINDS:
        if has(part, kind, name):
            return Selection(kind, name)
    tags = [sg.tag for sg in part.subgraphs][:5]
    raise ConfigError(f"nothing called {name!r} in the shown partition: Explorer.selected takes a node name "
                      f"(Explorer.partition.nodes()['name']), a subgraph tag (e.g. {', '.join(map(repr, tags))}) "
                      "or a module path (the module view's boxes); None clears the selection.")


def from_trait(value: Mapping[str, Any] | None) -> Selection | None:
    """The Selection a diagram widget's `selected` holds (None for {}); a ConfigError for a
    kind or name of the wrong form."""
    if not value:
        return None
    kind, name = value.get("kind"), value.get("name")
    if kind not in ELEMENT_KINDS or not isinstance(name, str) or not name:
        raise ConfigError(f"a selection is {{'kind': one of {ELEMENT_KINDS}, 'name': text}}, not {dict(value)!r}.")
    return Selection(kind, name)


__all__ = ["Selection", "find", "from_trait", "has", "module_paths"]
