"""The Explorer's "build engines" toggle: with it on, the shown setting's TensorRT engines are
converted and built in the worker process, in the background (seconds to minutes); then, while
that setting is still shown, the stats and the diagram show each engine built or failed."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

from hierviz.widget.background import BackgroundJob

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition
    from hierviz.widget.controller import Controller
    from hierviz.widget.error_area import ErrorArea


class BuildToggle:
    """`start()` builds the shown setting's engines when `is_on()` and they are not built yet;
    `show_stats(still)` and `redraw(part, still)` redraw the stats and the diagram unless
    `still()` is false by then."""

    def __init__(self, controller: "Controller", errors: "ErrorArea", is_on: Callable[[], bool],
                 show_stats: Callable[[Callable[[], bool]], bool],
                 redraw: Callable[["Partition", Callable[[], bool]], None]) -> None:
        self.controller = controller
        self.errors = errors
        self.is_on = is_on
        self.show_stats = show_stats
        self.redraw = redraw
        self.job = BackgroundJob("hierviz-build", errors.internal_errors.append, controller.long_work.running_here)

    @property
    def thread(self) -> threading.Thread:
        return self.job.thread

    def start(self) -> None:
        c = self.controller
        shown = c.shown
        if shown is None or not self.is_on() or c.builds_of(shown) is not None:
            return

        def still() -> bool:
            return c.store.still(shown.config)

        def work() -> None:
            got = c.build(shown)
            if not still():
                return
            self.show_stats(still)
            if got is not None:
                self.redraw(shown, still)
            self.errors.show()

        self.job.start(work)


__all__ = ["BuildToggle"]
