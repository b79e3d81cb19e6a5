"""The Explorer's Blockers tab: `Partition.blockers()` of the shown settings as a list of rows;
clicking a row applies its what-if (the controls take that setting, so the diagram, the counts
and the Diff tab show the result), and "back" restores the setting from before the first
what-if. The tab's widgets and its HTML; the Explorer wires the two callbacks."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, Callable

import ipywidgets as widgets

from hierviz.settings.config import Config
from hierviz.partitioner.blockers.blocker_text import saves_text
from hierviz.widget.panels import message_html, table_html

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from hierviz.partitioner import Partition

SHOWN_COLUMNS = ["op", "kind", "nodes", "subgraphs_if_fixed", "subgraphs_saved", "accelerated_ops_gained", "verdict",
                 "change"]


def row_label(k: int, row: Any) -> str:
    """One row of the picker: what to change, its verdict and what it gives, in the report's
    words ('trade-off, demoted: 2 subgraph(s) more ...', never '-2 subgraphs saved')."""
    if row.subgraphs_saved is None or row.subgraphs_saved != row.subgraphs_saved:
        return f"{k + 1}. {row.change}  ({row.kind}, {row.nodes} node(s); counts only)"
    return f"{k + 1}. {row.change}  ({row.verdict}, {row.kind}: {saves_text(row)})"


def applied_html(change: str, before: "Partition | None", now: "Partition | None", back_to: Config) -> str:
    """The line saying which what-if is applied, the counts before and after, and what back restores."""
    if now is None or before is None:
        counts = ""
    else:
        a, b = before.stats, now.stats
        counts = (f": subgraphs {a['subgraphs']} \u2192 {b['subgraphs']}, accelerated ops "
                  f"{a['accelerated_ops']} \u2192 {b['accelerated_ops']}")
    return (f'<div style="padding:4px;background:#FFF3E0;border-left:4px solid #C62828">'
            f"<b>what-if applied</b>: {html.escape(change)}{html.escape(counts)}; "
            f"<i>back</i> restores {html.escape(back_to.label())}</div>")


class BlockersTab(widgets.VBox):
    """The picker (one row per cause), the back button and the table. `on_apply(config, change)`
    and `on_back()` are the Explorer's."""

    def __init__(self, on_apply: Callable[[Config, str], None], on_back: Callable[[], None]) -> None:
        # a <select> cuts each entry at its own width: the picker has a row of its own
        self.picker = widgets.Select(options=[], rows=6, layout=widgets.Layout(width="100%"))
        self.back = widgets.Button(description="back", icon="undo", disabled=True,
                                   tooltip="Restore the setting from before the first what-if")
        self.banner = widgets.HTML()
        self.panel = widgets.HTML()
        heading = widgets.HBox([widgets.HTML("<b>apply</b> a what-if: click a row"), self.back])
        super().__init__(children=[self.banner, heading, self.picker, self.panel])
        self.table: "pd.DataFrame | None" = None
        self.shown_for: "Partition | None" = None
        self._filling = False
        self._on_apply, self._on_back = on_apply, on_back
        self.picker.observe(self._picked, names="value")
        self.back.on_click(lambda _b: self._on_back())

    def show(self, part: "Partition | None", table: "pd.DataFrame | None", error: str = "") -> None:
        """Fill the picker and the table for `part` (None: invalid settings, `error` says why)."""
        self.shown_for, self.table = part, table
        self._filling = True
        try:
            if table is None or table.empty:
                self.picker.options = []
                self.panel.value = message_html(error or "Nothing keeps nodes out of the accelerated backends.")
                return
            self.picker.options = [(row_label(k, row), k) for k, row in enumerate(table.itertuples())]
            self.picker.value = None
            self.panel.value = table_html(table[SHOWN_COLUMNS])
        finally:
            self._filling = False

    def _picked(self, change: dict) -> None:
        if self._filling or change["new"] is None or self.table is None:
            return
        row = self.table.iloc[int(change["new"])]
        self._on_apply(row["config"], row["change"])


__all__ = ["BlockersTab", "row_label", "applied_html", "SHOWN_COLUMNS"]
