"""The Explorer's "find fastest": a small `hv.tune` from the shown settings, in the worker
process, in the background (the widget stays usable); its best setting is offered by the
"apply best" button."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from hierviz.errors import ConfigError, HiervizError
from hierviz.settings.config import Config
from hierviz.widget import panels
from hierviz.widget.background import BackgroundJob
from hierviz.widget.worker import WorkerError

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.compare.tune_result import TuneResult
    from hierviz.widget.error_area import ErrorArea
    from hierviz.widget.long_work import LongWork

BUDGET = 8  # settings the "find fastest" button measures
MEASURE = {"warmup": 2, "iters": 10}  # each setting's measurement, unless tune options say otherwise


class FastestSearch:
    """One Explorer's searches: `start(base, budget)` runs one (not two at once); `result` is
    the latest TuneResult (None while searching or after a failure, which `panel` shows);
    `best()` is its best setting. A WorkerError is also filed in the error area."""

    def __init__(self, long_work: "LongWork", panel: widgets.HTML, apply_button: widgets.Button,
                 errors: "ErrorArea") -> None:
        self.long_work = long_work
        self.panel = panel
        self.apply_button = apply_button
        self.errors = errors
        self.job = BackgroundJob("hierviz-find-fastest", self._failed, long_work.running_here)
        self.result: TuneResult | None = None

    def start(self, base: Config | None, budget: int = BUDGET, *, wait: bool = False,
              **tune_options: Any) -> threading.Thread:
        if self.job.running:
            self.panel.value = panels.fastest_html(None, "a search is already running")
            return self.job.thread
        if base is None:
            raise ConfigError("the shown settings are invalid; fix them before searching from them.")
        options = {"measure": dict(MEASURE), **tune_options}  # the search's own: the default is never shared
        self.result = None
        self.apply_button.disabled = True
        self.panel.value = panels.fastest_html(None, f"searching (up to {budget} settings) ...")
        long_work = self.long_work

        def work() -> None:
            try:
                result = long_work.tune(base, budget, **options)  # in the worker process
            except HiervizError as exc:
                self.panel.value = panels.fastest_html(None, f"the search failed: {exc}", long_work.notes.get("tune"))
                if isinstance(exc, WorkerError):  # the error area says so too
                    self.errors.say("worker", str(exc))
                return
            self.errors.messages.pop("worker", None)
            self.result = result
            self.apply_button.disabled = result.best is None
            self.panel.value = panels.fastest_html(result, note=long_work.notes.get("tune"))

        thread = self.job.start(work)
        if wait:
            thread.join()
        return thread

    def shown(self, config: Config) -> None:
        """Another setting is on screen: the last search's line stays only while it is the setting
        searched from or the best found; else a short note says what "apply best" still sets."""
        result = self.result
        if result is None or self.job.running or config in (result.default, result.best):
            return
        best = result.best
        self.panel.value = panels.message_html(
            "the last search was from other settings" + (f"; apply best sets its best: {best.label()}"
                                                         if best is not None else ""))

    def best(self) -> Config:
        """The best setting of the latest search (ConfigError: none yet)."""
        if self.result is None or self.result.best is None:
            raise ConfigError("no fastest setting yet: press 'find fastest' first and wait for it to finish.")
        return self.result.best

    def _failed(self, exc: Exception) -> None:
        self.errors.internal_errors.append(exc)
        self.panel.value = panels.fastest_html(None, f"unexpected {type(exc).__name__}: {exc}")


__all__ = ["BUDGET", "FastestSearch"]
