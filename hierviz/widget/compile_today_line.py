"""The Explorer's "torch_tensorrt.compile today" line: what upstream's partitioner does with
the shown settings, made in the worker process in the background (it takes up to seconds) and
shown in the stats panel while those settings are still shown."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

from hierviz.errors import HiervizError
from hierviz.widget.background import BackgroundJob

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition
    from hierviz.partitioner.upstream.todays_compile import TodaysCompile
    from hierviz.widget.controller import Controller
    from hierviz.widget.error_area import ErrorArea
    from hierviz.widget.panel_views import PanelViews


class CompileTodayLine:
    """`start()` makes the line of the shown setting unless it is made, then redraws the stats
    line through `views` while that setting is still on screen."""

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
        shown = self.controller.shown
        long_work = self.controller.long_work
        if shown is None or long_work.made(shown) is not None:
            return

        def still() -> bool:
            return self.controller.store.still(shown.config)

        def work() -> None:
            got = self._make(shown, still)
            if got is not None and self.views.stats(shown.config):
                self.errors.show()

        self.job.start(work)

    def _make(self, shown: "Partition", still: Callable[[], bool]) -> "TodaysCompile | None":
        long_work = self.controller.long_work
        try:
            got = long_work.make_line(shown, still)
            if got is not None:
                self.errors.messages.pop("worker", None)
            return got
        except HiervizError as exc:  # the worker failed: the line says so; the next change tries again
            self.errors.messages["worker"] = str(exc)
            return long_work.line(shown)


__all__ = ["CompileTodayLine"]
