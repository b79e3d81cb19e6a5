"""The Explorer's small controls, each refusing what it cannot take (hierviz.widget.refusing): the
op-name tags, the toggles, the focus box, the min_block_size slider and box, the choice buttons."""

from __future__ import annotations

import numbers
from typing import Any

import ipywidgets as widgets
import traitlets

from hierviz.errors import ConfigError
from hierviz.foundation.opnames import normalize
from hierviz.settings.setting_values import parse_bool
from hierviz.widget.refusing import AnyValue, Refusing


OPS_HINT = ("type an op as Partition.ops() lists it, short ('topk', 'aten.topk.default') or qualified "
            "('torch.ops.aten.topk.default'), then Enter or Tab")


class TagsInput(Refusing, widgets.TagsInput):
    """A TagsInput whose `allowed_tags` (when given) drive the autocomplete in the browser but do
    not reject other values set from Python: those reach Config, and its error is shown in the
    widget. With `ops`, each op name is resolved as Config resolves it (opnames.normalize: 'topk',
    'aten.topk.default', packets and overloads) and written qualified; a name it cannot resolve is
    refused with its message and what to type, keeping the tags there were."""

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
            if self.ops:
                try:
                    tag = normalize(tag)
                except ConfigError as exc:
                    return self.refuse(f"{str(exc).rstrip('.')}. In the op box, {OPS_HINT}; kept {list(self.value)}.")
                if tag in out:  # picked twice: one tag
                    continue
            out.append(tag)
        return out


class OpPick:
    """A picker beside the op box offering the graph's ops (its browser autocomplete): a name
    picked or typed there, then Enter or Tab, is added to the box's tags (which resolve or
    refuse it) and the picker is emptied."""

    def __init__(self, picker: widgets.Combobox, tags: TagsInput) -> None:
        self.picker, self.tags = picker, tags
        picker.observe(self._picked, names="value")

    def _picked(self, change: dict) -> None:
        name = (change["new"] or "").strip()
        if not name:
            return
        before = list(self.tags.value)
        self.tags.value = before + [name]
        if list(self.tags.value) != before:  # taken: the picker is ready for the next
            self.picker.value = ""


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


SLIDER_TOP = 30  # the slider's last step on a large graph: each of 1..30 is a step a drag or an arrow key reaches


class BlockSizeSlider(Refusing, widgets.IntSlider):
    """The min_block_size slider, 1..min(nodes, SLIDER_TOP): whole numbers in [min, max]; anything
    else is refused with a message (the plain IntSlider clamps 0 to 1 and truncates 2.7 to 2
    without a word). Larger values are typed in the box beside it (BlockSizeBox)."""

    value = AnyValue(1).tag(sync=True)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> int:
        return whole_in_range(self, proposal["value"], where="the slider's range",
                              beyond="type it in the box beside it")


class BlockSizeBox(Refusing, widgets.BoundedIntText):
    """The number box beside the slider: the setting's value, any whole number from 1 to the
    graph's node count (the slider's own range is shorter on a large graph)."""

    value = AnyValue(1).tag(sync=True)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> int:
        return whole_in_range(self, proposal["value"])


def whole_in_range(w: Any, value: Any, where: str = "the range", beyond: str = "") -> int:
    """`value` as an int when it is a whole number in w.min..w.max, else refused with a message
    (`beyond`: where a larger value can be set instead)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return w.refuse(f"min_block_size must be a whole number from {w.min} to {w.max}, not "
                         f"{type(value).__name__} {value!r}; kept {w.value}.")
    if not w.min <= value <= w.max:
        if value > w.max:
            beyond = beyond or f"larger values: hv.partition(..., min_block_size={value})"
            hint = f" ({beyond[0].upper()}{beyond[1:]}.)"
        else:
            hint = ""
        return w.refuse(f"min_block_size {value} is outside {where} {w.min}..{w.max}; kept {w.value}.{hint}")
    return int(value)


class BlockSizePair:
    """The slider and the box kept in step: the slider moves the box; the box moves the slider
    (to its end for a value past it), without that move coming back to the box."""

    def __init__(self, slider: BlockSizeSlider, box: BlockSizeBox) -> None:
        self.slider, self.box = slider, box
        self._moving = False
        slider.observe(self._from_slider, names="value")
        box.observe(self._from_box, names="value")

    def _from_slider(self, change: dict) -> None:
        if not self._moving:
            self.box.value = change["new"]

    def _from_box(self, change: dict) -> None:
        self._moving = True
        try:
            self.slider.value = min(change["new"], self.slider.max)
        finally:
            self._moving = False


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
