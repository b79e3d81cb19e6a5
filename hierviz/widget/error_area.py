"""The Explorer's error area: its messages by kind (partition, control, measure, export,
worker, blockers, action, internal, ...), shown together in one panel, and the guard every
callback of the Explorer goes through (guard.py), which files what a callback raised there."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from hierviz.widget import panels
from hierviz.widget.guard import guarded

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition
    from hierviz.widget.panel_writer import PanelWriter


class ErrorArea:
    """`messages` (kind -> message; the controller's, so its own errors land there too) shown
    in the "error" panel (through `writer`: the threads that show it never put an older view
    over a newer one), with which settings the panels still show (`shown()`) while the current ones
    are invalid. `guard(fn)` wraps a callback: what it raises is filed under "action" (a
    HiervizError whose message is not already shown) or "internal" (a bug, also kept in
    `internal_errors`), and the area is redrawn after every call."""

    def __init__(self, messages: dict[str, str], writer: "PanelWriter", shown: Callable[[], "Partition | None"],
                 internal_errors: list[BaseException]) -> None:
        self.messages = messages
        self.writer = writer
        self.shown = shown
        self.internal_errors = internal_errors

    def show(self) -> None:
        self.writer.view("error", lambda: panels.errors_html(dict(self.messages), self.shown()))

    def say(self, kind: str, message: str) -> None:
        """File `message` under `kind` and show the area."""
        self.messages[kind] = message
        self.show()

    def guard(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return guarded(fn, "Explorer", self.internal_errors, self._file, after=self.show)

    def refuse(self, message: str) -> None:
        """A control refused a value: say so (until the next change)."""
        self.messages["control"] = message
        guarded(self.show, "Explorer", self.internal_errors, self._file)()

    def _file(self, message: str, internal: bool) -> None:
        if internal:
            self.messages["internal"] = message
        elif message not in self.messages.values():  # export and measure file their own
            self.messages["action"] = message


__all__ = ["ErrorArea"]
