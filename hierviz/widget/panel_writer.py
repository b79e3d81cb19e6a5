"""Writing the Explorer's panels from several threads without an older view replacing a newer
one.

The update that follows a control change, and the background work that finishes later (a
measurement, a build, a numerics check, the compile-today line), each redraw some of the same
panels (stats, diagram, history, numerics). A view takes a stamp before it starts making its
HTML (the Explorer's one numbering: its result store's `stamp`); its write is dropped when the
panel has since been written by a view stamped later, or when the setting it shows is no longer
the shown one (checked with the write, under one lock).
So the panel always ends with the newest view of the shown setting, whatever order the threads
finish in.
"""

from __future__ import annotations

import threading
from typing import Callable, Mapping

import ipywidgets as widgets


class PanelWriter:
    """`stamp()` before making a view; `write(name, html, stamp, still)` puts it in panel
    `name` unless a later-stamped view was written there, or `still()` (the view's setting is
    still shown) is false. `written` counts the writes made, `dropped` those refused."""

    def __init__(self, panels: Mapping[str, widgets.HTML], stamp: Callable[[], int]) -> None:
        self.panels = panels
        self._lock = threading.Lock()
        self.stamp = stamp  # the Explorer's one numbering (its result store's)
        self._last: dict[str, int] = {}
        self.written = 0
        self.dropped = 0

    def write(self, name: str, value: str, stamp: int, still: Callable[[], bool] | None = None) -> bool:
        """Whether `value` was written to panel `name`."""
        with self._lock:
            if stamp < self._last.get(name, 0) or (still is not None and not still()):
                self.dropped += 1
                return False
            self._last[name] = stamp
            self.panels[name].value = value
            self.written += 1
            return True

    def view(self, name: str, make: Callable[[], str], still: Callable[[], bool] | None = None) -> bool:
        """Stamp, make the view (outside the lock: drawing takes time) and write it."""
        stamp = self.stamp()
        return self.write(name, make(), stamp, still)


__all__ = ["PanelWriter"]
