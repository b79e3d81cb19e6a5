"""The Explorer's "find fastest": a small `hv.tune` from the shown settings, in the worker
process, in the background (the widget stays usable); its result is kept in the Explorer's
result store under the setting searched from, and its best setting is offered by the "apply
best" button."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from hierviz.errors import ConfigError, HiervizError
from hierviz.settings.config import Config
from hierviz.widget import panels
from hierviz.widget.background import BackgroundJob
from hierviz.widget.result_status import State
from hierviz.widget.worker import WorkerError

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.compare.tune_result import TuneResult
    from hierviz.widget.error_area import ErrorArea
    from hierviz.widget.long_work import LongWork
    from hierviz.widget.result_store import ResultStore

BUDGET = 8  # settings the "find fastest" button measures
MEASURE = {"warmup": 2, "iters": 10}  # each setting's measurement, unless tune options say otherwise


class FastestSearch:
    """One Explorer's searches: `start(base, budget)` runs one (not two at once), kept in the
    Explorer's result store under the setting searched from (`searched`), with its status;
    `result` is the latest search's TuneResult (None while searching or after a failure, which
    `panel` shows); `best()` is its best setting. A WorkerError is also filed in the error area."""

    def __init__(self, long_work: "LongWork", store: "ResultStore", panel: widgets.HTML,
                 apply_button: widgets.Button, errors: "ErrorArea") -> None:
        self.long_work = long_work
        self.store = store
        self.panel = panel
        self.apply_button = apply_button
        self.errors = errors
        self.job = BackgroundJob("hierviz-find-fastest", self._failed, long_work.running_here)
        self.searched: Config | None = None  # the setting the latest search started from

    @property
    def result(self) -> "TuneResult | None":
        searched = self.searched
        if searched is None or self.store.status("search", searched).state is not State.DONE:
            return None
        return self.store.get("search", searched)

    def start(self, base: Config | None, budget: int = BUDGET, *, wait: bool = False,
              **tune_options: Any) -> threading.Thread:
        if self.job.running:
            self.panel.value = panels.fastest_html(None, "a search is already running")
            return self.job.thread
        if base is None:
            raise ConfigError("the shown settings are invalid; fix them before searching from them.")
        options = {"measure": dict(MEASURE), **tune_options}  # the search's own: the default is never shared
        self.searched = base
        self.store.running("search", base)
        self.apply_button.disabled = True
        self.panel.value = panels.fastest_html(None, f"searching (up to {budget} settings) ...")
        long_work = self.long_work

        def work() -> None:
            try:
                result = long_work.tune(base, budget, **options)  # in the worker process
            except HiervizError as exc:
                self.store.failed("search", base, str(exc))
                self.panel.value = panels.fastest_html(None, f"the search failed: {exc}", long_work.notes.get("tune"))
                if isinstance(exc, WorkerError):  # the error area says so too
                    self.errors.say("worker", str(exc))
                return
            self.errors.messages.pop("worker", None)
            self.store.put("search", base, result)
            self.apply_button.disabled = result.best is None
            self.panel.value = self._line(result)

        thread = self.job.start(work)
        if wait:
            thread.join()
        return thread

    def shown(self) -> None:
        """Another setting is on screen: the panel says what the latest search means for it
        (`_line`); a search still running keeps saying so."""
        if self.searched is None or self.job.running:
            return
        self.panel.value = self._line(self.result)

    def _line(self, result: "TuneResult | None") -> str:
        """The search's line while the setting on screen is the one searched from or the best
        found (the store's rule), else a short note of what "apply best" still sets; nothing of a
        failed search once another setting is shown (the store drops the failure)."""
        note = self.long_work.notes.get("tune")
        if result is None:
            failed = self.store.failure("search", self.searched) if self.store.still(self.searched) else None
            return panels.fastest_html(None, "" if failed is None else f"the search failed: {failed.error}", note)
        best = result.best
        if self.store.still(self.searched) or self.store.still(best):
            return panels.fastest_html(result, note=note)
        return panels.message_html("the last search was from other settings"
                                   + (f"; apply best sets its best: {best.label()}" if best is not None else ""))

    def best(self) -> Config:
        """The best setting of the latest search (ConfigError: none yet)."""
        result = self.result
        if result is None or result.best is None:
            raise ConfigError("no fastest setting yet: press 'find fastest' first and wait for it to finish.")
        return result.best

    def _failed(self, exc: Exception) -> None:
        self.errors.internal_errors.append(exc)
        self.panel.value = panels.fastest_html(None, f"unexpected {type(exc).__name__}: {exc}")


__all__ = ["BUDGET", "FastestSearch"]
