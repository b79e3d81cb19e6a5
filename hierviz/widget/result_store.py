"""The Explorer's results in one store keyed by the setting (the Config on screen): partitions,
pictures, tables, measurements, builds, numerics checks, diffs, blockers tables, the
"torch_tensorrt.compile today" line and "find fastest" searches (keyed by the setting searched
from), each with its status (result_status.py). What the screen shows is read from here: the
partition of the shown setting is `get("partition", shown)` (the process-wide partition cache,
compare/partition_cache.py, stays the source beneath it).

One rule says whether a result is still for the setting on screen (`still(config)`: the
Config equals the shown one), and one numbering (`stamp()`) orders every view written to a
panel, so a view made earlier never replaces a newer one, whichever thread finishes first.
Showing another setting (`show`) drops what belonged to the old one and is not a result: a
failure's status (its message is no longer about the screen). Results themselves are kept
(bounded per kind), so going back to a setting is instant.
"""

from __future__ import annotations

import threading
from typing import Any, Hashable

from hierviz.compare.partition_cache import BoundedCache
from hierviz.settings.config import Config
from hierviz.widget.result_status import State, Status

KINDS = ("partition", "picture", "tables", "measurement", "build", "numerics", "diff", "blockers", "compile_today",
         "search")


class ResultStore:
    """`get`/`put` a result of `kind` for a setting (`detail`: what else tells two results of one
    setting apart: the view and focus of a picture, the other side of a diff); `status` /
    `running` / `failed` its state; `show(config)` the setting on screen; `still(config)`."""

    def __init__(self, cache_size: int) -> None:
        self._lock = threading.RLock()
        self._results = {kind: BoundedCache(cache_size) for kind in KINDS}
        self._status: dict[tuple[str, Config], Status] = {}
        self._stamps = 0
        self.shown: Config | None = None

    # ------------------------------------------------------------------ the setting on screen
    def show(self, config: Config) -> bool:
        """`config` is on screen now; whether it changed (then the old setting's failures go)."""
        with self._lock:
            if config == self.shown:
                return False
            self.shown = config
            for key, status in list(self._status.items()):
                if key[1] != config and status.state is State.FAILED:
                    del self._status[key]
            return True

    def shown_result(self, kind: str) -> Any:
        """The result of `kind` for the setting on screen (None: none, or nothing shown)."""
        shown = self.shown
        return None if shown is None else self.get(kind, shown)

    def still(self, config: Config | None) -> bool:
        """Whether a result for `config` is for the setting on screen (the one rule)."""
        with self._lock:
            return config is not None and config == self.shown

    def stamp(self) -> int:
        """The next number of the one numbering every view and drawing takes when it starts."""
        with self._lock:
            self._stamps += 1
            return self._stamps

    # ------------------------------------------------------------------ results
    def get(self, kind: str, config: Config, detail: Hashable = None) -> Any:
        return self._results[kind].get((config, detail))

    def put(self, kind: str, config: Config, value: Any, detail: Hashable = None) -> Any:
        """Keep `value`; for the kinds with a status, it is done."""
        self._results[kind].put((config, detail), value)
        with self._lock:
            if (kind, config) in self._status:
                self._status[(kind, config)] = Status(kind, State.DONE)
        return value

    def sizes(self) -> dict[str, int]:
        return {kind: len(cache) for kind, cache in self._results.items()}

    # ------------------------------------------------------------------ statuses
    def status(self, kind: str, config: Config | None) -> Status:
        """What the panels say about `kind` for `config`."""
        if config is None:
            return Status(kind)
        with self._lock:
            got = self._status.get((kind, config))
        if got is not None:
            return got
        return Status(kind, State.DONE) if self.get(kind, config) is not None else Status(kind)

    def failure(self, kind: str, config: Config | None) -> Status | None:
        """The failed status of `kind` for `config` (its error), else None."""
        if config is None:
            return None
        with self._lock:
            got = self._status.get((kind, config))
        return got if got is not None and got.state is State.FAILED else None

    def running(self, kind: str, config: Config, stage: str = "") -> None:
        with self._lock:
            self._status[(kind, config)] = Status(kind, State.RUNNING, stage=stage)

    def failed(self, kind: str, config: Config, error: str) -> None:
        with self._lock:
            self._status[(kind, config)] = Status(kind, State.FAILED, error=error)

    def forget(self, kind: str, config: Config) -> None:
        """No status for `kind` of `config` (a run dropped before it started)."""
        with self._lock:
            self._status.pop((kind, config), None)


__all__ = ["KINDS", "ResultStore"]
