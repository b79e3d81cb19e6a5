"""Colors and node styles of the diagrams, by backend and by reason code.

`STYLES` is the one table of how each reason code is drawn: a node's shape and border in
every view, and its legend entry (text and swatch), so the legend shows exactly the styles
the nodes have (legend.py reads it; no other table of reason styles exists).

Backends get fixed colors from the Okabe-Ito palette, which stays distinguishable under the
common forms of color blindness: TensorRT bluish green, TorchInductor blue, PyTorch fallback
vermillion. Any other backend gets a color picked by a stable hash of its name (the same in
every process), from the rest of Okabe-Ito and Paul Tol's colorblind-safe sets.

Fills are light tints of those colors so black text stays readable; borders and legend
swatches use the full color. `defaults` writes the graph, node and edge defaults every view
starts from.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from hierviz.drawing.dot import DotWriter
from hierviz.drawing.text import FONT

from hierviz.partitioner import (DEAD_CODE, DEMOTED, DEMOTED_NEXT, FALLBACK, FOLLOWS_PRODUCER, GRAPH,
                                  NOT_CALLABLE, SUPPORTED, TORCH_EXECUTED, UNSUPPORTED, VALIDATOR)

TENSORRT = "#009E73"
INDUCTOR = "#0072B2"
TORCH = "#D55E00"
GREY = "#7F7F7F"  # graph inputs, outputs and weights: not partitioned

FIXED: dict[str, str] = {"tensorrt": TENSORRT, "inductor": INDUCTOR, FALLBACK: TORCH, GRAPH: GREY}

# Colors for custom backends, none of them close to the three fixed ones (Okabe-Ito's orange
# and sky blue would pass for PyTorch and TorchInductor once tinted, so they are left out).
EXTRA: tuple[str, ...] = (
    "#CC79A7",  # Okabe-Ito reddish purple
    "#F0E442",  # Okabe-Ito yellow
    "#882255",  # Tol wine
    "#332288",  # Tol indigo
    "#999933",  # Tol olive
    "#AA4499",  # Tol purple
    "#DDCC77",  # Tol sand
)

BOUNDARY_EDGE = "#1A1A1A"
INTERNAL_EDGE = "#8C8C8C"
FOCUS = "#000000"
# the graph-by-graph picture (frames.py): a dynamo graph's frame, and the graph-break marker
# between frames (an amber note, apart from every backend color)
FRAME_LINE = "#4D4D4D"
BREAK_FILL = "#FFF1C2"
BREAK_LINE = "#8A6500"
# why the next graph starts (a resumed frame, a new frame): a neutral note between frames
START_FILL = "#F2F2F2"
START_LINE = "#4D4D4D"


@functools.lru_cache(maxsize=None)  # asked for per drawn node; custom backends hash their name
def color(backend: str) -> str:
    """The full color of a backend (borders, legend swatches)."""
    fixed = FIXED.get(backend)
    if fixed is not None:
        return fixed
    digest = hashlib.sha256(backend.encode("utf-8", "backslashreplace")).digest()
    return EXTRA[int.from_bytes(digest[:4], "big") % len(EXTRA)]


def tint(hex_color: str, white: float) -> str:
    """`hex_color` mixed with `white` (0..1) parts of white."""
    return "#{:02X}{:02X}{:02X}".format(*(round(c + (255 - c) * white) for c in _rgb(hex_color)))


def fill(backend: str) -> str:
    """Node fill of a backend: a tint light enough for black text."""
    return tint(color(backend), 0.55 if backend != GRAPH else 0.8)


def cluster_fill(backend: str) -> str:
    """Background of a subgraph cluster."""
    return tint(color(backend), 0.88)


def border(backend: str) -> str:
    """Node border: the backend's color, darkened a little."""
    return "#{:02X}{:02X}{:02X}".format(*(round(c * 0.75) for c in _rgb(color(backend))))


def _rgb(hex_color: str) -> tuple[int, int, int]:
    return int(hex_color[1:3], 16), int(hex_color[3:5], 16), int(hex_color[5:7], 16)


@dataclass(frozen=True)
class Swatch:
    """How the legend draws a reason's sample box: in the colors of backend `on` (its border
    color replaced by `line` when given), with `border` width and `style`, or `double`."""

    on: str
    border: int = 1
    style: str | None = "rounded"
    double: bool = False
    line: str | None = None


@dataclass(frozen=True)
class NodeStyle:
    """How a node is drawn for one reason code, and its legend entry: `legend` (HTML-label
    text; `{min_block_size}` and `{br}` are filled in; None: not in the legend), shown when a
    drawn node has the code, or `always`."""

    shape: str
    style: str
    penwidth: float
    peripheries: int
    legend: str | None = None
    swatch: Swatch = Swatch(GRAPH)
    always: bool = False


# Reason codes (hierviz.partitioner.REASON_CODES) -> style, in legend order. The four fallback
# reasons differ in shape and border so they stay apart without relying on color.
STYLES: dict[str, NodeStyle] = {
    SUPPORTED: NodeStyle("box", "rounded,filled", 1.0, 1, "op (color: its backend)", always=True),
    FOLLOWS_PRODUCER: NodeStyle("ellipse", "filled", 0.8, 1, "getitem/view, runs with its producer (oval)"),
    UNSUPPORTED: NodeStyle("octagon", "filled,bold", 2.0, 1, "unsupported by every backend (octagon)",
                           Swatch(FALLBACK, border=3, style=None)),
    VALIDATOR: NodeStyle("octagon", "filled,dashed", 2.0, 1, "converter validator rejected it (octagon, dashed)",
                         Swatch(FALLBACK, border=2, style="dashed")),
    TORCH_EXECUTED: NodeStyle("box", "filled", 1.2, 2, "in torch_executed_ops",
                              Swatch(FALLBACK, style=None, double=True)),
    DEMOTED: NodeStyle("box", "rounded,filled,dashed", 2.2, 1,
                       "demoted: its subgraph &lt; min_block_size {min_block_size}"
                       "{br}(rounded, dashed; border: the backend it was eligible for)",
                       Swatch(FALLBACK, border=2, style="rounded,dashed", line=GREY)),
    DEMOTED_NEXT: NodeStyle("box", "rounded,filled,dashed", 1.6, 1,
                            "demoted to the next backend: its subgraph &lt; min_block_size {min_block_size}"
                            "{br}(rounded, dashed; border: the backend it was eligible for)",
                            Swatch(GRAPH, border=2, style="rounded,dashed", line=GREY)),
    NOT_CALLABLE: NodeStyle("box", "rounded,filled", 1.0, 1),
    DEAD_CODE: NodeStyle("box", "rounded,filled,dotted", 1.0, 1),
}


def style(code: str) -> NodeStyle:
    return STYLES.get(code, STYLES[SUPPORTED])


def defaults(w: DotWriter) -> None:
    """Graph, node and edge defaults shared by every view."""
    w.defaults("graph", rankdir="TB", fontname=FONT, fontsize=11, nodesep=0.2, ranksep=0.26,
               labelloc="t", labeljust="l", outputorder="edgesfirst", forcelabels=True)
    w.defaults("node", fontname=FONT, fontsize=10, height=0.26, margin="0.1,0.02", penwidth=1.0)
    w.defaults("edge", fontname=FONT, fontsize=8, arrowsize=0.6, color=INTERNAL_EDGE,
               penwidth=0.9)


__all__ = ["TENSORRT", "INDUCTOR", "TORCH", "GREY", "FIXED", "FRAME_LINE", "BREAK_FILL", "BREAK_LINE", "START_FILL",
           "START_LINE", "EXTRA", "color", "fill", "cluster_fill", "border", "tint", "Swatch", "NodeStyle", "STYLES",
           "style", "defaults"]
