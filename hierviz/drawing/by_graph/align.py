"""The graph-by-graph picture's frames on one axis: their left edges in one vertical line.

dot centres each frame (a cluster) where its own layout puts it, so a picture of many graphs
zigzags. `aligned(source)` lays the DOT out once with `dot -Tdot` (every node, edge and cluster
gets its position), then moves each item of the top level (a frame with all it holds, a break
or start marker, a note) sideways so its left edge sits on the picture label's left edge,
redraws the visible arrows between them straight down that axis, and returns the positioned
DOT. `neato -n2` draws it as given (POSITIONED_ENGINE): nothing inside a frame moves relative
to the rest of that frame.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The engine and flag that draw a DOT whose nodes, edges and clusters already have positions.
POSITIONED_ENGINE = ("neato", "-n2")
# The arrows between items run this far (pt) right of the axis; their head this long (pt).
ARROW_X = 28.0
ARROW_PT = 10.0
MARGIN = 8.0

_ATTR = re.compile(r'(?<![\w\\-])(pos|lp|bb|xlp|head_lp|tail_lp)="([^"]*)"')
_NUM = r'(?<![\w\\-]){}=(?:"([^"]*)"|([-\d.e]+))'
_GRAPH_NODE = re.compile(r"^g(\d+)_")  # a node of graph k: named g<k>_...


@dataclass
class Item:
    """A statement of the top level: its span in the text, kind ('cluster', 'node', 'edge',
    'attr'), name ('tail->head' for an edge) and box (x1, y1, x2, y2; None when it draws nothing)."""

    start: int
    end: int
    kind: str
    name: str
    box: tuple[float, float, float, float] | None = None


def _skip_quoted(text: str, i: int) -> int:
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i + 1
        i += 1
    return i


def _skip_html(text: str, i: int) -> int:
    depth = 0
    while i < len(text):
        if text[i] == "<":
            depth += 1
        elif text[i] == ">":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def top_level(text: str) -> list[Item]:
    """The statements directly inside the root graph, in order."""
    out: list[Item] = []
    i = text.index("{") + 1
    depth, start = 1, -1
    while i < len(text):
        c = text[i]
        if c == '"':
            i = _skip_quoted(text, i)
            continue
        if c == "<":
            i = _skip_html(text, i)
            continue
        if depth == 1 and start < 0 and not c.isspace() and c not in ";}":
            start = i
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                break
            if depth == 1 and start >= 0:
                out.append(_item(text, start, i + 1))
                start = -1
        elif c == ";" and depth == 1 and start >= 0:
            out.append(_item(text, start, i + 1))
            start = -1
        i += 1
    return out


def _item(text: str, start: int, end: int) -> Item:
    body = text[start:end]
    head = re.split(r"[\[{]", body, maxsplit=1)[0].strip()
    if head.startswith("subgraph"):
        return Item(start, end, "cluster", head.split()[1] if len(head.split()) > 1 else "")
    if "->" in head:
        tail, to = (s.strip().strip('"') for s in head.split("->", 1))
        return Item(start, end, "edge", f"{tail}->{to}")
    if head in ("graph", "node", "edge"):
        return Item(start, end, "attr", head)
    return Item(start, end, "node", head.strip('"'))


def _value(body: str, name: str) -> str | None:
    m = re.search(_NUM.format(name), body)
    return None if m is None else (m.group(1) if m.group(1) is not None else m.group(2))


def _own(body: str) -> str:
    """A cluster's own graph attributes (its first `graph [...]`), not those of what it holds."""
    m = re.search(r"graph\s*\[", body)
    if m is None:
        return ""
    end = m.end()
    while end < len(body) and body[end] != "]":
        end = _skip_quoted(body, end) if body[end] == '"' else _skip_html(body, end) if body[end] == "<" else end + 1
    return body[m.end():end]


def _box(text: str, item: Item) -> tuple[float, float, float, float] | None:
    body = text[item.start:item.end]
    if item.kind == "cluster":
        bb = _value(_own(body), "bb")
        return tuple(float(v) for v in bb.split(",")) if bb else None  # type: ignore[return-value]
    if item.kind != "node" or re.search(r'(?<![\w-])style="?invis', body):
        return None
    pos, width, height = _value(body, "pos"), _value(body, "width"), _value(body, "height")
    if not pos or width is None or height is None:
        return None
    x, y = (float(v) for v in pos.split(",")[:2])
    w, h = float(width) * 36, float(height) * 36
    return (x - w, y - h, x + w, y + h)


def _shift(value: str, name: str, dx: float) -> str:
    if name == "bb":
        x1, y1, x2, y2 = value.split(",")
        return f"{float(x1) + dx:.5g},{y1},{float(x2) + dx:.5g},{y2}"
    out = []
    for point in value.split():
        parts = point.split(",")
        k = 1 if parts[0] in ("e", "s") else 0
        parts[k] = f"{float(parts[k]) + dx:.5g}"
        out.append(",".join(parts))
    return " ".join(out)


def aligned(laid_out: str) -> str:
    """The positioned DOT (`dot -Tdot`'s output) with the top level's items left-aligned on one
    axis and the visible arrows between them redrawn straight; see the module docstring."""
    text = laid_out.replace("\\\n", "")  # graphviz wraps long strings; a continuation is nothing
    items = top_level(text)
    root = next((it for it in items if it.kind == "attr" and it.name == "graph"), None)
    for it in items:
        it.box = _box(text, it)
    drawn = [it for it in items if it.box is not None]
    if not drawn or root is None:
        return text
    root_body = text[root.start:root.end]
    bb = _value(root_body, "bb")
    lp, lwidth = _value(root_body, "lp"), _value(root_body, "lwidth")
    lefts = [it.box[0] for it in drawn if it.box]
    axis = float(lp.split(",")[0]) - float(lwidth) * 36 if lp and lwidth else min(lefts)
    right = float(lp.split(",")[0]) + float(lwidth) * 36 if lp and lwidth else 0.0
    boxes: dict[str, tuple[float, float, float, float]] = {}
    edits: list[tuple[int, int, str]] = []  # (start, end, new text) of each item rewritten
    for it in drawn:
        assert it.box is not None
        dx = axis - it.box[0]
        body = text[it.start:it.end]
        moved = _ATTR.sub(lambda m: f'{m.group(1)}="{_shift(m.group(2), m.group(1), dx)}"', body) if dx else body
        it.box = (it.box[0] + dx, it.box[1], it.box[2] + dx, it.box[3])
        right = max(right, it.box[2])
        boxes[it.name] = it.box
        edits.append((it.start, it.end, moved))
    for it in items:
        if it.kind != "edge":
            continue
        body = text[it.start:it.end]
        if re.search(r'(?<![\w-])style="?invis', body):
            continue
        tail, head = it.name.split("->")
        a, b = _owner(tail, boxes), _owner(head, boxes)
        if a is None or b is None:
            continue
        x, top, bottom = axis + ARROW_X, a[1], b[3]
        if top - bottom <= ARROW_PT:
            continue
        end = bottom + ARROW_PT
        third = (top - end) / 3
        pos = (f"e,{x:.5g},{bottom:.5g} {x:.5g},{top:.5g} {x:.5g},{top - third:.5g} "
               f"{x:.5g},{end + third:.5g} {x:.5g},{end:.5g}")
        edits.append((it.start, it.end, re.sub(r'(?<![\w\\-])pos="[^"]*"', lambda _: f'pos="{pos}"', body)))
    if bb:
        x1, y1, _, y2 = bb.split(",")
        new_bb = f'bb="{x1},{y1},{max(right + MARGIN, float(x1) + 1):.5g},{y2}"'
        edits.append((root.start, root.end, re.sub(r'(?<![\w\\-])bb="[^"]*"', lambda _: new_bb, root_body, count=1)))
    out = []
    at = 0
    for start, end, new in sorted(edits):
        out.append(text[at:start])
        out.append(new)
        at = end
    out.append(text[at:])
    return "".join(out)


def _owner(node: str, boxes: dict[str, tuple[float, float, float, float]]) -> tuple[float, float, float, float] | None:
    """The box of the item a node belongs to: its frame (nodes of graph k are named g<k>_...), or its own."""
    m = _GRAPH_NODE.match(node)
    if m and f"cluster_g{m.group(1)}" in boxes:
        return boxes[f"cluster_g{m.group(1)}"]
    return boxes.get(node)


__all__ = ["aligned", "top_level", "POSITIONED_ENGINE"]
