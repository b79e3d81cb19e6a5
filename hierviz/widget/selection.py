"""What is selected in the explorer's diagram: a node, a subgraph, a module, a group, a repeat
or the top level, by name.

A click in the page names the element's kind (the diagram's element ids say it); a name set
from Python (`Explorer.selected = "relu"`) is looked up as a node name, then a subgraph tag,
then a module path, then a group (the collapsed view's box of consecutive subgraphs, named as
its label: "subgraphs 3-7"), then a repeat (the module view's rolled-up run of sibling modules,
"layers.0–23 ×24", named by its first module and count: "model.layers.0 ×24"), then
"(top level)" (the module view's box of the ops outside any module). A name the shown
partition does not have is a ConfigError that says where the names are listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from hierviz.drawing.dot import ELEMENT_KINDS, GROUP_NAME, REPEAT_NAME, group_name, repeat_name
from hierviz.drawing.module_tree import Mod, build_tree
from hierviz.drawing.modules import TOP
from hierviz.errors import ConfigError

if TYPE_CHECKING:
    from hierviz.partitioner import Partition


# the kinds that stand for several nodes of no one subgraph or module (members() lists them)
GROUPED = ("group", "repeat", "top")


@dataclass(frozen=True)
class Selection:
    """One selected thing of the diagram: `kind` is "node", "subgraph", "module", "group",
    "repeat" or "top"; `name` its node name, subgraph tag, module path, group name ("subgraphs
    3-7"), repeat name ("layers.0 \u00d724") or "(top level)"."""

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
    if kind == "group":
        return group_range(part, name) is not None
    if kind == "repeat":
        return repeat_run(part, name) is not None
    if kind == "top":
        return name == TOP and bool(top_level_nodes(part))
    return kind == "module" and name in module_paths(part)


def group_range(part: "Partition", name: str) -> range | None:
    """The indices (in part.subgraphs) of the subgraphs of group `name` ("subgraphs 3-7", as the
    collapsed view draws it); None when `name` is no such group of this partition."""
    m = GROUP_NAME.match(name)
    if m is None:
        return None
    first, last = int(m.group(1)), int(m.group(2))
    if name != group_name(first, last) or first > last or last >= len(part.subgraphs):
        return None
    return range(first, last + 1)


def repeat_run(part: "Partition", name: str) -> list[Mod] | None:
    """The modules of repeat `name` ("layers.0 \u00d724": module layers.0 and the siblings after it,
    24 of one class, as the module view rolls them up); None when `name` is no such run."""
    m = REPEAT_NAME.match(name)
    if m is None or int(m.group(2)) < 2 or name != repeat_name(m.group(1), int(m.group(2))):
        return None
    path, count = m.group(1), int(m.group(2))
    node = build_tree(part.records)
    while node.path != path:
        inner = next((c for c in node.children.values() if path.startswith(c.path + ".") or c.path == path), None)
        if inner is None:
            return None
        node = inner
    siblings = list(node.parent.children.values()) if node.parent is not None else [node]
    run = siblings[siblings.index(node):][:count]
    return run if len(run) == count and all(c.cls == node.cls for c in run) else None


def top_level_nodes(part: "Partition") -> list[str]:
    """The partitioned nodes outside any module: the module view's "(top level)" box."""
    t = part.records
    return [t.name[i] for i in range(len(t)) if t.subgraph[i] >= 0 and not any(p for p, _ in t.module_stack[i])]


def members(part: "Partition", selection: Selection) -> list[str]:
    """The node names a group, a repeat or the top level stands for, in graph order ([] for
    other kinds)."""
    if selection.kind == "top":
        return top_level_nodes(part)
    if selection.kind == "repeat":
        t = part.records
        return [t.name[i] for i in sorted(i for mod in repeat_run(part, selection.name) or () for i in mod.ops)]
    found = group_range(part, selection.name) if selection.kind == "group" else None
    return [n for k in found or () for n in part.subgraphs[k].nodes]


def focus_target(part: "Partition", selection: Selection) -> str | None:
    """What "focus here" gives the focus control: the name itself, a group's first subgraph (the
    focus view draws one subgraph), a repeat's first module (each has its partition pattern);
    None for the top level, which no view focuses on."""
    if selection.kind == "top":
        return None
    if selection.kind == "repeat":
        run = repeat_run(part, selection.name)
        return run[0].path if run else None
    found = group_range(part, selection.name) if selection.kind == "group" else None
    return part.subgraphs[found.start].tag if found else selection.name


def _has_node(part: "Partition", name: str) -> bool:
    try:
        part.record(name)
    except ConfigError:
        return False
    return True


def find(part: "Partition", name: Any) -> Selection:
    """The node, subgraph, module, group, repeat or top level of the shown partition called `name`
    (looked up in that order); a ConfigError saying what to pass when there is none."""
    if not isinstance(name, str):
        raise ConfigError(f"Explorer.selected takes a node name, a subgraph tag, a module path, a group of the "
                          f"collapsed view, a repeat of the module view or '{TOP}' (text), or None to clear it; "
                          f"not {type(name).__name__} {name!r}.")
    for kind in ELEMENT_KINDS:
        if has(part, kind, name):
            return Selection(kind, name)
    if name == TOP:
        raise ConfigError(f"every op of this model runs inside a module: there is no {TOP!r} (the module view's box "
                          "of the ops outside any module) to select; select a module or a node instead.")
    tags = [sg.tag for sg in part.subgraphs][:5]
    raise ConfigError(f"nothing called {name!r} in the shown partition: Explorer.selected takes a node name "
                      f"(Explorer.partition.nodes()['name']), a subgraph tag (e.g. {', '.join(map(repr, tags))}), "
                      f"a module path (the module view's boxes), a group of the collapsed view (e.g. "
                      f"{group_name(0, max(len(part.subgraphs) - 1, 0))!r}), a repeat of the module view (e.g. "
                      f"{repeat_name('layers.0', 24)!r}) or {TOP!r} (the ops outside any module); "
                      "None clears the selection.")


def from_trait(value: Mapping[str, Any] | None) -> Selection | None:
    """The Selection a diagram widget's `selected` holds (None for {}); a ConfigError for a
    kind or name of the wrong form."""
    if not value:
        return None
    kind, name = value.get("kind"), value.get("name")
    if kind not in ELEMENT_KINDS or not isinstance(name, str) or not name:
        raise ConfigError(f"a selection is {{'kind': one of {ELEMENT_KINDS}, 'name': text}}, not {dict(value)!r}.")
    return Selection(kind, name)


__all__ = ["GROUPED", "Selection", "find", "focus_target", "from_trait", "group_range", "has", "members",
           "module_paths", "repeat_run", "top_level_nodes"]
