"""What the Explorer's Blockers tab does: find the shown partition's blockers in the worker,
in the background, for each setting shown (the tab lists them; the selection panel says what
blocks the most and marks it in the diagram: both read the one table in the controller's store);
apply a row as a what-if (the controls take its setting); and go back to the setting from before
the first what-if. The tab's widgets and HTML are blockers_tab.py's."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from hierviz.errors import ConfigError, HiervizError
from hierviz.settings.config import Config
from hierviz.widget import blockers_tab
from hierviz.widget.background import BackgroundJob
from hierviz.widget.blockers_tab import BlockersTab
from hierviz.widget.result_status import State

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from hierviz.partitioner import Partition
    from hierviz.widget.controller import Controller
    from hierviz.widget.error_area import ErrorArea


class BlockersWhatIf:
    """The Blockers tab's work for one Explorer. `tab` is the tab (its row callbacks go through
    `errors.guard`); `is_open()` says whether the tab shows; `flush()` applies a control change
    still waiting; `show_config(config)` sets the controls to a setting, re-partitioning once.
    `what_if`: (the setting before the first what-if, its partition, the change applied last),
    or None. `listeners` are called when a table for the setting on screen is made or fails."""

    def __init__(self, controller: "Controller", errors: "ErrorArea", is_open: Callable[[], bool],
                 flush: Callable[[], None], show_config: Callable[[Config], None]) -> None:
        self.controller = controller
        self.errors = errors
        self.is_open = is_open
        self.flush = flush
        self.show_config = show_config
        self.tab = BlockersTab(errors.guard(self.apply), errors.guard(self.undo))
        self.job = BackgroundJob("hierviz-blockers", errors.internal_errors.append,
                                 controller.long_work.running_here)
        self.what_if: tuple[Config, Partition | None, str] | None = None
        self.listeners: list[Callable[[], None]] = []

    @property
    def thread(self) -> threading.Thread:
        return self.job.thread

    def table(self) -> "pd.DataFrame | None":
        """`blockers()` of the shown partition (made in the worker; the tab's own request in
        flight is waited for); the tab, when open, shows it now."""
        self.flush()
        self.job.wait()
        table = self.controller.blockers_of(self.controller.partition)
        self.refresh()
        return table

    def refresh(self) -> None:
        """Make the shown partition's table in the worker, in the background, unless it is made or
        failed for this setting (every what-if re-partitions); and the tab for it, while it is open
        (it fills in when the table is made)."""
        c = self.controller
        part = c.partition
        table = c.blockers_of(part, compute=False)
        status = c.store.status("blockers", None if part is None else part.config)
        if part is not None and table is None and status.state is not State.FAILED:
            self.job.start(lambda: self._make(part))
        if not self.is_open():
            return
        if part is not None and table is None:
            self.tab.show(part, None, status.error if status.state is State.FAILED else
                          "finding what keeps nodes out of TensorRT (in the worker) ...")
        else:
            self.tab.show(part, table, self.errors.messages.get("partition", ""))
        if self.what_if is not None:
            before_cfg, before, change = self.what_if
            self.tab.banner.value = blockers_tab.applied_html(change, before, part, before_cfg)

    def _make(self, part: "Partition") -> None:
        """The background work: `part`'s table made once (skipped when its setting has left the
        screen: the new setting's work follows), then the tab and the listeners told."""
        c, key = self.controller, part.config
        if c.blockers_of(part, compute=False) is None:
            if not c.store.still(key):
                return
            c.store.running("blockers", key)
            try:
                c.blockers_of(part)
            except HiervizError as exc:
                c.store.failed("blockers", key, str(exc))
                self.errors.say("blockers", str(exc))
            finally:
                if c.store.status("blockers", key).state is State.RUNNING:  # neither made nor failed
                    c.store.forget("blockers", key)
        if c.store.still(key):
            self.refresh()
            for listener in self.listeners:
                listener()

    def apply_row(self, row: Any) -> Config:
        """Apply row `row` of the table as a what-if; returns its setting."""
        table = self.table()
        if table is None or isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < len(table):
            last = len(table) - 1 if table is not None else -1
            raise ConfigError(f"apply_blocker takes a row number of .blockers (0 to {last}), not {row!r}.")
        config, change = table.iloc[row]["config"], table.iloc[row]["change"]
        self.apply(config, change)
        return config

    def apply(self, config: Config, change: str) -> None:
        """The controls take `config` (what-if `change`); the setting from before the first
        what-if is kept for `undo`."""
        self.flush()
        c = self.controller
        if self.what_if is None and c.config is not None:
            self.what_if = (c.config, c.partition, change)
        elif self.what_if is not None:
            self.what_if = (self.what_if[0], self.what_if[1], change)
        self.show_config(config)
        self.tab.back.disabled = self.what_if is None
        self.refresh()

    def undo(self) -> Config | None:
        """Back to the setting from before the first what-if; returns it (None: no what-if)."""
        if self.what_if is None:
            return None
        before = self.what_if[0]
        self.what_if = None
        self.tab.banner.value = ""
        self.tab.back.disabled = True
        self.show_config(before)
        return before


__all__ = ["BlockersWhatIf"]
