"""Colors and node styles of the diagrams, by backend and by reason code.

Backends get fixed colors from the Okabe-Ito palette, which stays distinguishable under the
common forms of color blindness: TensorRT bluish green, TorchInductor blue, PyTorch fallback
vermillion. Any other backend gets a color picked by a stable hash of its name (the same in
every process), from the rest of Okabe-Ito and Paul Tol's colorblind-safe sets.

Fills are light tints of those colors so black text stays readable; borders and legend
swatches use the full color.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from hierviz.partitioner import (
    DEAD_CODE,
    DEMOTED,
    FOLLOWS_PRODUCER,
    NOT_CALLABLE,
    SUPPORTED,
    TORCH_EXECUTED,
    UNSUPPORTED,
    VALIDATOR,
)

TENSORRT = "#009E73"
INDUCTOR = "#0072B2"
TORCH = "#D55E00"
GRAPH = "#7F7F7F"  # graph inputs, outputs and weights: not partitioned

FIXED: dict[str, str] = {"tensorrt": TENSORRT, "inductor": INDUCTOR, "torch": TORCH, "graph": GRAPH}

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
    return tint(color(backend), 0.55 if backend != "graph" else 0.8)


def cluster_fill(backend: str) -> str:
    """Background of a subgraph cluster."""
    return tint(color(backend), 0.88)


def border(backend: str) -> str:
    """Node border: the backend's color, darkened a little."""
    return "#{:02X}{:02X}{:02X}".format(*(round(c * 0.75) for c in _rgb(color(backend))))


def _rgb(hex_color: str) -> tuple[int, int, int]:
    return int(hex_color[1:3], 16), int(hex_color[3:5], 16), int(hex_color[5:7], 16)


@dataclass(frozen=True)
class NodeStyle:
    """How a node is drawn for one reason code."""

    shape: str
    style: str
    penwidth: float
    peripheries: int


# Reason codes (hierviz.partitioner.REASON_CODES) -> style. The four fallback reasons differ in shape
# and border so they stay apart without relying on color.
STYLES: dict[str, NodeStyle] = {
    SUPPORTED: NodeStyle("box", "rounded,filled", 1.0, 1),
    FOLLOWS_PRODUCER: NodeStyle("ellipse", "filled", 0.8, 1),
    TORCH_EXECUTED: NodeStyle("box", "filled", 1.2, 2),
    UNSUPPORTED: NodeStyle("octagon", "filled,bold", 2.0, 1),
    VALIDATOR: NodeStyle("octagon", "filled,dashed", 2.0, 1),
    DEMOTED: NodeStyle("box", "rounded,filled,dashed", 2.2, 1),
    NOT_CALLABLE: NodeStyle("box", "rounded,filled", 1.0, 1),
    DEAD_CODE: NodeStyle("box", "rounded,filled,dotted", 1.0, 1),
}


def style(code: str) -> NodeStyle:
    return STYLES.get(code, STYLES[SUPPORTED])


__all__ = ["TENSORRT", "INDUCTOR", "TORCH", "GRAPH", "FIXED", "EXTRA", "color", "fill", "cluster_fill",
           "border", "tint", "NodeStyle", "STYLES", "style"]
