"""Work the Explorer does in the background (the "compile today" line, "find fastest"): one
daemon thread per job, so the widget stays usable, and no exception lost or shown to the kernel."""

from __future__ import annotations

import threading
from typing import Callable


class BackgroundJob:
    """One kind of background work, one run at a time: `start(work)` runs `work` on a daemon
    thread named `name`; an exception it raises goes to `on_error` (a background thread must
    not die loudly). `thread` is the latest run's thread (join it to wait)."""

    def __init__(self, name: str, on_error: Callable[[Exception], None]) -> None:
        self.name = name
        self.on_error = on_error
        self.thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self, work: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                work()
            except Exception as exc:  # noqa: BLE001 - reported through on_error
                self.on_error(exc)

        self.thread = threading.Thread(target=run, name=self.name, daemon=True)
        self.thread.start()
        return self.thread


__all__ = ["BackgroundJob"]
