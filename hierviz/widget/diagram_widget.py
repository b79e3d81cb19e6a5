"""The explorer's diagram as a widget that answers clicks (anywidget): the diagram panel's
HTML in, the element clicked out.

`value` is what the diagram panel shows (the same HTML an `ipywidgets.HTML` panel took: the
SVG in its box, or a message), so whatever writes the panel writes this. `selected` is
{"kind": "node" | "subgraph" | "module", "name": ...} or {} (nothing): a click in the page
sets it, and setting it from Python outlines that element in the page (brought into view).
`marked` is {"label": what the red means, "levels": [[kind, name] pairs, finest first]} or {}
(blocker_marks.py): the page outlines in red the elements of the first level it draws (the
selection panel marks what blocks the most); "what_if" says the picture is a what-if's.
The page's script is
diagram_script.py; the ids it reads are hierviz.drawing.dot.element_id's.
"""

from __future__ import annotations

import anywidget
import traitlets

from hierviz.widget.diagram_script import CSS, ESM


class DiagramWidget(anywidget.AnyWidget):
    """The clickable, zoomable diagram (see the module docstring)."""

    _esm = ESM
    _css = CSS
    value = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Dict().tag(sync=True)
    marked = traitlets.Dict().tag(sync=True)


__all__ = ["DiagramWidget"]
