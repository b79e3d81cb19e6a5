"""Diagrams of a partition: graphviz DOT built by hierviz, laid out by graphviz's `dot`.

    p.render(view="auto")          # a Diagram (graphviz.Digraph with .info): full/collapsed/focus/modules/auto
    p.save("part.svg")             # .svg .png .pdf .dot .json .html by suffix
    hierviz.drawing.to_svg(p)      # SVG text

Modules: views (render, the entry point), one module per view (graph: full, collapsed, focus,
modules, which draws the plan module_tree makes), context (what a render reads: the
partition's public record), budget (the one layout/label budget), legend, text (label
helpers), dot (escaping DOT writer), palette, diagram (the Digraph subclass), overlays (the
one overlay interface: per-node values and per-subgraph decorations) with overlay, accuracy
and difference (measurement=, numerics= and against=), graphviz_run (running dot), files (writing
.svg .png .pdf .dot .json .html), notebook (Jupyter's display), report_page (the HTML report),
zoom_box (a diagram in a page) and model_explorer (Model Explorer's graph JSON). Drawing imports
`hierviz.partitioner` (the Partition and its record), never the engine; graphviz is imported
on first render.
"""

from __future__ import annotations

from hierviz.drawing.files import FORMATS, save, to_json
from hierviz.drawing.graphviz_run import check_dot, layout, to_svg
from hierviz.drawing.notebook import notebook_html
from hierviz.drawing.report_page import report_html
from hierviz.drawing.views import DEFAULT_MAX_NODES, VIEWS, render

__all__ = ["render", "save", "to_svg", "to_json", "notebook_html", "report_html", "check_dot", "layout",
           "VIEWS", "FORMATS", "DEFAULT_MAX_NODES"]
