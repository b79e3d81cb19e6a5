"""The views the Explorer's helpers redraw when their work ends (the stats line, the diagram, the
history table), made from the controller's result store and the controls, and written through
the panel writer unless their setting has left the screen by then (the store's one rule). The
helpers (measuring, build engines, compile today, check numerics) are handed this, not the
Explorer's own methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from hierviz.widget import panels
from hierviz.widget.result_status import State

if TYPE_CHECKING:  # pragma: no cover
    import ipywidgets as widgets

    from hierviz.partitioner import Partition
    from hierviz.settings.config import Config
    from hierviz.widget.controller import Controller
    from hierviz.widget.error_area import ErrorArea
    from hierviz.widget.panel_writer import PanelWriter


class PanelViews:
    """`stats(config)`, `diagram(part)` and `history(config)` redraw a panel unless the setting
    (`config`; `part`'s) is no longer on screen when the view is written (None: whatever is
    shown); each says whether it wrote. `measured(part, m)` redraws what shows a measurement."""

    def __init__(self, controller: "Controller", writer: "PanelWriter", errors: "ErrorArea",
                 controls: Mapping[str, "widgets.Widget"]) -> None:
        self.controller = controller
        self.writer = writer
        self.errors = errors
        self.controls = controls

    def _still(self, config: "Config | None") -> Any:
        store = self.controller.store
        return None if config is None else (lambda: store.still(config))

    def building(self) -> bool:
        """Whether "build engines" is on."""
        return bool(self.controls["build"].value)

    def stats_html(self) -> str:
        """The stats line of the shown setting (the builds line when "build engines" is on)."""
        return self.controller.stats(bool(self.controls["measure"].value), self.building())

    def stats(self, config: "Config | None" = None) -> bool:
        return self.writer.view("stats", self.stats_html, self._still(config))

    def diagram(self, part: "Partition") -> bool:
        """`part`'s diagram as the view and focus controls say."""
        view, focus = self.controls["view"].value, (self.controls["focus"].value or "").strip() or None
        return self.writer.view("diagram", lambda: self.controller.diagram(part, view, focus),
                                self._still(part.config))

    def history(self, config: "Config | None" = None) -> bool:
        return self.writer.view("history", self.history_html, self._still(config))

    def history_html(self) -> str:
        """The history table; the latest run of a setting whose measurement runs or failed says
        so in a `latency` column after `run`, in the stats line's words ('measuring ... (stage)',
        'failed: ...')."""
        c = self.controller
        said: dict[int, str] = {}
        seen: set = set()
        for i, row in reversed(list(enumerate(c.runs))):
            key = row.get("_key")
            if key is None or key in seen:
                continue
            seen.add(key)
            status = c.store.status("measurement", key)
            if status.state in (State.RUNNING, State.FAILED):
                said[i] = status.words()
        df = c.history()  # the runs only grow: row i is run i
        if said:  # beside the run number: in view however wide the table is
            df.insert(1, "latency", [said.get(i, "") for i in range(len(df))])
        return panels.history_html(df)

    def measured(self, part: "Partition", m: Any) -> None:
        """A measurement of `part` arrived: the stats, diagram and history show it (each unless
        another setting is shown by the time it is drawn); None: it failed, or it is at a new
        stage (the stats line and the history say which)."""
        self.stats(part.config)
        if m is not None:
            self.diagram(part)
        self.history(part.config)
        self.errors.show()


__all__ = ["PanelViews"]
