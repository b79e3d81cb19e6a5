"""Text for diagrams: short op names, counts, CSS class names, tooltips and the shared
constants of every label (font, line break, length limits).

Tensor specs have their text forms on `TensorSpec` (hierviz.partitioner.record); escaping
lives in dot.py.
"""

from __future__ import annotations

from typing import Iterable

from hierviz.drawing.dot import clean

FONT = "Helvetica"
LABEL_CHARS = 40
BR_LEFT = '<BR ALIGN="LEFT"/>'  # a left-aligned line break inside an HTML-like label


def op_short(op: str) -> str:
    """'torch.ops.aten.convolution.default' -> 'convolution'; '_operator.getitem' -> 'getitem'."""
    if op.startswith("torch.ops."):
        parts = op.split(".")
        if len(parts) >= 4:
            return parts[3] if parts[2] == "aten" else f"{parts[2]}.{parts[3]}"
    return op.rsplit(".", 1)[-1] if op else op


def plural(n: int, word: str) -> str:
    """'1 op', '2,048 ops'."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def css(name: str) -> str:
    """A name made safe for an SVG class attribute."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def tooltip(lines: Iterable[str]) -> str:
    """Tooltip text; each line cleaned (a name's own newlines stay visible as \\n); empty lines dropped."""
    return "\n".join(clean(line) for line in lines if line)


def edge_label(text: str | None) -> str | None:
    """An edge's `label`: dot sets it right beside the edge, which ran over its first character;
    a leading space keeps that gap."""
    return f" {text}" if text else None


__all__ = ["FONT", "LABEL_CHARS", "BR_LEFT", "op_short", "plural", "css", "tooltip", "edge_label"]
