"""ControlKind: how one kind of the Explorer's setting controls (controls.KINDS: backends,
support, slider, ops, toggle, choice) is made, read and shown."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import ipywidgets as widgets


class ControlKind(NamedTuple):
    """How a kind of control is made, read and shown."""

    make: Callable[..., widgets.Widget]  # (setting name, control, value, building) -> its widget
    read: Callable[[Any, dict], Any]  # (widget, values read so far) -> the setting's value
    show: Callable[[Any, Any], Any]  # (widget, the setting's value) -> the widget's value


__all__ = ["ControlKind"]
