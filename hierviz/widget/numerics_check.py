"""The Explorer's "check numerics" button: `hv.numerics` of the shown setting (its compiles
in the worker process), in the background; the Numerics panel shows the table and the diagram
is coloured by each subgraph's error, while that setting is still shown."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from hierviz.widget import numerics_tab, panels
from hierviz.widget.background import BackgroundJob

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.widget.controller import Controller
    from hierviz.widget.error_area import ErrorArea
    from hierviz.widget.panel_views import PanelViews
    from hierviz.widget.panel_writer import PanelWriter


class NumericsCheck:
    """`start()` runs `check()` in the background; `check()` checks the shown setting and
    returns the result (None: nothing shown). `flush()` applies a control change still waiting;
    `views` redraws the diagram while the checked setting is on screen."""

    def __init__(self, controller: "Controller", errors: "ErrorArea", writer: "PanelWriter",
                 flush: Callable[[], None], views: "PanelViews") -> None:
        self.controller = controller
        self.errors = errors
        self.writer = writer
        self.flush = flush
        self.views = views
        self.job = BackgroundJob("hierviz-numerics", errors.internal_errors.append,
                                 controller.long_work.running_here)

    @property
    def thread(self) -> threading.Thread:
        return self.job.thread

    def start(self) -> None:
        self.writer.view("numerics", lambda: panels.message_html("checking numerics ..."))
        self.job.start(self.check)

    def check(self) -> Any:
        self.flush()
        c = self.controller
        part = c.shown
        result = c.check_numerics(part) if part is not None else None

        def still() -> bool:
            return part is not None and c.store.still(part.config)

        if part is not None and result is not None:
            self.views.diagram(part)
        status = c.store.status("numerics", part.config if part is not None else None)
        self.writer.view("numerics", lambda: numerics_tab.numerics_html(result, status), still)
        self.errors.show()
        return result


__all__ = ["NumericsCheck"]
