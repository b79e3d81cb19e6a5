"""The Explorer's small controls, each refusing what it cannot take (hierviz.widget.refusing): the
op-name tags, the toggles, the focus box, the min_block_size slider and box, the choice buttons."""

from __future__ import annotations

import numbers
from typing import Any

import ipywidgets as widgets
import traitlets

from hierviz.errors import ConfigError
from hierviz.settings.setting_values import parse_bool
from hierviz.widget.refusing import AnyValue, Refusing


class TagsInput(Refusing, widgets.TagsInput):
    """A TagsInput whose `allowed_tags` drive the autocomplete in the browser but do not reject
    other values set from Python: those reach Config, and its error is shown in the widget.
    Op names are written the way Config normalises them ('aten.add.Tensor' -> qualified)."""

    value = AnyValue([]).tag(sync=True)
    ops = traitlets.Bool(False)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> list[str]:
        value = proposal["value"]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple, set, frozenset)):
            return self.refuse(f"{self.what} takes a list of names, not {type(value).__name__} {value!r}; "
                                f"kept {list(self.value)}.")
        out = []
        for tag in value:
            if not isinstance(tag, str):  # Config says what is wrong with it
                out.append(tag)
                continue
            tag = tag.strip()
            if not tag:
                continue
            if self.ops and tag.startswith("aten."):
                tag = "torch.ops." + tag
            out.append(tag)
        return out


class Toggle(Refusing, widgets.ToggleButton):
    """A toggle button that refuses anything but True and False."""

    value = AnyValue(False).tag(sync=True)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> bool:
        try:
            return parse_bool(self.what, proposal["value"])  # Config's rule for a bool field
        except ConfigError as exc:
            return self.refuse(f"{str(exc).rstrip('.')}; kept {self.value}.")


class FocusBox(Refusing, widgets.Combobox):
    """The focus picker: text (a node name or subgraph tag); None clears it."""

    value = AnyValue("").tag(sync=True)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> str:
        value = proposal["value"]
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        return self.refuse(f"focus takes a node name or subgraph tag (text), not {type(value).__name__} "
                            f"{value!r}; kept {self.value!r}.")


class BlockSizeSlider(Refusing, widgets.IntSlider):
    """The min_block_size slider: whole numbers in [min, max]; anything else is refused with a
    message (the plain IntSlider clamps 0 to 1 and truncates 2.7 to 2 without a word)."""

    value = AnyValue(1).tag(sync=True)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> int:
        return whole_in_range(self, proposal["value"])


class BlockSizeBox(Refusing, widgets.BoundedIntText):
    """The number box beside the slider, with the same rule."""

    value = AnyValue(1).tag(sync=True)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> int:
        return whole_in_range(self, proposal["value"])


def whole_in_range(w: Any, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return w.refuse(f"min_block_size must be a whole number from {w.min} to {w.max}, not "
                         f"{type(value).__name__} {value!r}; kept {w.value}.")
    if not w.min <= value <= w.max:
        hint = f" (Larger values: hv.partition(..., min_block_size={value}).)" if value > w.max else ""
        return w.refuse(f"min_block_size {value} is outside the slider's range {w.min}..{w.max}; kept "
                         f"{w.value}.{hint}")
    return int(value)


class Choice(Refusing, widgets.ToggleButtons):
    """Toggle buttons for a fixed set of options (the view; diff against previous / pinned):
    any other value (None included) is refused with the list of options."""

    value = AnyValue(None)  # None too reaches the check below

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> Any:
        value = proposal["value"]
        options = [o[1] if isinstance(o, tuple) else o for o in self.options]
        if value in options:
            return value
        return self.refuse(f"{self.what} must be one of {', '.join(map(str, options))}, not {value!r}; "
                            f"kept {self.value!r}.")
