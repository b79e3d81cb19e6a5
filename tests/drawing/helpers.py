"""Reading back what the renderer wrote: normalised DOT, parsed SVG."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"
GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def normalise_dot(source: str) -> str:
    """DOT text without what legitimately differs between machines: the TensorRT version and
    whether its registry was read live or from hierviz's snapshot; trailing blanks."""
    source = re.sub(r"Torch-TensorRT \S+ converter registry \((live|snapshot)[^)]*\)",
                    "Torch-TensorRT <version> converter registry", source)
    return "\n".join(line.rstrip() for line in source.splitlines()) + "\n"


@dataclass
class SvgGroup:
    kind: str  # node, edge, cluster
    title: str
    classes: list[str]
    fills: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    tooltip: str | None = None
    strokes: list[str] = field(default_factory=list)
    outlines: int = 0  # polygons/paths/ellipses drawn (2 for peripheries=2)
    corners: int = 0  # of the first outline: polygon corners, -1 for a rounded path, 0 an ellipse
    dashed: bool = False

    @property
    def look(self) -> tuple[int, bool, int]:
        """What tells node styles apart: (corners, dashed, outlines)."""
        return self.corners, self.dashed, self.outlines


def parse_svg(text: str) -> tuple[ET.Element, list[SvgGroup]]:
    """The SVG root and its node/edge/cluster groups (title = the DOT id)."""
    root = ET.fromstring(text)
    groups = []
    for g in root.iter(f"{SVG}g"):
        classes = (g.get("class") or "").split()
        kind = next((c for c in classes if c in ("node", "edge", "cluster")), None)
        if kind is None:
            continue
        title = g.find(f"{SVG}title")
        item = SvgGroup(kind, title.text if title is not None else "", classes)
        for shape in g.iter():
            tag = shape.tag.replace(SVG, "")
            if tag in ("polygon", "path", "ellipse"):
                if shape.get("fill") not in (None, "none", "transparent"):
                    item.fills.append(shape.get("fill").upper())
                if item.outlines == 0:
                    item.corners = {"polygon": len((shape.get("points") or "").split()) - 1,
                                    "path": -1, "ellipse": 0}[tag]
                item.outlines += 1
                item.strokes.append((shape.get("stroke") or "").lower())
                item.dashed = item.dashed or shape.get("stroke-dasharray") is not None
            elif tag == "text":
                item.texts.append("".join(shape.itertext()))
            elif tag == "a" and item.tooltip is None:
                item.tooltip = shape.get(f"{XLINK}title")
        groups.append(item)
    return root, groups


def check_golden(source: str, name: str, regen: bool) -> None:
    """The normalised DOT `source` equals tests/golden/`name` (rewritten instead with --regen-golden)."""
    path = GOLDEN / name
    text = normalise_dot(source)
    if regen:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} missing: run pytest tests/drawing --regen-golden"
    assert text == path.read_text(encoding="utf-8"), (
        f"{path.name} differs from the current DOT; if intended, regenerate with pytest tests/drawing --regen-golden")


def outline_edges(svg: str, axis: int) -> dict[str, float]:
    """The smallest x (axis 0) or y (axis 1: the top, SVG y grows downward) of each node's and
    cluster's outline, by title."""
    out = {}
    for g in ET.fromstring(svg).iter(f"{SVG}g"):
        title = g.find(f"{SVG}title")
        shape = next((x for x in g.iter() if x.tag in (f"{SVG}polygon", f"{SVG}path")), None)
        if title is not None and shape is not None:
            numbers = re.findall(r"-?\d+(?:\.\d+)?", shape.get("points") or shape.get("d") or "")
            out[title.text] = min(float(v) for v in numbers[axis::2])
    return out


@dataclass
class DotStatement:
    """One node or attribute statement of a DOT source (`name [key=value, ...]`), not an edge."""
    name: str
    attrs: dict[str, str]  # values as written: "..." unquoted, <...> without the outer brackets
    line: str

    @property
    def label_head(self) -> str:
        """The label's first line (up to the first <BR/>)."""
        return self.attrs.get("label", "").split("<BR/>")[0]


def _dot_value(text: str, i: int) -> tuple[str, int]:
    """The DOT attribute value starting at text[i] and the index after it."""
    if text[i] == '"':
        j = i + 1
        while text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        return text[i + 1:j], j + 1
    if text[i] == "<":
        depth, j = 0, i
        while True:
            depth += {"<": 1, ">": -1}.get(text[j], 0)
            if depth == 0:
                return text[i + 1:j], j + 1
            j += 1
    m = re.compile(r"[^,\]\s]+").match(text, i)
    assert m, f"no DOT value at {text[i:i + 40]!r}"
    return m.group(0), m.end()


def dot_attrs(text: str) -> dict[str, str]:
    """The attributes of a DOT attribute list's body (`key=value, key=value`), in any order."""
    attrs, i, text = {}, 0, text.strip()
    key = re.compile(r"\s*,?\s*(\w+)=")
    while i < len(text):
        m = key.match(text, i)
        assert m, f"not a DOT attribute at {text[i:i + 40]!r}"
        attrs[m.group(1)], i = _dot_value(text, m.end())
    return attrs


def dot_statements(source: str) -> list[DotStatement]:
    """Each one-line node / graph statement of `source`, its attributes parsed whatever their order."""
    out = []
    for line in source.splitlines():
        m = re.match(r"\s*(\w+) \[(.*)\];?\s*$", line)
        if m:
            out.append(DotStatement(m.group(1), dot_attrs(m.group(2)), line))
    return out
