"""Diagrams of a partition: graphviz DOT built by hierviz, laid out by graphviz's `dot`.

    p.render(view="auto")          # graphviz.Digraph (full / collapsed / focus / auto)
    p.save("part.svg")             # .svg .png .pdf .dot .json .html by suffix
    hierviz.drawing.to_svg(p)       # SVG text

Views, palette and escaping live in `views`, `palette` and `dot`; files and `dot` runs in
`export`.
"""

from __future__ import annotations

from hierviz.drawing.export import (
    FORMATS,
    check_dot,
    layout,
    notebook_html,
    report_html,
    save,
    to_json,
    to_svg,
)
from hierviz.drawing.views import DEFAULT_MAX_NODES, VIEWS, render

__all__ = ["render", "save", "to_svg", "to_json", "notebook_html", "report_html", "check_dot", "layout",
           "VIEWS", "FORMATS", "DEFAULT_MAX_NODES"]
