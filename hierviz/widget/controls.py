"""The Explorer's controls: the ipywidgets a user clicks, and their layout.

Each control accepts any value set from Python without raising: a value it cannot show (an
unknown view, a min_block_size out of the slider's range or not a whole number) is refused
with a message through `on_refused` (the Explorer shows it in its error area), so no
`TraitError` reaches a notebook cell. `state_values` reads the controls into the plain dict
the controller (controller.py) turns into a Config. The controls themselves: the support picker
(support_picker.py) and the small ones (refusing_controls.py), each refusing what it cannot take
(refusing.py).

To add a control or button: create it in `build_controls` / `build_buttons`, place it in
`layout`, and connect it in `Explorer._connect` (explorer.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

import ipywidgets as widgets

from hierviz.errors import ConfigError
from hierviz.settings import config as settings
from hierviz.settings.config import Config
from hierviz.settings.setting_values import BUILTIN_BACKENDS
from hierviz.widget import panels
from hierviz.widget.control_kind import ControlKind
from hierviz.widget.control_spec import CONTROLS, Control
from hierviz.widget.refusing import Refused, Refusing
from hierviz.widget.refusing_controls import (OPS_HINT, SLIDER_TOP, BlockSizeBox, BlockSizePair, BlockSizeSlider,
                                              Choice, FocusBox, OpPick, TagsInput, Toggle)
from hierviz.widget.support_picker import SupportPicker


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
    """The number box (the setting's value, 1 to the node count) and, in extras, the slider
    beside it: 1..min(nodes, SLIDER_TOP), so every small value is one step of a drag or an arrow key."""
    nodes = sum(b.graph_ops.values())
    top = max(2, nodes, value)
    slider = BlockSizeSlider(value=min(value, max(2, min(nodes, SLIDER_TOP))), min=1,
                             max=max(2, min(nodes, SLIDER_TOP)), step=1, continuous_update=False, readout=False,
                             description=control.description, style={"description_width": "initial"},
                             tooltip=f"1..{max(2, min(nodes, SLIDER_TOP))}; any value up to {top} in the box",
                             layout=widgets.Layout(width="420px"))
    box = BlockSizeBox(value=value, min=1, max=top, step=1, layout=widgets.Layout(width="80px"))
    b.extras[f"{name}_slider"] = slider
    b.extras[f"{name}_pair"] = BlockSizePair(slider, box)
    return box


def _build_ops(name: str, control: Control, value: Any, b: _Building) -> widgets.Widget:
    b.extras["teo_counts"] = widgets.HTML()  # how many nodes the chosen ops force
    # The tags (their x removes one) take no typing: in JupyterLab a TagsInput's Enter never
    # commits (the notebook takes the key), and its allowed_tags drop any other name without a
    # word. Names are typed in the picker beside it, a text box (Enter or Tab commits) offering
    # the graph's ops; Python resolves each as Config does, or refuses it with what to type.
    tags = TagsInput(value=sorted(value), allow_duplicates=False, ops=True,
                     tooltip=f"Ops forced to run in PyTorch; {OPS_HINT}. In this graph: "
                             f"{panels.ops_hint(b.graph_ops)}",
                     placeholder="", layout=widgets.Layout(width="auto"))
    tags.add_class(OP_TAGS_CLASS)
    ops_sorted = [op for op, _ in panels.ops_by_count(b.graph_ops)]
    picker = widgets.Combobox(options=ops_sorted + b.extra_ops, ensure_option=False, continuous_update=False,
                              placeholder=OP_PLACEHOLDER, tooltip=OPS_HINT, layout=widgets.Layout(width="300px"))
    b.extras[f"{name}_pick"] = picker
    b.extras[f"{name}_picking"] = OpPick(picker, tags)
    return tags


OP_TAGS_CLASS = "hierviz-op-tags"
OP_PLACEHOLDER = "+ op: topk, aten.topk.default ... Enter"


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


# Control kind -> how it is made, read and shown (ControlKind).
KINDS: dict[str, ControlKind] = {
    "backends": ControlKind(_build_backends, lambda w, _v: tuple(w.value), lambda _w, v: list(v)),
    "support": ControlKind(_build_support,
                           lambda w, v: w.build(next((x for k, x in v.items() if _kind(k) == "backends"), None)),
                           lambda w, v: w.shown(v)),
    "slider": ControlKind(_build_slider, lambda w, _v: w.value, lambda _w, v: v),  # the box beside the slider
    "ops": ControlKind(_build_ops, lambda w, _v: frozenset(w.value), lambda _w, v: tuple(sorted(v))),
    "toggle": ControlKind(_build_toggle, lambda w, _v: w.value, lambda _w, v: v),
    "choice": ControlKind(_build_choice, lambda w, _v: w.value, lambda _w, v: v),
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
    built = {name: KINDS[control.kind].make(name, control, getattr(base, name), building)
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
        if isinstance(w, Refusing):
            w.on_refused = on_refused
    return controls, building.extras


def state_values(controls: Mapping[str, widgets.Widget]) -> dict[str, Any]:
    """The settings the controls describe (possibly an invalid combination; Config checks them)."""
    values: dict[str, Any] = {}
    for name, control in _with_control():
        values[name] = KINDS[control.kind].read(controls[name], values)
    return values


def show_config(controls: Mapping[str, widgets.Widget], config: Config) -> None:
    """Set every setting's control to `config`'s value."""
    for name, control in _with_control():
        w = controls[name]
        w.value = KINDS[control.kind].show(w, getattr(config, name))


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
            line[-1:] = [extras[f"{name}_slider"], c[name], c["measure"], c["build"]]
        if kind == "ops":
            line += [extras[f"{name}_pick"], extras["teo_counts"]]
    boxes = [_line(line) for _, line in sorted(lines.items())]
    progress = widgets.HBox([more["progress"], more["progress_label"]])
    fastest = _line([b["find_fastest"], b["apply_fastest"], p["fastest"]])
    box = widgets.VBox([*boxes, _line([c["view"], c["focus"]]), progress, fastest])
    pages = dict(p)
    if "selection" in more:  # the diagram with the selection panel beside it
        p["diagram"].layout.flex, p["diagram"].layout.min_width = "1 1 auto", "0"
        pages["diagram"] = widgets.HBox([p["diagram"], more["selection"]], layout=widgets.Layout(width="100%"))
    pages["diff_box"] = widgets.VBox([widgets.HBox([more["diff_against"], b["pin"], b["unpin"]]), p["diff"]])
    pages["blockers_box"] = more["blockers_tab"]
    pages["numerics_box"] = widgets.VBox([widgets.HBox([b["check_numerics"]]), p["numerics"]])
    pages["export_box"] = widgets.VBox([widgets.HBox([more["output_dir"], b["export_svg"], b["export_html"],
                                                      b["export_csv"]]), p["export"]])
    tabs = widgets.Tab(children=[pages[key] for _, key in TABS])
    for i, (title, _) in enumerate(TABS):
        tabs.set_title(i, title)
    return [box, p["error"], widgets.HBox([p["stats"]]), p["status"], tabs], tabs
