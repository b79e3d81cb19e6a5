"""The Explorer's controls: the ipywidgets a user clicks, and their layout.

Each control accepts any value set from Python without raising: a value it cannot show (an
unknown view, a min_block_size out of the slider's range or not a whole number) is refused
with a message through `on_refused` (the Explorer shows it in its error area), so no
`TraitError` reaches a notebook cell. `state_values` reads the controls into the plain dict
the controller (controller.py) turns into a Config.

To add a control or button: create it in `build_controls` / `build_buttons`, place it in
`layout`, and connect it in `Explorer._connect` (explorer.py).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

import ipywidgets as widgets
import traitlets

from hierviz.settings import config as settings
from hierviz.support import sources as support_mod
from hierviz.settings.config import Config
from hierviz.settings.setting_values import BUILTIN_BACKENDS, parse_bool
from hierviz.errors import ConfigError
from hierviz.widget import panels
from hierviz.widget.control_spec import CONTROLS, Control

Refused = Callable[[str], None]

# Support sources the picker offers: key -> (label, factory): "default" (Config's None:
# tensorrt = validated converters, inductor = no ops), then hierviz.support.sources.SOURCES.
SUPPORT_CHOICES: dict[str, tuple[str, Callable[[], Any] | None]] = {
    "default": ("default", None), **support_mod.SOURCES}
CUSTOM = "custom"


class _AnyValue(traitlets.Any):
    """Any value, None included, goes through the widget's own check (traitlets.Any lets None
    through unchecked)."""

    allow_none = False


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


class _Refusing:
    """Mixin: a value the widget cannot take is refused with a message to `on_refused`,
    keeping the current value, instead of raising TraitError (or clamping silently)."""

    on_refused: Refused | None = None
    what = "value"
    value: Any  # the widget's own trait (this mixin comes before an ipywidgets class)

    def _refuse(self, message: str) -> Any:
        if self.on_refused is not None:
            self.on_refused(message)
        return self.value


class SupportPicker(_Refusing, widgets.HBox):
    """One dropdown per backend choosing its support source. `.value` maps backend -> choice
    key (see SUPPORT_CHOICES; 'custom' is the Support object the Explorer was given)."""

    value = _AnyValue({})

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
            return self._refuse(f"support: {', '.join(wrong)} is not a choice; each of "
                                 f"{', '.join(self.dropdowns)} takes one of {', '.join(known)}; kept {self.value!r}.")
        return self._refuse(f"support takes a dict backend -> choice ({', '.join(SUPPORT_CHOICES)}), not "
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


class TagsInput(_Refusing, widgets.TagsInput):
    """A TagsInput whose `allowed_tags` drive the autocomplete in the browser but do not reject
    other values set from Python: those reach Config, and its error is shown in the widget.
    Op names are written the way Config normalises them ('aten.add.Tensor' -> qualified)."""

    value = _AnyValue([]).tag(sync=True)
    ops = traitlets.Bool(False)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> list[str]:
        value = proposal["value"]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple, set, frozenset)):
            return self._refuse(f"{self.what} takes a list of names, not {type(value).__name__} {value!r}; "
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


class Toggle(_Refusing, widgets.ToggleButton):
    """A toggle button that refuses anything but True and False."""

    value = _AnyValue(False).tag(sync=True)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> bool:
        try:
            return parse_bool(self.what, proposal["value"])  # Config's rule for a bool field
        except ConfigError as exc:
            return self._refuse(f"{str(exc).rstrip('.')}; kept {self.value}.")


class FocusBox(_Refusing, widgets.Combobox):
    """The focus picker: text (a node name or subgraph tag); None clears it."""

    value = _AnyValue("").tag(sync=True)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> str:
        value = proposal["value"]
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        return self._refuse(f"focus takes a node name or subgraph tag (text), not {type(value).__name__} "
                            f"{value!r}; kept {self.value!r}.")


class BlockSizeSlider(_Refusing, widgets.IntSlider):
    """The min_block_size slider: whole numbers in [min, max]; anything else is refused with a
    message (the plain IntSlider clamps 0 to 1 and truncates 2.7 to 2 without a word)."""

    value = _AnyValue(1).tag(sync=True)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> int:
        return _whole_in_range(self, proposal["value"])


class BlockSizeBox(_Refusing, widgets.BoundedIntText):
    """The number box beside the slider, with the same rule."""

    value = _AnyValue(1).tag(sync=True)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> int:
        return _whole_in_range(self, proposal["value"])


def _whole_in_range(w: Any, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return w._refuse(f"min_block_size must be a whole number from {w.min} to {w.max}, not "
                         f"{type(value).__name__} {value!r}; kept {w.value}.")
    if not w.min <= value <= w.max:
        hint = f" (Larger values: hv.partition(..., min_block_size={value}).)" if value > w.max else ""
        return w._refuse(f"min_block_size {value} is outside the slider's range {w.min}..{w.max}; kept "
                         f"{w.value}.{hint}")
    return int(value)


class Choice(_Refusing, widgets.ToggleButtons):
    """Toggle buttons for a fixed set of options (the view; diff against previous / pinned):
    any other value (None included) is refused with the list of options."""

    value = _AnyValue(None)  # None too reaches the check below

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> Any:
        value = proposal["value"]
        options = [o[1] if isinstance(o, tuple) else o for o in self.options]
        if value in options:
            return value
        return self._refuse(f"{self.what} must be one of {', '.join(map(str, options))}, not {value!r}; "
                            f"kept {self.value!r}.")


@dataclass
class _Building:
    """What the control builders share: the base Config, the graph's ops, the backends offered,
    and the extra widgets they make (the min_block_size box, the ops counter line)."""

    base: Config
    graph_ops: Mapping[str, int]
    backends: list[str]
    extra_ops: list[str]
    extras: dict[str, Any]


def _build_backends(name: str, control: Control, value: Any, b: _Building) -> widgets.Widget:
    return TagsInput(value=list(value), allowed_tags=b.backends, allow_duplicates=False, tooltip=control.tooltip,
                     placeholder="+ backend", layout=widgets.Layout(width="auto"))


def _build_support(name: str, control: Control, value: Any, b: _Building) -> widgets.Widget:
    return SupportPicker(b.backends, value)


def _build_slider(name: str, control: Control, value: Any, b: _Building) -> widgets.Widget:
    top = max(2, sum(b.graph_ops.values()), value)
    slider = BlockSizeSlider(value=value, min=1, max=top, step=1, continuous_update=False, readout=False,
                             description=control.description, style={"description_width": "initial"},
                             layout=widgets.Layout(width="420px"))
    box = BlockSizeBox(value=value, min=1, max=top, step=1, layout=widgets.Layout(width="80px"))
    b.extras[f"{name}_box"] = box  # the number box beside the slider, same rule
    b.extras[f"{name}_link"] = widgets.link((slider, "value"), (box, "value"))
    return slider


def _build_ops(name: str, control: Control, value: Any, b: _Building) -> widgets.Widget:
    ops_sorted = [op for op, _ in panels.ops_by_count(b.graph_ops)]
    allowed = ops_sorted + sorted(o for o in value if o not in b.graph_ops) + b.extra_ops
    b.extras["teo_counts"] = widgets.HTML()  # how many nodes the chosen ops force
    return TagsInput(value=sorted(value), allowed_tags=allowed, allow_duplicates=False, ops=True,
                     tooltip=f"Ops forced to run in PyTorch. In this graph: {panels.ops_hint(b.graph_ops)}",
                     placeholder="+ op (type to search)", layout=widgets.Layout(width="auto"))


def button_width(options: Any) -> str:
    """Buttons of a choice wide enough for its longest option ("torch_tensorrt" whole)."""
    return f"calc({max(len(str(o)) for o in options)}ch + 24px)"


def _build_toggle(name: str, control: Control, value: Any, b: _Building) -> widgets.Widget:
    return Toggle(value=value, description=control.description, icon=control.icon,
                  layout=widgets.Layout(width="auto"))


def _build_choice(name: str, control: Control, value: Any, b: _Building) -> widgets.Widget:
    options = control.options() if callable(control.options) else control.options
    if value not in options:
        raise ConfigError(f"hv.explore: {name}={value!r} cannot be chosen here ({control.unavailable}); "
                          f"{name} choices offered: {', '.join(options)}.")
    return Choice(options=list(options), value=value, description=control.description,
                  tooltip=control.tooltip, style={"button_width": button_width(options),
                                                      "description_width": "initial"})


# Control kind -> (build(setting name, control, value, building), read(widget, values read so far),
# show(value) -> widget value).
KINDS: dict[str, tuple[Callable[..., widgets.Widget], Callable[[Any, dict], Any], Callable[[Any, Any], Any]]] = {
    "backends": (_build_backends, lambda w, _v: tuple(w.value), lambda _w, v: list(v)),
    "support": (_build_support, lambda w, v: w.build(next((x for k, x in v.items() if _kind(k) == "backends"), None)),
                lambda w, v: w.shown(v)),
    "slider": (_build_slider, lambda w, _v: w.value, lambda _w, v: v),
    "ops": (_build_ops, lambda w, _v: frozenset(w.value), lambda _w, v: tuple(sorted(v))),
    "toggle": (_build_toggle, lambda w, _v: w.value, lambda _w, v: v),
    "choice": (_build_choice, lambda w, _v: w.value, lambda _w, v: v),
}


def _kind(name: str) -> str:
    return CONTROLS[name].kind


def _with_control() -> list[tuple[str, Control]]:
    """(setting, its control) in the settings' order."""
    return [(row.name, CONTROLS[row.name]) for row in settings.SETTINGS if row.name in CONTROLS]


def build_controls(base: Config, graph_ops: Mapping[str, int], views: tuple[str, ...], *, measure: bool,
                   view: str, focus: str | None, on_refused: Refused,
                   source_ops: Mapping[str, int] | None = None) -> tuple[Mapping[str, widgets.Widget], dict]:
    """(controls, extras): `controls` maps each setting with a control in the settings table
    (built from its control's kind and options (control_spec.py), showing `base`'s value) plus view, focus,
    measure and build to its widget; `extras` holds what the builders made besides (the min_block_size
    box, the ops counter line) and the backends. The op picker offers the graph's ops, most
    frequent first, then `source_ops` (the source ops the lowering replaced, "source:<op>" ->
    how many lowered nodes came from it)."""
    backends = list(base.priority) + [b for b in BUILTIN_BACKENDS if b not in base.priority]
    backends += [b for b in (base.support or {}) if b not in backends]
    extra_ops = [op for op, _ in panels.ops_by_count(source_ops or {})]
    building = _Building(base, graph_ops, backends, extra_ops, {"backends": backends})
    built = {name: KINDS[control.kind][0](name, control, getattr(base, name), building)
             for name, control in _with_control()}
    view_w = Choice(options=list(views), value=view, description="view",
                    style={"button_width": button_width(views), "description_width": "initial"})
    focus_w = FocusBox(value=focus or "", options=[], ensure_option=False, continuous_update=False,
                       placeholder="node or subgraph to focus on", description="focus",
                       layout=widgets.Layout(width="320px"))
    measure_w = Toggle(value=bool(measure), description="measure latency", icon="clock-o",
                       layout=widgets.Layout(width="auto"))
    build_w = Toggle(value=False, description="build engines", icon="cogs", layout=widgets.Layout(width="auto"),
                     tooltip="convert and build every TensorRT engine here (no GPU needed with TensorRT-RTX), "
                             "in the background: the diagram then marks each engine built or failed")
    controls = MappingProxyType({**built, "view": view_w, "focus": focus_w, "measure": measure_w, "build": build_w})
    for name, w in controls.items():
        w.on_refused = on_refused
        w.what = name
    for w in building.extras.values():
        if isinstance(w, _Refusing):
            w.on_refused = on_refused
    return controls, building.extras


def state_values(controls: Mapping[str, widgets.Widget]) -> dict[str, Any]:
    """The settings the controls describe (possibly an invalid combination; Config checks them)."""
    values: dict[str, Any] = {}
    for name, control in _with_control():
        values[name] = KINDS[control.kind][1](controls[name], values)
    return values


def show_config(controls: Mapping[str, widgets.Widget], config: Config) -> None:
    """Set every setting's control to `config`'s value."""
    for name, control in _with_control():
        w = controls[name]
        w.value = KINDS[control.kind][2](w, getattr(config, name))


def build_buttons() -> Mapping[str, widgets.Button]:
    """Pin / unpin and the export buttons (`button.click()` presses them)."""
    return MappingProxyType({
        "pin": widgets.Button(description="pin this run", icon="thumb-tack",
                              tooltip="Keep the current partition to diff later runs against"),
        "unpin": widgets.Button(description="unpin"),
        "export_svg": widgets.Button(description="SVG", icon="download", tooltip="the diagram as shown"),
        "export_html": widgets.Button(description="HTML report", icon="download"),
        "export_csv": widgets.Button(description="history CSV", icon="download"),
        "find_fastest": widgets.Button(description="find fastest", icon="search",
                                       tooltip="Run a small hv.tune from these settings in the background "
                                               "(measures each candidate)"),
        "check_numerics": widgets.Button(
            description="check numerics", icon="crosshairs",
            tooltip="Compare each subgraph with eager PyTorch: where does the error start?"),
        "apply_fastest": widgets.Button(description="apply best", icon="check", disabled=True,
                                        tooltip="Set the controls to the fastest setting found"),
    })


PANEL_NAMES = ("error", "status", "stats", "diagram", "ops", "summary", "report", "history", "diff", "export",
               "fastest", "numerics")
TABS = (("Diagram", "diagram"), ("Ops", "ops"), ("Subgraphs", "summary"), ("Report", "report"),
        ("History", "history"), ("Diff", "diff_box"), ("Blockers", "blockers_box"), ("Numerics", "numerics_box"),
        ("Export", "export_box"))


def tab_index(key: str) -> int:
    """The position of a tab (by its page key in TABS)."""
    return [k for _, k in TABS].index(key)


GROWS = (TagsInput, BlockSizeSlider, widgets.HTML)  # take the room left on their line


def _line(children: list[widgets.Widget]) -> widgets.HBox:
    """One line of controls that wraps instead of squeezing: a label, toggle or choice keeps
    its whole text (it never shrinks below it) and moves to the next line when the notebook is
    narrow (JupyterLab at 1,000 px); pickers and the slider take the room left."""
    for w in children:
        if not isinstance(w, GROWS):
            w.layout.flex = "0 0 auto"
        if isinstance(w, widgets.ToggleButtons):  # a block: its label above its buttons; one line instead
            w.layout.display, w.layout.flex_flow, w.layout.align_items = "flex", "row nowrap", "center"
            w.layout.width = "max-content"
    return widgets.HBox(children, layout=widgets.Layout(width="100%", flex_flow="row wrap", align_items="center"))


def build_panels() -> Mapping[str, widgets.HTML]:
    """One HTML widget per panel (their values come from panels.py)."""
    return MappingProxyType({name: widgets.HTML() for name in PANEL_NAMES})


def layout(controls: Mapping[str, widgets.Widget], extras: Mapping[str, Any], panels_: Mapping[str, widgets.Widget],
           buttons: Mapping[str, widgets.Button], more: Mapping[str, widgets.Widget]) -> tuple[list, widgets.Tab]:
    """(the Explorer's children, its tab widget): the settings' controls on top, one line per
    `Control.row` (control_spec.py; a list-like control with its name before it, the
    slider with its number box and the measure toggle), then view and focus, the error area,
    the stats, the status line and the tabs. `more` holds progress, diff_against, output_dir and
    the Blockers tab."""
    c, p, b = controls, panels_, buttons
    lines: dict[int, list[widgets.Widget]] = {}
    for name, control in _with_control():
        kind = control.kind
        line = lines.setdefault(control.row, [])
        if kind in ("backends", "support", "ops"):
            line.append(widgets.Label(name))
        line.append(c[name])
        if kind == "slider":
            line += [extras[f"{name}_box"], c["measure"], c["build"]]
        if kind == "ops":
            line.append(extras["teo_counts"])
    boxes = [_line(line) for _, line in sorted(lines.items())]
    progress = widgets.HBox([more["progress"], more["progress_label"]])
    fastest = _line([b["find_fastest"], b["apply_fastest"], p["fastest"]])
    box = widgets.VBox([*boxes, _line([c["view"], c["focus"]]), progress, fastest])
    pages = dict(p)
    pages["diff_box"] = widgets.VBox([widgets.HBox([more["diff_against"], b["pin"], b["unpin"]]), p["diff"]])
    pages["blockers_box"] = more["blockers_tab"]
    pages["numerics_box"] = widgets.VBox([widgets.HBox([b["check_numerics"]]), p["numerics"]])
    pages["export_box"] = widgets.VBox([widgets.HBox([more["output_dir"], b["export_svg"], b["export_html"],
                                                      b["export_csv"]]), p["export"]])
    tabs = widgets.Tab(children=[pages[key] for _, key in TABS])
    for i, (title, _) in enumerate(TABS):
        tabs.set_title(i, title)
    return [box, p["error"], widgets.HBox([p["stats"]]), p["status"], tabs], tabs
