"""The Explorer's support picker: one dropdown per backend choosing its support source (the
presets of hierviz.support.sources, or the Support object the Explorer was given: 'custom'), and
the Config.support mapping the choices describe."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import ipywidgets as widgets
import traitlets

from hierviz.errors import ConfigError
from hierviz.settings.setting_values import BUILTIN_BACKENDS
from hierviz.support import sources as support_mod
from hierviz.widget.refusing import AnyValue, Refusing

# Support sources the picker offers: key -> (label, factory): "default" (Config's None:
# tensorrt = validated converters, inductor = no ops), then hierviz.support.sources.SOURCES.
SUPPORT_CHOICES: dict[str, tuple[str, Callable[[], Any] | None]] = {
    "default": ("default", None), **support_mod.SOURCES}
CUSTOM = "custom"


def support_choice(sup: Any) -> str:
    """The support picker's choice for a Support object (e.g. from a tuned Config), or
    'custom' when it is none of the presets."""
    for key, (_, factory) in SUPPORT_CHOICES.items():
        if factory is not None and factory() == sup:
            return key
    return CUSTOM


def backend_choice(backend: str, sup: Any) -> str:
    """The support picker's choice for one backend's Config.support entry: None is a built-in
    backend's default (a backend of our own has none: 'custom'), else `support_choice`."""
    if sup is None:
        return "default" if backend in BUILTIN_BACKENDS else CUSTOM
    return support_choice(sup)


def custom_label(sup: Any) -> str:
    """The dropdown label of a backend's 'custom' choice."""
    return f"custom: {getattr(sup, 'description', '?')}"


class SupportPicker(Refusing, widgets.HBox):
    """One dropdown per backend choosing its support source. `.value` maps backend -> choice
    key (see SUPPORT_CHOICES; 'custom' is the Support object the Explorer was given)."""

    value = AnyValue({})

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> dict:
        value = proposal["value"]
        if value is None:
            return {}
        if isinstance(value, Mapping):
            known = [*SUPPORT_CHOICES, CUSTOM]
            wrong = [f"{b}={k!r}" for b, k in value.items() if b not in self.dropdowns or k not in known]
            if not wrong:
                return dict(value)
            # refused here, as the other controls refuse theirs: the shown partition stays
            return self.refuse(f"support: {', '.join(wrong)} is not a choice; each of "
                                 f"{', '.join(self.dropdowns)} takes one of {', '.join(known)}; kept {self.value!r}.")
        return self.refuse(f"support takes a dict backend -> choice ({', '.join(SUPPORT_CHOICES)}), not "
                             f"{type(value).__name__} {value!r}.")


    def __init__(self, backends: list[str], support: Mapping[str, Any] | None) -> None:
        self.custom: dict[str, Any] = {}
        value: dict[str, str] = {}
        for b in backends:
            sup = (support or {}).get(b)
            value[b] = backend_choice(b, sup)
            if value[b] == CUSTOM and sup is not None:
                self.custom[b] = sup
        self.dropdowns: dict[str, widgets.Dropdown] = {}
        for b in backends:
            options = [(label, key) for key, (label, _) in SUPPORT_CHOICES.items()
                       if key != "default" or b in BUILTIN_BACKENDS]
            if b in self.custom:
                options.append((custom_label(self.custom[b]), CUSTOM))
            keys = {key for _, key in options}
            self.dropdowns[b] = widgets.Dropdown(options=options, value=value[b] if value[b] in keys else None,
                                                 description=b, layout=widgets.Layout(width="auto"),
                                                 style={"description_width": "initial"})
        super().__init__(children=list(self.dropdowns.values()))
        self.value = value
        self._syncing = False
        for b, dd in self.dropdowns.items():
            dd.observe(self._make_dropdown_handler(b), names="value")
        self.observe(self._sync_dropdowns, names="value")

    def _make_dropdown_handler(self, backend: str) -> Callable[[dict], None]:
        def handler(change: dict) -> None:
            if self._syncing or change["new"] is None:
                return
            self.value = {**self.value, backend: change["new"]}
        return handler

    def _sync_dropdowns(self, change: dict) -> None:
        self._syncing = True
        try:
            for b, dd in self.dropdowns.items():
                key = (change["new"] or {}).get(b, "default")
                if key in {v for _, v in dd.options}:
                    dd.value = key
        finally:
            self._syncing = False

    def shown(self, support: Mapping[str, Any] | None) -> dict[str, str]:
        """The picker's value for a Config.support mapping (None: every backend's default); a
        support that is none of the presets (a blocker's what-if: any_chain(tensorrt(),
        ops([...]))) becomes that backend's 'custom' choice."""
        value = {}
        for b, dd in self.dropdowns.items():
            sup = (support or {}).get(b)
            key = backend_choice(b, sup)
            if key == CUSTOM and sup is not None:
                self.custom[b] = sup
                dd.options = [o for o in dd.options if o[1] != CUSTOM] + [(custom_label(sup), CUSTOM)]
            value[b] = key
        return value

    def build(self, priority: Any = None) -> dict[str, Any] | None:
        """The Config.support mapping the choices describe (None: all Torch-TensorRT defaults). Custom
        backends switched off in `priority` are left out (Config refuses support it would ignore)."""
        out: dict[str, Any] = {}
        for backend, key in dict(self.value or {}).items():
            if key == "default" or (key == CUSTOM and backend not in self.custom):
                continue
            if backend not in BUILTIN_BACKENDS and priority is not None and backend not in priority:
                continue
            if key == CUSTOM:
                out[backend] = self.custom[backend]
            elif key in SUPPORT_CHOICES and (factory := SUPPORT_CHOICES[key][1]) is not None:  # ("default": above)
                out[backend] = factory()
            else:
                raise ConfigError(f"support for {backend!r}: unknown choice {key!r}; choose one of "
                                  f"{[k for k in SUPPORT_CHOICES] + [CUSTOM]}.")
        return out or None
