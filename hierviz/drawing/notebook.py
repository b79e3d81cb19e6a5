"""What Jupyter shows for a Partition: a summary line and the auto view inline."""

from __future__ import annotations

import html as htmlmod
import uuid
from typing import TYPE_CHECKING

from hierviz.drawing.graphviz_run import NOTEBOOK_TIMEOUT_S, to_svg
from hierviz.drawing.zoom_box import zoom_box
from hierviz.errors import RenderError
from hierviz.partitioner.counts import by_backend_text, count_text

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition


def stats_line(p: "Partition") -> str:
    """The partition's counts in one line: nodes, ops, subgraphs by backend, coverage."""
    s = p.stats
    return (f"{count_text('nodes', s['nodes'])}, {count_text('compute_ops', s['compute_ops'])}, "
            f"{count_text('supported_ops', s['supported_ops'])}, {s['subgraphs']:,} subgraphs "
            f"({by_backend_text(s)}), coverage {s['coverage']:.1%}, accelerated {s['accelerated_coverage']:.1%}, "
            f"{s['boundary_tensors']:,} boundary tensors")


def notebook_html(p: "Partition") -> str:
    """What Jupyter shows for a Partition: a summary line and the auto view as inline SVG.

    The auto view keeps dot's work to about a second; a missing dot or a layout that times
    out shows the message instead of the diagram, never a traceback or a long wait."""
    head = (f'<div style="font-family:Helvetica,Arial,sans-serif;font-size:13px">'
            f'<b>hv.Partition</b> | {htmlmod.escape(p.config.label())} | {htmlmod.escape(stats_line(p))}</div>')
    try:
        svg = to_svg(p, "auto", timeout=NOTEBOOK_TIMEOUT_S)
    except RenderError as exc:
        table = p.summary().head(50).to_html(index=False, border=0)
        return (head + f'<pre style="color:#a00;white-space:pre-wrap">{htmlmod.escape(str(exc))}</pre>' + table)
    return head + zoom_box(svg, "hv-" + uuid.uuid4().hex[:12], height="560px")


__all__ = ["notebook_html", "stats_line"]
