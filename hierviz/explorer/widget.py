"""hv.explore: an ipywidgets Explorer that re-partitions and redraws as the settings change.

    ex = hv.explore(model, example_inputs)
    ex                                          # displays the widget
    ex.controls["min_block_size"].value = 3     # same as moving the slider
    ex.partition, ex.history

Every control's observer and every button handler goes through `Explorer._guard`: a
`HiervizError` is shown in the error area, anything else is shown as an internal error; no
exception reaches the kernel, and the controls stay usable.

Changes are debounced (`debounce` seconds, on the kernel's event loop when there is one,
else on a timer thread); `debounce=0` applies each change at once, synchronously. Reading
`.partition`, `.config`, `.history` or `.error` first applies any change still pending, so
code always sees the state the controls describe.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import re
import threading
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

import ipywidgets as widgets
import pandas as pd
import traitlets

from hierviz import support as support_mod
from hierviz.config import Config
from hierviz.errors import ConfigError, HiervizError
from hierviz.explorer import columns
from hierviz.explorer.cache import cache_info, cached_partition
from hierviz.explorer.sweep import as_config
from hierviz.partitioner import Partition, diff, graph_of

VIEWS = ("auto", "full", "collapsed", "focus")
DEFAULT_DEBOUNCE = 0.15
DEFAULT_OUTPUT_DIR = "hierviz-export"
HISTORY_SHOWN = 50  # rows of history drawn in the panel (the DataFrame keeps them all)
KNOWN_BACKENDS = ("tensorrt", "inductor")

# Support sources the picker offers: key -> (label, factory). "default" is the seed's default.
SUPPORT_CHOICES: dict[str, tuple[str, Callable[[], Any] | None]] = {
    "default": ("seed default", None),
    "tensorrt": ("Torch-TensorRT converters", lambda: support_mod.tensorrt()),
    "tensorrt+validate": ("converters + validators", lambda: support_mod.tensorrt(validate=True)),
    "inductor": ("TorchInductor lowerings", support_mod.inductor),
    "none": ("no ops", support_mod.none),
}
CUSTOM = "custom"
CALLABLE_OPS = ("call_function", "call_method", "call_module")


def _classify(sup: Any) -> str:
    """The picker key of a Support object, or 'custom' when it is none of the presets."""
    for key, (_, factory) in SUPPORT_CHOICES.items():
        if factory is not None and factory() == sup:
            return key
    return CUSTOM


class SupportPicker(widgets.HBox):
    """One dropdown per backend choosing its support source. `.value` maps backend -> choice
    key (see SUPPORT_CHOICES; 'custom' is the Support object the Explorer was given)."""

    value = traitlets.Dict()

    def __init__(self, backends: list[str], support: Mapping[str, Any] | None) -> None:
        self.custom: dict[str, Any] = {}
        value: dict[str, str] = {}
        for b in backends:
            sup = (support or {}).get(b)
            if sup is None:
                value[b] = "default" if b in KNOWN_BACKENDS else CUSTOM
            else:
                value[b] = _classify(sup)
                if value[b] == CUSTOM:
                    self.custom[b] = sup
        self.dropdowns: dict[str, widgets.Dropdown] = {}
        for b in backends:
            options = [(label, key) for key, (label, _) in SUPPORT_CHOICES.items()
                       if key != "default" or b in KNOWN_BACKENDS]
            if b in self.custom:
                options.append((f"custom: {getattr(self.custom[b], 'description', '?')}", CUSTOM))
            dd = widgets.Dropdown(options=options, value=value[b] if value[b] in dict(map(reversed, options)) else None,
                                  description=b, layout=widgets.Layout(width="auto"),
                                  style={"description_width": "initial"})
            self.dropdowns[b] = dd
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

    def build(self) -> dict[str, Any] | None:
        """The Config.support mapping the choices describe (None: all seed defaults)."""
        out: dict[str, Any] = {}
        for backend, key in dict(self.value or {}).items():
            if key == "default" or (key == CUSTOM and backend not in self.custom):
                continue
            if key == CUSTOM:
                out[backend] = self.custom[backend]
            elif key in SUPPORT_CHOICES:
                out[backend] = SUPPORT_CHOICES[key][1]()  # type: ignore[misc]
            else:
                raise ConfigError(f"support for {backend!r}: unknown choice {key!r}; choose one of "
                                  f"{[k for k in SUPPORT_CHOICES] + [CUSTOM]}.")
        return out or None


class TagsInput(widgets.TagsInput):
    """A TagsInput whose `allowed_tags` drive the autocomplete in the browser but do not reject
    other values set from Python: those reach Config, and its error is shown in the widget.
    Op names are written the way Config normalises them ('aten.add.Tensor' -> qualified)."""

    ops = traitlets.Bool(False)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> list[str]:
        out = []
        for tag in proposal["value"]:
            tag = str(tag).strip()
            if not tag:
                continue
            if self.ops and tag.startswith("aten."):
                tag = "torch.ops." + tag
            out.append(tag)
        return out


def _table_html(df: pd.DataFrame, *, max_rows: int | None = None, height: str = "360px") -> str:
    body = df.to_html(index=False, border=0, escape=True, max_rows=max_rows, na_rep="",
                      classes="hierviz-table", float_format=lambda v: f"{v:.4g}")
    return (f'<div style="max-height:{height};overflow:auto;font-size:12px">'
            f"<style>.hierviz-table td,.hierviz-table th{{padding:2px 6px;text-align:left;"
            f"white-space:nowrap}}</style>{body}</div>")


def _svg_html(svg: str) -> str:
    """The SVG in a scrollable box with zoom buttons (the notebook display's own container)."""
    from hierviz.drawing.export import diagram_html

    uid = "hv-x" + hashlib.sha1(svg.encode("utf-8", "replace")).hexdigest()[:12]
    return diagram_html(svg, uid, height="640px")


def _message_html(text: str, color: str = "#555") -> str:
    return f'<div style="color:{color};padding:6px">{html.escape(text)}</div>'


def _slug(text: str, limit: int = 60) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_") or "config"
    if len(slug) > limit:
        slug = slug[:limit] + "-" + hashlib.sha1(text.encode()).hexdigest()[:8]
    return slug


class Explorer(widgets.VBox):
    """The partition of one graph, its diagram, tables and history, and a control per setting.

    `.controls` maps each Config field (priority, support, min_block_size, torch_executed_ops,
    require_full_compilation, skip_fusion) plus `view`, `focus` and `measure` to its widget;
    setting a widget's `.value` re-runs just as a click would. `.buttons` holds pin and the
    export buttons (`button.click()` presses them); `.panels` the output widgets.
    """

    def __init__(self, model: Any, example_inputs: Any = None, config: Config | dict | None = None, *,
                 measure: bool = False, view: str = "auto", focus: str | None = None,
                 debounce: float = DEFAULT_DEBOUNCE, output_dir: str | Path = DEFAULT_OUTPUT_DIR,
                 max_nodes: int | None = None, measure_options: Mapping[str, Any] | None = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.add_class("hierviz-explorer")  # a stable hook for CSS and the browser test
        if view not in VIEWS:
            raise ConfigError(f"view must be one of {VIEWS}, not {view!r}")
        self.graph = graph_of(model, example_inputs)
        self.example_inputs = example_inputs
        self.name = name or (type(model).__name__ if not isinstance(model, Partition) else "partition")
        self.debounce = float(debounce)
        self.max_nodes = max_nodes
        self.measure_options = dict(measure_options or {})
        if config is None and isinstance(model, Partition):
            config = model.config
        base = as_config(config)
        self._base = base

        self._lock = threading.RLock()
        self._pending = False
        self._timer: threading.Timer | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._applying = False

        self._config: Config | None = None
        self._partition: Partition | None = None
        self._shown: Partition | None = None      # the partition the panels show (last valid)
        self._previous: Partition | None = None   # the one shown before it
        self._pinned: Partition | None = None
        self._state_key: Any = object()
        self._runs: list[dict[str, Any]] = []
        self._svgs: dict[Any, str] = {}
        self._panels_cache: dict[Config, dict[str, str]] = {}
        self._measurements: dict[tuple[Config, tuple], Any] = {}
        self._diff_cache: dict[tuple[Config, Config], pd.DataFrame] = {}
        self._errors: dict[str, str] = {}
        self.internal_errors: list[BaseException] = []
        self.exported: list[Path] = []
        self.timings: dict[str, float] = {}

        self._graph_ops = self._count_ops()
        self._node_names = [n.name for n in self.graph.graph.nodes if n.op in CALLABLE_OPS]
        self._build_controls(base, measure, view, focus, output_dir)
        self._build_panels()
        self._layout()
        self._guard(self._apply_now)()
        self._connect()

    # ------------------------------------------------------------------ construction
    def _count_ops(self) -> Counter:
        from hierviz.opnames import qualname

        counts: Counter = Counter()
        for node in self.graph.graph.nodes:
            if node.op in CALLABLE_OPS:
                counts[qualname(node.target) if node.op == "call_function" else str(node.target)] += 1
        return counts

    def _build_controls(self, base: Config, measure: bool, view: str, focus: str | None,
                        output_dir: str | Path) -> None:
        backends = list(base.priority) + [b for b in KNOWN_BACKENDS if b not in base.priority]
        backends += [b for b in (base.support or {}) if b not in backends]
        self.backends = backends
        priority = TagsInput(value=list(base.priority), allowed_tags=backends, allow_duplicates=False,
                             tooltip="Backends, highest priority first: drag to reorder, "
                                     "remove one to switch it off, type a name to add it back.",
                             placeholder="+ backend", layout=widgets.Layout(width="auto"))
        support = SupportPicker(backends, base.support)

        compute = sum(self._graph_ops.values())
        top = max(2, compute, base.min_block_size)
        mbs = widgets.IntSlider(value=base.min_block_size, min=1, max=top, step=1, continuous_update=False,
                                readout=False, description="min_block_size", style={"description_width": "initial"},
                                layout=widgets.Layout(width="420px"))
        mbs_box = widgets.BoundedIntText(value=base.min_block_size, min=1, max=top, step=1,
                                         layout=widgets.Layout(width="80px"))
        self._mbs_link = widgets.link((mbs, "value"), (mbs_box, "value"))

        ops_sorted = [op for op, _ in sorted(self._graph_ops.items(), key=lambda kv: (-kv[1], kv[0]))]
        allowed = ops_sorted + sorted(o for o in base.torch_executed_ops if o not in self._graph_ops)
        in_graph = ", ".join(f"{op.replace('torch.ops.', '')} x{self._graph_ops[op]}" for op in ops_sorted)
        teo = TagsInput(value=sorted(base.torch_executed_ops), allowed_tags=allowed, allow_duplicates=False,
                        ops=True, tooltip=f"Ops forced to run in PyTorch. In this graph: {in_graph}",
                        placeholder="+ op (type to search)", layout=widgets.Layout(width="auto"))
        self._teo_counts = widgets.HTML()
        rfc = widgets.ToggleButton(value=base.require_full_compilation, description="require full compilation",
                                   icon="lock", layout=widgets.Layout(width="auto"))
        skip = widgets.ToggleButton(value=base.skip_fusion, description="skip fusion",
                                    layout=widgets.Layout(width="auto"))
        view_w = widgets.ToggleButtons(options=list(VIEWS), value=view, description="view",
                                       style={"button_width": "96px", "description_width": "initial"})
        focus_w = widgets.Combobox(value=focus or "", options=[], ensure_option=False, continuous_update=False,
                                   placeholder="node or subgraph to focus on", description="focus",
                                   layout=widgets.Layout(width="320px"))
        measure_w = widgets.ToggleButton(value=bool(measure), description="measure latency", icon="clock-o",
                                         layout=widgets.Layout(width="auto"))
        self.controls: Mapping[str, widgets.Widget] = MappingProxyType({
            "priority": priority,
            "support": support,
            "min_block_size": mbs,
            "torch_executed_ops": teo,
            "require_full_compilation": rfc,
            "skip_fusion": skip,
            "view": view_w,
            "focus": focus_w,
            "measure": measure_w,
        })
        self.min_block_size_box = mbs_box

        self.output_dir = widgets.Text(value=str(output_dir), description="output dir",
                                       layout=widgets.Layout(width="360px"))
        self.diff_against = widgets.ToggleButtons(options=["previous", "pinned"], value="previous",
                                                  description="diff against",
                                                  style={"description_width": "initial"})
        self.buttons: Mapping[str, widgets.Button] = MappingProxyType({
            "pin": widgets.Button(description="pin this run", icon="thumb-tack",
                                  tooltip="Keep the current partition to diff later runs against"),
            "unpin": widgets.Button(description="unpin"),
            "export_svg": widgets.Button(description="SVG", icon="download", tooltip="the diagram as shown"),
            "export_html": widgets.Button(description="HTML report", icon="download"),
            "export_csv": widgets.Button(description="history CSV", icon="download"),
        })

    def _build_panels(self) -> None:
        self.progress = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, description="measuring",
                                              layout=widgets.Layout(display="none", width="420px"))
        self.progress_label = widgets.HTML()
        self.panels: Mapping[str, widgets.Widget] = MappingProxyType({
            "error": widgets.HTML(),
            "status": widgets.HTML(),
            "stats": widgets.HTML(),
            "diagram": widgets.HTML(),
            "ops": widgets.HTML(),
            "summary": widgets.HTML(),
            "report": widgets.HTML(),
            "history": widgets.HTML(),
            "diff": widgets.HTML(),
            "export": widgets.HTML(),
        })

    def _layout(self) -> None:
        c, p, b = self.controls, self.panels, self.buttons
        row1 = widgets.HBox([widgets.Label("priority"), c["priority"]], layout=widgets.Layout(width="100%"))
        row2 = widgets.HBox([c["min_block_size"], self.min_block_size_box, c["require_full_compilation"],
                             c["skip_fusion"], c["measure"]])
        row3 = widgets.HBox([widgets.Label("torch_executed_ops"), c["torch_executed_ops"]],
                            layout=widgets.Layout(width="100%"))
        row4 = widgets.HBox([widgets.Label("support"), c["support"]])
        row5 = widgets.HBox([c["view"], c["focus"]])
        progress = widgets.HBox([self.progress, self.progress_label])
        controls = widgets.VBox([row1, row4, row2, row3, self._teo_counts, row5, progress])
        diff_box = widgets.VBox([widgets.HBox([self.diff_against, b["pin"], b["unpin"]]), p["diff"]])
        export_box = widgets.VBox([widgets.HBox([self.output_dir, b["export_svg"], b["export_html"],
                                                 b["export_csv"]]), p["export"]])
        report_box = p["report"]
        tabs = widgets.Tab(children=[p["diagram"], p["ops"], p["summary"], report_box, p["history"],
                                     diff_box, export_box])
        for i, title in enumerate(["Diagram", "Ops", "Subgraphs", "Report", "History", "Diff", "Export"]):
            tabs.set_title(i, title)
        self.tabs = tabs
        self.children = [controls, p["error"], widgets.HBox([p["stats"]]), p["status"], tabs]

    def _connect(self) -> None:
        for name, w in self.controls.items():
            w.observe(self._guard(self._on_change), names="value")
        self.diff_against.observe(self._guard(lambda _c: self._refresh_diff()), names="value")
        self.buttons["pin"].on_click(self._guard(lambda _b: self.pin()))
        self.buttons["unpin"].on_click(self._guard(lambda _b: self.unpin()))
        self.buttons["export_svg"].on_click(self._guard(lambda _b: self.export("svg")))
        self.buttons["export_html"].on_click(self._guard(lambda _b: self.export("html")))
        self.buttons["export_csv"].on_click(self._guard(lambda _b: self.export("csv")))

    # ------------------------------------------------------------------ error handling
    def _guard(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap a callback so that no exception leaves it: errors are shown in the widget."""
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except HiervizError as exc:
                if str(exc) not in self._errors.values():  # export and measure file their own
                    self._errors["action"] = str(exc)
            except Exception as exc:  # noqa: BLE001 - the kernel must never see it
                self.internal_errors.append(exc)
                self._errors["internal"] = (f"unexpected {type(exc).__name__}: {exc}\n"
                                            + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
            try:
                self._show_errors()
            except Exception as exc:  # noqa: BLE001
                self.internal_errors.append(exc)
            return None
        guarded.__name__ = getattr(fn, "__name__", "callback")
        return guarded

    def _show_errors(self) -> None:
        parts = []
        labels = {"partition": "These settings are invalid", "diagram": "Diagram", "measure": "Latency",
                  "export": "Export", "action": "Error", "internal": "Internal error (please report)"}
        for key, text in self._errors.items():
            first, _, rest = text.partition("\n")
            body = html.escape(first)
            if rest.strip():
                body += f"<details><summary>details</summary><pre>{html.escape(rest)}</pre></details>"
            parts.append(f"<b>{labels.get(key, key)}:</b> {body}")
        if "partition" in self._errors and self._shown is not None:
            parts.append(f"<i>The panels below show the last valid settings: "
                         f"{html.escape(self._shown.config.label())}</i>")
        self.panels["error"].value = ("" if not parts else
                                      '<div style="border-left:4px solid #D55E00;background:#fff3ee;'
                                      'padding:6px 10px;margin:4px 0">' + "<br>".join(parts) + "</div>")

    # ------------------------------------------------------------------ scheduling
    def _on_change(self, change: dict) -> None:
        if change.get("owner") is self.controls["focus"] and change["new"] and \
                self.controls["view"].value != "focus":
            self.controls["view"].value = "focus"  # typing a focus target switches to the focus view
            return
        self._schedule()

    def _schedule(self) -> None:
        with self._lock:
            self._pending = True
            if self._applying:
                return  # the running apply reads the controls again when it finishes
            if self.debounce <= 0:
                self._apply_now()
                return
            self._cancel_timers()
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                self._handle = loop.call_later(self.debounce, self._guard(self.flush))
            else:
                self._timer = threading.Timer(self.debounce, self._guard(self.flush))
                self._timer.daemon = True
                self._timer.start()

    def _cancel_timers(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def flush(self) -> None:
        """Apply a change still waiting for its debounce, now."""
        with self._lock:
            if self._pending and not self._applying:
                self._apply_now()

    # ------------------------------------------------------------------ the shown state
    def control_values(self) -> dict[str, Any]:
        """The Config fields the controls describe (possibly an invalid combination)."""
        c = self.controls
        return {
            "priority": tuple(c["priority"].value),
            "support": c["support"].build(),
            "min_block_size": int(c["min_block_size"].value),
            "torch_executed_ops": frozenset(c["torch_executed_ops"].value),
            "require_full_compilation": bool(c["require_full_compilation"].value),
            "skip_fusion": bool(c["skip_fusion"].value),
        }

    @property
    def partition(self) -> Partition | None:
        """The partition for the shown settings; None while they are invalid (see `.error`)."""
        self.flush()
        return self._partition

    @property
    def config(self) -> Config | None:
        """The Config the controls describe; None while they are invalid."""
        self.flush()
        return self._config

    @property
    def error(self) -> str | None:
        """Why the shown settings cannot be partitioned (the HiervizError message), else None."""
        self.flush()
        return self._errors.get("partition")

    @property
    def errors(self) -> dict[str, str]:
        """Every message the error area shows, by kind: partition, diagram, measure, export, ..."""
        self.flush()
        return dict(self._errors)

    @property
    def measurement(self) -> Any:
        """The latency of the shown settings when measured, else None."""
        self.flush()
        if self._config is None:
            return None
        return self._measurements.get(self._measure_key(self._config))

    @property
    def history(self) -> pd.DataFrame:
        """One row per run: run number, config fields, stats, latency, error, and whether the
        partition came from the cache and how long the update took."""
        self.flush()
        return self._history_frame()

    def _history_frame(self) -> pd.DataFrame:
        return columns.frame(self._runs, latency=True, extra_head=("run",), extra_tail=("cached", "seconds"))

    @property
    def pinned(self) -> Partition | None:
        return self._pinned

    @property
    def previous(self) -> Partition | None:
        return self._previous

    # ------------------------------------------------------------------ one update
    def _apply_now(self) -> None:
        with self._lock:
            self._cancel_timers()
            self._applying = True
            try:
                while True:
                    self._pending = False
                    self._update()
                    if not self._pending:  # a control changed while we were updating (e.g. focus -> view)
                        break
            finally:
                self._applying = False

    def _update(self) -> None:
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        values = self.control_values_safe()
        cached = False
        try:
            if isinstance(values, HiervizError):
                raise values
            cfg = Config(**values)
            hits = cache_info()["hits"]
            part = cached_partition(self.graph, cfg)
            cached = cache_info()["hits"] > hits
            error = None
        except HiervizError as exc:
            cfg, part, error = None, None, str(exc)
        timings["partition"] = time.perf_counter() - t0

        key = cfg if error is None else ("error", error, repr(values))
        changed = key != self._state_key
        self._state_key = key
        self._config, self._partition = cfg, part
        self._errors.pop("action", None)
        if error is not None:
            self._errors["partition"] = error
        else:
            self._errors.pop("partition", None)
        if part is not None and (self._shown is None or self._shown.config != part.config):
            self._previous, self._shown = self._shown, part
        if changed:
            row = ({"run": len(self._runs) + 1, **columns.config_columns(cfg), **columns.stat_columns(part),
                    "error": None} if part is not None else
                   {"run": len(self._runs) + 1, **{k: columns.format_field(k, v) for k, v in values.items()},
                    "error": error} if isinstance(values, dict) else
                   {"run": len(self._runs) + 1, "error": error})
            row["cached"] = cached
            row["_key"] = cfg
            self._runs.append(row)

        if part is not None:
            t = time.perf_counter()
            self._refresh_diagram(part)
            timings["render"] = time.perf_counter() - t
            t = time.perf_counter()
            self._refresh_tables(part)
            self._refresh_focus_options(part)
            timings["tables"] = time.perf_counter() - t
            t = time.perf_counter()
            self._refresh_measurement(part)
            timings["measure"] = time.perf_counter() - t
        t = time.perf_counter()
        self._refresh_stats()
        self._refresh_diff()
        self._refresh_teo_counts()
        self._refresh_history()
        timings["panels"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - t0
        if changed and self._runs:
            self._runs[-1]["seconds"] = round(timings["total"], 4)
        self.timings = timings
        status = f"updated in {timings['total'] * 1000:.0f} ms"
        if cached:
            status += " (partition from cache)"
        self.panels["status"].value = f'<span style="color:#777;font-size:11px">{status}</span>'
        self._show_errors()

    def control_values_safe(self) -> dict[str, Any] | HiervizError:
        try:
            return self.control_values()
        except HiervizError as exc:
            return exc

    # ------------------------------------------------------------------ panels
    def _diagram_key(self, part: Partition) -> tuple[Config, str, str | None, int | None]:
        """(config, view, focus, max_nodes): what the diagram panel draws; focus only in the focus view."""
        view = self.controls["view"].value
        focus = (self.controls["focus"].value or "").strip() or None if view == "focus" else None
        return (part.config, view, focus, self.max_nodes)

    def _refresh_diagram(self, part: Partition) -> None:
        key = self._diagram_key(part)
        _, view, focus, _ = key
        self._errors.pop("diagram", None)
        if view == "focus" and focus is None:
            self.panels["diagram"].value = _message_html(
                "Pick a node or subgraph in the focus box to draw its neighbourhood.")
            return
        svg = self._svgs.get(key)
        if svg is None:
            from hierviz.drawing import to_svg

            try:
                svg = to_svg(part, view=view, focus=focus, max_nodes=self.max_nodes)
            except HiervizError as exc:
                self._errors["diagram"] = str(exc)
                self.panels["diagram"].value = _message_html(f"No diagram: {exc}", "#D55E00")
                return
            self._svgs[key] = svg
        self.panels["diagram"].value = _svg_html(svg)

    @property
    def svg(self) -> str | None:
        """The SVG the diagram panel shows (None when it shows a message instead)."""
        self.flush()
        part = self._shown
        if part is None:
            return None
        return self._svgs.get(self._diagram_key(part))

    def _refresh_tables(self, part: Partition) -> None:
        cached = self._panels_cache.get(part.config)
        if cached is None:
            report = part.report()
            cached = {
                "ops": _table_html(part.ops()),
                "summary": _table_html(part.summary()),
                "report": ('<div style="max-height:480px;overflow:auto"><pre style="font-size:11px;'
                           f'line-height:1.3">{html.escape(report)}</pre></div>'),
            }
            self._panels_cache[part.config] = cached
        for name in ("ops", "summary", "report"):
            self.panels[name].value = cached[name]

    def _refresh_focus_options(self, part: Partition) -> None:
        names = [sg.tag for sg in part.subgraphs] + self._node_names
        if list(self.controls["focus"].options) != names:
            self.controls["focus"].options = names

    def _refresh_teo_counts(self) -> None:
        chosen = list(self.controls["torch_executed_ops"].value)
        if not chosen:
            text = (f"{len(self._graph_ops)} distinct ops in this graph; type to pick (autocomplete), "
                    "hover for counts")
        else:
            text = "forced to PyTorch: " + ", ".join(
                f"{html.escape(op.replace('torch.ops.', ''))} &times;{self._graph_ops.get(op, 0)}" for op in chosen)
        self._teo_counts.value = f'<span style="font-size:11px;color:#555">{text}</span>'

    def _refresh_stats(self) -> None:
        part = self._shown
        if part is None:
            self.panels["stats"].value = ""
            return
        s = part.stats
        from hierviz.explorer.plots import _colors

        backends = [b for b in s["subgraphs_by_backend"]]
        colors = dict(zip(backends, _colors(backends)))
        chips = " ".join(
            f'<span style="border-left:10px solid {colors[b]};padding:0 6px;margin-right:6px">'
            f"{html.escape(b)} <b>{n}</b></span>" for b, n in s["subgraphs_by_backend"].items())
        rows = [
            ("subgraphs", f"<b>{s['subgraphs']}</b> ({s['acc_subgraphs']} accelerated): {chips}"),
            ("coverage", f"{s['coverage']:.1%} of {s['compute_ops']} compute ops supported, "
                         f"{s['accelerated_coverage']:.1%} accelerated"),
            ("boundary tensors", str(s["boundary_tensors"])),
        ]
        m = self._measurements.get(self._measure_key(part.config))
        if m is not None:
            lat = columns.latency_columns(m)
            text = f"<b>{_num(lat['median_ms'])} ms</b> median (p10 {_num(lat['p10_ms'])}, p90 {_num(lat['p90_ms'])})"
            if lat.get("speedup") is not None:
                text += f", {_num(lat['speedup'])}&times; vs eager"
            if lat.get("max_abs_error") is not None:
                text += f", max abs error {_num(lat['max_abs_error'])}"
            if lat.get("compile_s") is not None:
                text += f", compile {_num(lat['compile_s'])} s"
            if lat.get("cache_hits") is not None:
                text += f" (cache {lat['cache_hits']} hit / {lat['cache_misses']} miss)"
            notes = list(getattr(m, "warnings", None) or [])
            if notes:
                items = "".join(f"<li>{html.escape(str(n))}</li>" for n in notes)
                text += f"<details><summary>{len(notes)} warning(s)</summary><ul>{items}</ul></details>"
            rows.append(("latency", text))
        elif self.controls["measure"].value:
            rows.append(("latency", "not measured (see the error above)"))
        else:
            rows.append(("latency", '<span style="color:#777">off: press "measure latency"</span>'))
        body = "".join(f'<tr><td style="padding:1px 8px;color:#555">{k}</td><td style="padding:1px 8px">{v}</td></tr>'
                       for k, v in rows)
        self.panels["stats"].value = f"<table>{body}</table>"

    def _refresh_history(self) -> None:
        df = self._history_frame().dropna(axis=1, how="all")
        # Settings that never changed go to the end, so what changed and its effect fit on screen.
        fixed = [c for c in columns.CONFIG_COLUMNS if c in df and len(df) > 1 and df[c].astype(str).nunique() == 1]
        df = df[[c for c in df.columns if c not in fixed] + fixed]
        shown = df.iloc[::-1].head(HISTORY_SHOWN)
        note = (f'<div style="font-size:11px;color:#777">{len(df)} runs, newest first'
                + (f" (showing {HISTORY_SHOWN})" if len(df) > HISTORY_SHOWN else "")
                + "; all rows in Explorer.history</div>")
        self.panels["history"].value = note + _table_html(shown, height="420px")

    def _diff_target(self) -> tuple[Partition | None, str]:
        if self.diff_against.value == "pinned":
            return self._pinned, "pinned run"
        return self._previous, "previous run"

    def _refresh_diff(self) -> None:
        current = self._shown
        other, what = self._diff_target()
        if current is None:
            self.panels["diff"].value = _message_html("no valid run yet")
            return
        if other is None:
            hint = "press 'pin this run' to pin one" if what == "pinned run" else "change a setting to compare"
            self.panels["diff"].value = _message_html(f"no {what} yet: {hint}")
            return
        df = self._diff(other, current)
        head = (f"<div><b>{len(df)}</b> node(s) moved from the {what} (A: {html.escape(other.config.label())}) "
                f"to this run (B: {html.escape(current.config.label())})</div>")
        self.panels["diff"].value = head + (_table_html(df) if len(df) else "")

    @property
    def moved(self) -> pd.DataFrame | None:
        """`hv.diff(previous or pinned, current)`, as the Diff panel shows it."""
        self.flush()
        other, _ = self._diff_target()
        if other is None or self._shown is None:
            return None
        return self._diff(other, self._shown)

    def _diff(self, a: Partition, b: Partition) -> pd.DataFrame:
        """`hv.diff(a, b)`, cached per pair of configs."""
        key = (a.config, b.config)
        df = self._diff_cache.get(key)
        if df is None:
            df = self._diff_cache[key] = diff(a, b)
        return df

    # ------------------------------------------------------------------ measuring
    def _measure_key(self, cfg: Config) -> tuple[Config, tuple]:
        return (cfg, tuple(sorted((k, repr(v)) for k, v in self.measure_options.items())))

    def _refresh_measurement(self, part: Partition) -> None:
        if not self.controls["measure"].value:
            self._errors.pop("measure", None)
            return
        key = self._measure_key(part.config)
        m = self._measurements.get(key)
        if m is None:
            m = self._run_measure(part)
            if m is None:
                return
            self._measurements[key] = m
        self._errors.pop("measure", None)
        if self._runs and self._runs[-1].get("_key") == part.config:
            self._runs[-1].update(columns.latency_columns(m))

    def _run_measure(self, part: Partition) -> Any:
        from hierviz.latency import measure

        bar = self.progress
        bar.value, bar.bar_style = 0.0, "info"
        bar.layout.display = None
        self.progress_label.value = ""

        def progress(stage: str, done: int, total: int) -> None:
            bar.value = max(0.0, min(1.0, done / total)) if total else 0.0
            bar.description = "measuring"
            bar.tooltip = str(stage)
            self.progress_label.value = f'<span style="font-size:11px;color:#555">{html.escape(str(stage))}</span>'

        try:
            with warnings.catch_warnings():  # shown in the stats panel (Measurement.warnings), not the log
                warnings.simplefilter("ignore")
                m = measure(part, self.example_inputs, progress=progress, **self.measure_options)
        except HiervizError as exc:
            self._errors["measure"] = str(exc)
            bar.bar_style = "danger"
            return None
        finally:
            if bar.bar_style != "danger":
                bar.layout.display = "none"
                self.progress_label.value = ""
        bar.value = 1.0
        return m

    # ------------------------------------------------------------------ buttons
    def pin(self) -> Partition | None:
        """Keep the current partition; the Diff panel can then compare every run with it."""
        self.flush()
        if self._partition is None:
            raise ConfigError("nothing to pin: the current settings are invalid.")
        self._pinned = self._partition
        self.buttons["pin"].description = "re-pin this run"
        self.buttons["pin"].tooltip = f"pinned: {self._pinned.config.label()}"
        self.diff_against.value = "pinned"
        self._refresh_diff()
        return self._pinned

    def unpin(self) -> None:
        self._pinned = None
        self.buttons["pin"].description = "pin this run"
        self.diff_against.value = "previous"
        self._refresh_diff()

    def export(self, kind: str) -> Path | None:
        """Write the diagram ('svg'), the HTML report ('html') or the history ('csv') into the
        output directory; the path is shown in the Export panel and returned."""
        self.flush()
        self._errors.pop("export", None)
        try:
            out = Path(self.output_dir.value or DEFAULT_OUTPUT_DIR).expanduser()
            out.mkdir(parents=True, exist_ok=True)
            if kind == "csv":
                path = out / f"{_slug(self.name)}-history.csv"
                self.history.to_csv(path, index=False)
            else:
                part = self._partition
                if part is None:
                    raise ConfigError("the current settings are invalid; fix them before exporting.")
                stem = f"{_slug(self.name)}-{_slug(part.config.label())}"
                if kind == "svg":
                    path = out / f"{stem}.svg"
                    svg = self.svg
                    if svg is None:
                        from hierviz.drawing import to_svg

                        svg = to_svg(part, view="auto", max_nodes=self.max_nodes)
                    path.write_text(svg, encoding="utf-8")
                elif kind == "html":
                    path = Path(part.save(out / f"{stem}.html"))
                else:
                    raise ConfigError(f"export kind must be 'svg', 'html' or 'csv', not {kind!r}")
        except HiervizError as exc:
            self._errors["export"] = str(exc)
            self._show_errors()
            raise
        except OSError as exc:
            self._errors["export"] = f"could not write to {self.output_dir.value!r}: {exc}"
            self._show_errors()
            raise ConfigError(self._errors["export"]) from exc
        path = path.resolve()
        self.exported.insert(0, path)
        items = "".join(f"<li><code>{html.escape(str(p))}</code></li>" for p in self.exported[:20])
        self.panels["export"].value = f"<div>Written:</div><ul>{items}</ul>"
        self._show_errors()
        return path

    def __repr__(self) -> str:
        state = self._partition if self._partition is not None else f"invalid: {self._errors.get('partition')}"
        return f"<hv.Explorer {self.name}: {state!r}>"


def _num(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def explore(model: Any, example_inputs: Any = None, config: Config | dict | None = None, *,
            measure: bool = False, **options: Any) -> Explorer:
    """An interactive Explorer of `model`'s partition: change the settings with widgets and see
    the diagram, stats, tables, report, history and diff update. `options` go to `Explorer`
    (view, focus, debounce, output_dir, max_nodes, measure_options, name)."""
    return Explorer(model, example_inputs, config, measure=measure, **options)
