"""The Explorer's Numerics panel: where the error of an `hv.numerics` check starts, and its
per-subgraph table, as HTML (the Controller runs and keeps the checks; no ipywidgets here).
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.widget.result_status import Status

HINT = ("Press <b>check numerics</b> to compare each subgraph of these settings with eager PyTorch "
        "(isolated and accumulated error); the diagram then colours each subgraph by its error.")
COLUMNS = ("tag", "backend", "status", "ops", "dtypes", "isolated_max_abs", "isolated_ratio", "isolated_ok",
           "accumulated_max_abs", "accumulated_ok", "isolated_cosine")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.3g}"
    return html.escape(str(value))


def numerics_html(result: Any, status: "Status | None" = None) -> str:
    """The Numerics panel: the one-line verdict and the per-subgraph table (the culprit first
    marked, failing rows tinted); without a result, its state (`status`: checking, failed with
    its error), or the hint when none was asked."""
    if result is None:
        from hierviz.widget.panels import status_text
        from hierviz.widget.result_status import State

        if status is not None and status.state in (State.RUNNING, State.FAILED):
            return f"<p>{status_text(status)}</p><p style=\"color:#555\">{HINT}</p>"
        return f'<p style="color:#555">{HINT}</p>'
    from hierviz.latency.baseline_names import OUTPUTS_DIFFER, OUTPUTS_MATCH  # a result is there: latency is loaded

    t = result.per_subgraph
    cols = [c for c in COLUMNS if c in t.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    rows = []
    for row in t.to_dict("records"):
        style = ""
        if row["tag"] == result.culprit:
            style = ' style="background:#f8d0c8;font-weight:bold"'
        elif not row["isolated_ok"] or not row["accumulated_ok"]:
            style = ' style="background:#fdeee9"'
        rows.append(f"<tr{style}>" + "".join(f"<td>{_cell(row[c])}</td>" for c in cols) + "</tr>")
    verdict = html.escape(result.culprit_text())
    end = (OUTPUTS_MATCH if result.outputs_match
           else f"{OUTPUTS_DIFFER} (max abs {result.max_abs_error:.3g})")
    return (f'<p><b>{verdict}</b> &middot; {html.escape(end)} &middot; compiled {result.cache_misses} / from cache '
            f'{result.cache_hits}, check {result.check_s:.2f} s</p>'
            '<div style="max-height:420px;overflow:auto;width:0;min-width:100%">'
            '<table style="border-collapse:collapse;font-size:12px" border="1" cellpadding="2">'
            f"<tr>{head}</tr>{''.join(rows)}</table></div>")


__all__ = ["numerics_html", "HINT", "COLUMNS"]
