"""The Explorer's "measure latency": each shown setting measured in the worker process, in
the background, with a progress bar; a measurement is stored for its own setting, and shown
only while that setting is still shown."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

import ipywidgets as widgets

from hierviz.widget import panels
from hierviz.widget.background import BackgroundJob

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition
    from hierviz.widget.controller import Controller


class Measuring:
    """Measures the settings the Explorer shows: `start(part)` asks for `part`'s latency (one
    at a time: a newer setting's measurement waits for the one in flight, and one no longer
    wanted is dropped); when it arrives and `part` is still shown, `on_shown(part, measurement)`
    redraws what shows it, and `on_shown(part, None)` at each new stage while it runs (the
    stats line says "measuring ... (stage)"). `progress` and `progress_label` are its widgets."""

    def __init__(self, controller: "Controller", on_shown: Callable[["Partition", Any], None],
                 on_error: Callable[[Exception], None]) -> None:
        self.controller = controller
        self.on_shown = on_shown
        self.job = BackgroundJob("hierviz-measure", on_error, controller.long_work.running_here)
        self.progress = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, description="measuring",
                                              layout=widgets.Layout(display="none", width="420px"))
        self.progress_label = widgets.HTML()
        self._asked: Partition | None = None  # the setting the latest measurement was asked for

    @property
    def thread(self) -> threading.Thread:
        return self.job.thread

    @property
    def running(self) -> bool:
        return self.job.running

    def of(self, part: "Partition | None") -> Any:
        """`part`'s measurement, else None; one still in flight for it is waited for."""
        c = self.controller
        if part is not None and c.measurement_of(part) is None and self.job.running and self._asked is not None \
                and self._asked.config == part.config:
            self.job.wait()
        return c.measurement_of(part)

    def start(self, part: "Partition") -> None:
        c = self.controller
        if c.measurement_of(part) is not None:
            c.measure(part)  # the stored one (no wait): fills in this run's history row
            return
        if self._asked is not None and self._asked.config != part.config and c.measurement_of(self._asked) is None:
            c.store.forget("measurement", self._asked.config)  # replaced while waiting: it will not run
        self._asked = part
        c.store.running("measurement", part.config, "waiting for the one before" if self.job.running else "")

        def work() -> None:
            if (self._asked or part).config != part.config:
                return  # a newer setting is waiting to be measured: this one is no longer wanted
            m = self._measure(part)
            if c.store.still(part.config):
                self.on_shown(part, m)  # else it waits in the store for its own setting

        self.job.start(work)

    def _measure(self, part: "Partition") -> Any:
        bar = self.progress
        bar.value, bar.bar_style = 0.0, "info"
        bar.layout.display = None
        self.progress_label.value = ""

        def progress(stage: str, done: int, total: int) -> None:
            bar.value = max(0.0, min(1.0, done / total)) if total else 0.0
            bar.description = "measuring"
            bar.tooltip = str(stage)
            self.progress_label.value = panels.progress_label_html(stage)
            if self.controller.store.still(part.config):  # the store holds the stage now: the stats line says it
                self.on_shown(part, None)

        m = self.controller.measure(part, progress)
        if m is not None:
            bar.value = 1.0
        bar.layout.display = "none"  # done or failed: the stats line says which (a red bar said 'measuring')
        self.progress_label.value = ""
        return m


__all__ = ["Measuring"]
