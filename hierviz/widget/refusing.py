"""The rule every Explorer control follows: a value it cannot take, set from Python, is refused
with a message to `on_refused` (the Explorer's error area), keeping the current value, so no
`TraitError` reaches a notebook cell (`Refusing`, with `AnyValue`, the trait that lets every
value, None included, reach the widget's own check)."""

from __future__ import annotations

from typing import Any, Callable

import traitlets

Refused = Callable[[str], None]


class AnyValue(traitlets.Any):
    """Any value, None included, goes through the widget's own check (traitlets.Any lets None
    through unchecked)."""

    allow_none = False


class Refusing:
    """Mixin: a value the widget cannot take is refused with a message to `on_refused`,
    keeping the current value, instead of raising TraitError (or clamping silently)."""

    on_refused: Refused | None = None
    what = "value"
    value: Any  # the widget's own trait (this mixin comes before an ipywidgets class)

    def refuse(self, message: str) -> Any:
        if self.on_refused is not None:
            self.on_refused(message)
        return self.value
