"""Which elements of the explorer's diagram to outline in red for some nodes (what blocks the
most): the diagram widget's `marked` value.

Each view draws the nodes differently: the full and focus views draw them; the collapsed view
draws their subgraphs, one box each or several in a group box ("subgraphs 10-19"); the module
view draws their modules, a rolled-up run of modules ("layers.0 \u00d724") or the "(top level)" box.
So `marked["levels"]` lists, finest first, the (kind, name) of every element that stands for the
nodes: their nodes; their subgraphs and the group boxes the SVG on screen draws that hold them;
their modules and the runs and top-level box it draws that hold them. The page outlines the
first level it finds drawn (diagram_script.py).
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Any, Iterable, Mapping
from urllib.parse import unquote

from hierviz.drawing.dot import ELEMENT_KINDS
from hierviz.widget.selection import GROUPED, Selection, members

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition

# a grouped element's id (hierviz.drawing.dot.element_id), not one of its parts ("hv:group~label:...")
GROUPED_ID = re.compile(r'id="hv:(' + "|".join(GROUPED) + r'):([^"]+)"')
ANY_ID = re.compile(r'id="hv:(' + "|".join(ELEMENT_KINDS) + r'):([^"]+)"')
SUBGRAPH_LEVEL, MODULE_LEVEL = ("group",), ("repeat", "top")


def drawn_groups(svg: str) -> list[Selection]:
    """The group, run and top-level boxes `svg` draws, by the names a click reads back (the page
    reads the id unescaped: graphviz writes '-' as '&#45;')."""
    return [Selection(kind, unquote(html.unescape(name))) for kind, name in dict.fromkeys(GROUPED_ID.findall(svg))]


def first_drawn(marked: Mapping[str, Any], svg: str | None) -> Selection | None:
    """The first element of `marked`'s first level that `svg` draws (what the page outlines
    first); None when it draws none of them."""
    drawn = {(kind, unquote(html.unescape(name))) for kind, name in ANY_ID.findall(svg or "")}
    for level in marked.get("levels", ()):
        found = next((Selection(kind, name) for kind, name in level if (kind, name) in drawn), None)
        if found is not None:
            return found
    return None


def marks(part: "Partition", names: Iterable[str], label: str, svg: str | None) -> dict[str, Any]:
    """The diagram's `marked` for nodes `names` of `part` (`svg`: the picture on screen, for its
    group boxes), with `label` saying what the red means."""
    names = list(names)
    wanted = set(names)
    records = [part.record(n) for n in names]
    holding = [g for g in drawn_groups(svg or "") if wanted.intersection(members(part, g))]
    nodes = [["node", n] for n in names]
    boxes = [["subgraph", tag] for tag in dict.fromkeys(r.tag for r in records if r.tag)]
    boxes += [[g.kind, g.name] for g in holding if g.kind in SUBGRAPH_LEVEL]
    modules = [["module", path] for path in dict.fromkeys(r.module_path for r in records if r.module_path)]
    modules += [[g.kind, g.name] for g in holding if g.kind in MODULE_LEVEL]
    return {"label": label, "levels": [nodes, boxes, modules]}


__all__ = ["marks", "drawn_groups", "first_drawn", "GROUPED_ID", "ANY_ID"]
