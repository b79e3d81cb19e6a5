"""The Explorer's "build engines" toggle: with it on, the shown setting's TensorRT engines are
converted and built in the worker process, in the background (seconds to minutes); then, while
that setting is still shown, the stats and the diagram show each engine built or failed."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from hierviz.widget.background import BackgroundJob

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.widget.controller import Controller
    from hierviz.widget.error_area import ErrorArea
    from hierviz.widget.panel_views import PanelViews


class BuildToggle:
    """`start()` builds the shown setting's engines when "build engines" is on (`views.building()`)
    and they are not built yet; then, while that setting is on screen, `views` redraws the stats
    and the diagram."""

    def __init__(self, controller: "Controller", errors: "ErrorArea", views: "PanelViews") -> None:
        self.controller = controller
        self.errors = errors
        self.views = views
        self.job = BackgroundJob("hierviz-build", errors.internal_errors.append, controller.long_work.running_here)

    @property
    def thread(self) -> threading.Thread:
        return self.job.thread

    def start(self) -> None:
        c = self.controller
        shown = c.shown
        if shown is None or not self.views.building() or c.builds_of(shown) is not None:
            return

        def work() -> None:
            got = c.build(shown)
            if not c.store.still(shown.config):
                return
            self.views.stats(shown.config)
            if got is not None:
                self.views.diagram(shown)
            self.errors.show()

        self.job.start(work)


__all__ = ["BuildToggle"]
