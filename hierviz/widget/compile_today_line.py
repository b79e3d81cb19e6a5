"""The Explorer's "torch_tensorrt.compile today" line: what Torch-TensorRT's partitioner does
with the shown settings, made in the worker process in the background (it takes up to seconds),
kept in the result store under its setting (with its status: computing, or failed with the
error) and shown in the stats panel while that setting is still shown."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

from hierviz.errors import HiervizError
from hierviz.widget.background import BackgroundJob

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition
    from hierviz.widget.controller import Controller
    from hierviz.widget.error_area import ErrorArea
    from hierviz.widget.panel_views import PanelViews


class CompileTodayLine:
    """`start()` puts the line of the shown setting in the controller's store: at once when the
    process-wide cache has it, else made in the worker in the background; then redraws the stats
    line through `views` while that setting is still on screen (the store's rule)."""

    def __init__(self, controller: "Controller", errors: "ErrorArea", views: "PanelViews") -> None:
        self.controller = controller
        self.errors = errors
        self.views = views
        self.job = BackgroundJob("hierviz-compile-today", errors.internal_errors.append,
                                 controller.long_work.running_here)

    @property
    def thread(self) -> threading.Thread:
        return self.job.thread

    def start(self) -> None:
        c = self.controller
        shown = c.shown
        if shown is None or c.store.get("compile_today", shown.config) is not None:
            return
        if c.long_work.made(shown) is not None:  # made before (another Explorer, the report): no thread
            c.compile_today_line(shown)
            self.views.stats(shown.config)
            return
        config = shown.config

        def work() -> None:
            self._make(shown, lambda: c.store.still(config))
            if self.views.stats(config):  # the line, or its failure (the store has either)
                self.errors.show()

        self.job.start(work)

    def _make(self, shown: "Partition", still: Callable[[], bool]) -> None:
        try:
            if self.controller.compile_today_line(shown, still) is not None:
                self.errors.messages.pop("worker", None)
        except HiervizError as exc:  # the worker failed: the store keeps it as the line's failed status
            self.errors.messages["worker"] = str(exc)


__all__ = ["CompileTodayLine"]
