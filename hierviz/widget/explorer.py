"""hv.explore: an ipywidgets Explorer that re-partitions and redraws as the settings change.

    ex = hv.explore(model, example_inputs, min_block_size=3)
    ex                                          # displays the widget
    ex.controls["min_block_size"].value = 3     # same as moving the slider
    ex.partition, ex.history

The Explorer is the glue of three parts: the controls (controls.py, ipywidgets), the
controller (controller.py: control state -> Config -> Partition, history, caches; no
ipywidgets) and the panels (panels.py: pure functions from a Partition to HTML).

Every control's observer and every button handler goes through `Explorer._guard`: a
`HiervizError` is shown in the error area, anything else is shown as an internal error; no
exception reaches the kernel, and the controls stay usable. A value a control cannot take
(an unknown view, a min_block_size outside the slider) is refused with a message, never
silently.

The work is in the modules above, in debounce.py (the Debouncer), options.py (the Explorer's
options, checked once), error_area.py (the error area and the guard), measuring.py ("measure
latency"), blockers_what_if.py (the Blockers tab's work), fastest_search.py ("find fastest"),
build_toggle.py ("build engines"), compile_today_line.py (the compile-today line),
numerics_check.py ("check numerics"), panel_writer.py (the panels several threads write),
long_work.py (what runs in the worker process) and background.py (the threads waiting on it);
this module wires them and holds the Explorer's public surface that API.md promises.

Changes are debounced (`debounce` seconds, on the kernel's event loop when there is one,
else on a timer thread); `debounce=0` applies each change at once, synchronously. Reading
`.partition`, `.config`, `.history` or `.error` first applies any change still pending, so
code always sees the state the controls describe.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping

import ipywidgets as widgets

from hierviz.settings.config import Config, field_names
from hierviz.errors import ConfigError, HiervizError
from hierviz.partitioner import Partition, graph_of, make_config
from hierviz.capturing.provenance import lowered_sources
from hierviz.widget import controls as ctl
from hierviz.widget import numerics_tab, panels
from hierviz.widget.blockers_what_if import BlockersWhatIf
from hierviz.widget.build_toggle import BuildToggle
from hierviz.widget.compile_today_line import CompileTodayLine
from hierviz.widget.controller import ControlState, Controller
from hierviz.widget.debounce import Debouncer
from hierviz.widget.error_area import ErrorArea
from hierviz.widget.fastest_search import BUDGET as FASTEST_BUDGET
from hierviz.widget.fastest_search import FastestSearch
from hierviz.widget.measuring import Measuring
from hierviz.widget.numerics_check import NumericsCheck
from hierviz.widget.options import OPTIONS, check_options, views
from hierviz.widget.panel_views import PanelViews
from hierviz.widget.panel_writer import PanelWriter
from hierviz.widget.diagram_widget import DiagramWidget
from hierviz.widget.selection_panel import SelectionPanel

if TYPE_CHECKING:
    import pandas as pd

    from hierviz.compare.tune_result import TuneResult

DEFAULT_DEBOUNCE = 0.15
DEFAULT_OUTPUT_DIR = "hierviz-export"


class Explorer(widgets.VBox):
    """The partition of one graph, its diagram, tables and history, and a control per setting.

    `.controls` maps each setting with a control in the settings table (hierviz.settings.config.SETTINGS:
    every Config field, the engine included) plus `view`, `focus` and `measure` to its widget;
    setting a widget's `.value` re-runs just as a click would. `.buttons` holds pin and the
    export buttons (`button.click()` presses them); `.panels` the output widgets;
    `.controller` the state behind them (usable without widgets).
    """

    def __init__(self, model: Any, example_inputs: Any = None, config: Config | dict | None = None, *,
                 measure: bool = False, view: str = "auto", focus: str | None = None,
                 debounce: float = DEFAULT_DEBOUNCE, output_dir: str | Path = DEFAULT_OUTPUT_DIR,
                 max_nodes: int | None = None, measure_options: Mapping[str, Any] | None = None,
                 name: str | None = None, **overrides: Any) -> None:
        super().__init__()
        self.add_class("hierviz-explorer")  # a stable hook for CSS and the browser test
        fields = field_names()
        unknown = sorted(set(overrides) - set(fields))
        if unknown:
            raise ConfigError(f"hv.explore: unknown argument(s) {unknown}; it takes Config fields "
                              f"({', '.join(fields)}) and the options {', '.join(OPTIONS)}.")
        self.debounce = check_options(view=view, focus=focus, debounce=debounce, measure=measure,
                                       output_dir=output_dir, max_nodes=max_nodes,
                                       measure_options=measure_options, name=name)
        if config is None and isinstance(model, Partition):
            config = model.config  # its engine too
        base = make_config(config, overrides)  # the settings, each read once
        self.graph = graph_of(model, example_inputs)
        self.example_inputs = example_inputs
        self.name = name or (type(model).__name__ if not isinstance(model, Partition) else "partition")
        self.controller = Controller(self.graph, base, example_inputs=example_inputs, max_nodes=max_nodes,
                                     measure_options=measure_options)
        self.internal_errors: list[BaseException] = []
        self.timings: dict[str, float] = {}
        self.panels = MappingProxyType({**ctl.build_panels(), "diagram": DiagramWidget()})  # the clickable diagram
        self.panel_writer = PanelWriter(self.panels, self.controller.store.stamp)  # written from several threads
        self.error_area = ErrorArea(self.controller.errors, self.panel_writer, lambda: self.controller.shown,
                                    self.internal_errors)
        self._guard = self.error_area.guard
        self._debouncer = Debouncer(self.debounce, self._update, self._guard)
        self.views = PanelViews(self.controller, self.panel_writer, self.error_area, {})  # controls: below
        self.measuring = Measuring(self.controller, self._guard(self.views.measured), self.internal_errors.append)
        self.compile_today = CompileTodayLine(self.controller, self.error_area, self.views)
        self.build_toggle = BuildToggle(self.controller, self.error_area, self.views)
        self.numerics_check = NumericsCheck(self.controller, self.error_area, self.panel_writer,
                                            self._debouncer.flush, self.views)

        # the op picker also offers the source ops the lowering replaced ("source:<op>", for
        # hv.source_ops), each with how many lowered nodes came from it
        self.source_ops = Counter(lowered_sources(self.controller.graph.graph.nodes))
        self.controls, extras = ctl.build_controls(base, self.controller.graph_ops, views(), measure=measure,
                                                   view=view, focus=focus, on_refused=self.error_area.refuse,
                                                   source_ops=self.source_ops)
        self.views.controls = self.controls
        self.min_block_size_box = self.controls["min_block_size"]  # the setting's value, any size
        self.min_block_size_slider = extras["min_block_size_slider"]  # 1..30 at most, beside it
        self.op_pick = extras["torch_executed_ops_pick"]  # the graph's ops offered, added to the op box
        self.teo_counts = extras["teo_counts"]
        self.backends = extras["backends"]
        self.buttons = ctl.build_buttons()
        self.fastest_search = FastestSearch(self.controller.long_work, self.controller.store, self.panels["fastest"],
                                            self.buttons["apply_fastest"], self.error_area)
        self.output_dir = widgets.Text(value=str(output_dir), description="output dir",
                                       layout=widgets.Layout(width="360px"))
        self.diff_against = ctl.Choice(options=["previous", "pinned"], value="previous", description="diff against",
                                       style={"description_width": "initial"})
        self.diff_against.on_refused, self.diff_against.what = self.error_area.refuse, "diff against"
        self.progress, self.progress_label = self.measuring.progress, self.measuring.progress_label
        self.what_if = BlockersWhatIf(self.controller, self.error_area,
                                      lambda: self.tabs.selected_index == ctl.tab_index("blockers_box"),
                                      self.flush, self._show_config)
        self.blockers_tab = self.what_if.tab
        more = {"progress": self.progress, "progress_label": self.progress_label,
                "diff_against": self.diff_against, "output_dir": self.output_dir, "blockers_tab": self.blockers_tab}
        self.selection = SelectionPanel(self.controller, self.controls, self.panels["diagram"], self.panels["ops"],
                                        self._guard, ctl.tab_index("ops"), what_if=self.what_if)
        more["selection"] = self.selection.box
        self.children, self.tabs = ctl.layout(self.controls, extras, self.panels, self.buttons, more)
        self.selection.tabs = self.tabs
        self._guard(self._debouncer.run_now)()
        self._connect()

    def _on_tab(self, _change: Any) -> None:
        self._refresh_diff()
        self.what_if.refresh()

    def _connect(self) -> None:
        for w in self.controls.values():
            w.observe(self._guard(self._on_change), names="value")
        self.diff_against.observe(self._guard(lambda _c: self._refresh_diff()), names="value")
        self.tabs.observe(self._guard(self._on_tab), names="selected_index")
        actions: dict[str, Callable[[], Any]] = {
            "pin": self.pin,
            "unpin": self.unpin,
            "export_svg": lambda: self.export("svg"),
            "export_html": lambda: self.export("html"),
            "export_csv": lambda: self.export("csv"),
            "find_fastest": self.find_fastest,
            "apply_fastest": self.apply_fastest,
            "check_numerics": self.numerics_check.start,
        }
        for key, action in actions.items():
            self.buttons[key].on_click(self._guard(lambda _b, action=action: action()))

    # ------------------------------------------------------------------ errors
    @property
    def _errors(self) -> dict[str, str]:
        return self.error_area.messages

    def _show_errors(self) -> None:
        self.error_area.show()

    def _show_config(self, config: Config) -> None:
        """The controls take `config`, re-partitioning once."""
        with self._debouncer.batch():
            ctl.show_config(self.controls, config)

    # ------------------------------------------------------------------ scheduling
    def _on_change(self, change: dict) -> None:
        if change.get("owner") is self.controls["focus"] and change["new"] and \
                self.controls["view"].value != "focus":
            self.controls["view"].value = "focus"  # typing a focus target switches to the focus view
            return
        self._debouncer.schedule()

    @property
    def scheduled(self) -> str | None:
        """How a debounced change waits: 'loop' (the kernel's event loop), 'timer' or None."""
        return self._debouncer.scheduled

    def flush(self) -> None:
        """Apply a change still waiting for its debounce, now."""
        self._debouncer.flush()

    # ------------------------------------------------------------------ the shown state
    def control_values(self) -> dict[str, Any]:
        """The Config fields the controls describe (possibly an invalid combination)."""
        return ctl.state_values(self.controls)

    def control_values_safe(self) -> dict[str, Any] | HiervizError:
        try:
            return self.control_values()
        except HiervizError as exc:
            return exc

    def _focus(self) -> str | None:
        """The focus target the focus picker shows (None when empty)."""
        return (self.controls["focus"].value or "").strip() or None

    def state(self) -> ControlState:
        """What the controls show, as the controller takes it."""
        c = self.controls
        return ControlState(values=self.control_values(), view=c["view"].value, focus=self._focus(),
                            measure=bool(c["measure"].value))

    @property
    def partition(self) -> Partition | None:
        """The partition for the shown settings; None while they are invalid (see `.error`)."""
        self.flush()
        return self.controller.partition

    @property
    def config(self) -> Config | None:
        """The Config the controls describe; None while they are invalid."""
        self.flush()
        return self.controller.config

    @property
    def error(self) -> str | None:
        """Why the shown settings cannot be partitioned (the HiervizError message), else None."""
        self.flush()
        return self._errors.get("partition")

    @property
    def errors(self) -> dict[str, str]:
        """Every message the error area shows, by kind: partition, control, diagram, measure, export, ..."""
        self.flush()
        return dict(self._errors)

    @property
    def measurement(self) -> Any:
        """The latency of the shown settings when measured, else None; a measurement of them
        still in flight (in the worker) is waited for. Its `.config` is the setting it belongs to."""
        self.flush()
        return self.measuring.of(self.controller.partition)

    @property
    def measure_thread(self) -> threading.Thread:
        """The thread waiting on the latest measurement (join it to wait)."""
        return self.measuring.thread

    @property
    def history(self) -> "pd.DataFrame":
        """One row per run: run number, config fields, stats, latency, error, and whether the
        partition came from the cache and how long the update took."""
        self.flush()
        return self.controller.history()

    @property
    def pinned(self) -> Partition | None:
        return self.controller.pinned

    @property
    def previous(self) -> Partition | None:
        return self.controller.previous

    @property
    def exported(self) -> list[Path]:
        """Files the export buttons wrote, newest first."""
        return self.controller.exported

    @property
    def svg(self) -> str | None:
        """The SVG the diagram panel shows (None when it shows a message instead)."""
        self.flush()
        if self.controller.shown is None:
            return None
        return self.controller.drawn_svg

    @property
    def moved(self) -> "pd.DataFrame | None":
        """`hv.diff(previous or pinned, current)`, as the Diff panel shows it."""
        self.flush()
        return self.controller.moved(self.diff_against.value)

    @property
    def selected(self) -> str | None:
        """The name of the node, subgraph, module, group ("subgraphs 3-7"), rolled-up run
        ("layers.0 ×24") or "(top level)" selected in the diagram (a click selects); None when
        nothing is. Setting it selects as a click does (such a name of the shown partition; None
        clears); a name it lacks is a ConfigError."""
        chosen = self.selection.selection
        return None if chosen is None else chosen.name

    @selected.setter
    def selected(self, name: str | None) -> None:
        self.flush()
        self.selection.select(name)

    # ------------------------------------------------------------------ one update
    def _update(self) -> None:
        """Show the controls' setting (the long work runs in the worker process meanwhile)."""
        t0 = time.perf_counter()
        self._errors.pop("control", None)
        try:
            state: ControlState | HiervizError = self.state()
        except HiervizError as exc:  # e.g. an unknown support choice: shown like any invalid setting
            state = exc
        upd = self.controller.update(state)
        timings = dict(upd.timings)
        part = upd.partition
        if part is not None and isinstance(state, ControlState):
            t = time.perf_counter()  # started, never waited for: it arrives later, for its own setting
            if state.measure:
                self.measuring.start(part)
            else:
                self._errors.pop("measure", None)
            timings["measure"] = time.perf_counter() - t
        # the counts first (the kernel sends each panel as it is set), then the diagram, then the rest (the
        # other tabs' tables, the History table rebuilt at every change): the background work starts once
        # the picture is there (it is kept for its own setting)
        t = time.perf_counter()
        self.views.stats()
        timings["panels"] = time.perf_counter() - t
        timings["counts"] = time.perf_counter() - t0  # partition and stats: what a change shows first
        if part is not None and isinstance(state, ControlState):
            t = time.perf_counter()
            view, focus = state.view, state.focus
            self.panel_writer.view("diagram", lambda: self.controller.diagram(part, view, focus))
            timings["render"] = time.perf_counter() - t
            t = time.perf_counter()
            tables = self.controller.tables(part)
            for key in ("ops", "summary", "report"):
                self.panels[key].value = tables[key]
            names = self.controller.focus_options(part)
            if list(self.controls["focus"].options) != names:
                self.controls["focus"].options = names
            timings["tables"] = time.perf_counter() - t
        t = time.perf_counter()
        self.views.history()
        timings["panels"] += time.perf_counter() - t
        t = time.perf_counter()
        self.compile_today.start()
        self.build_toggle.start()
        self.teo_counts.value = panels.teo_counts_html(self.controls["torch_executed_ops"].value,
                                                       self.controller.graph_ops + self.source_ops)
        self.panel_writer.view("numerics", lambda: numerics_tab.numerics_html(
            self.controller.numerics_of(self.controller.shown), self.controller.store.status(
                "numerics", None if self.controller.shown is None else self.controller.shown.config)))
        if upd.changed and upd.config is not None:
            self.fastest_search.shown()
        self._refresh_diff()
        self.what_if.refresh()
        timings["tabs"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - t0
        if upd.changed:
            self.controller.note_seconds(timings["total"])
        self.timings = timings
        self.panels["status"].value = panels.status_html(timings["total"], upd.cached)
        self.selection.refresh()  # the selection as the partition now shown has it
        self._show_errors()

    def _refresh_diff(self) -> None:
        """The Diff panel's table; its diagram (a second layout) only while the Diff tab is open."""
        drawn = self.tabs.selected_index == ctl.tab_index("diff_box")
        self.panels["diff"].value = self.controller.diff_panel(self.diff_against.value, diagram=drawn)

    # ------------------------------------------------------------------ the Blockers tab
    @property
    def blockers(self) -> "pd.DataFrame | None":
        """`blockers()` of the shown partition, as the Blockers tab lists it (None while the
        settings are invalid)."""
        return self.what_if.table()

    def apply_blocker(self, row: int) -> Config:
        """Apply row `row` of the Blockers tab as a what-if (as clicking it does): the controls
        take its setting; `undo_what_if()` (the tab's "back") restores the one before."""
        return self.what_if.apply_row(row)

    def undo_what_if(self) -> Config | None:
        """Back to the setting from before the first what-if (the Blockers tab's "back")."""
        return self.what_if.undo()

    @property
    def blockers_thread(self) -> threading.Thread:
        """The thread waiting on the Blockers tab's table (join it to wait)."""
        return self.what_if.thread

    # ------------------------------------------------------------------ buttons
    def pin(self) -> Partition | None:
        """Keep the current partition; the Diff panel can then compare every run with it."""
        self.flush()
        pinned = self.controller.pin()
        self.buttons["pin"].description = "re-pin this run"
        self.buttons["pin"].tooltip = f"pinned: {pinned.config.label()}"
        self.diff_against.value = "pinned"
        self._refresh_diff()
        return pinned

    def unpin(self) -> None:
        self.controller.unpin()
        self.buttons["pin"].description = "pin this run"
        self.diff_against.value = "previous"
        self._refresh_diff()

    def export(self, kind: str) -> Path | None:
        """Write the diagram ('svg'), the HTML report ('html') or the history ('csv') into the
        output directory; the path is shown in the Export panel and returned."""
        self.flush()
        try:
            path = self.controller.export(kind, self.output_dir.value or DEFAULT_OUTPUT_DIR, self.name,
                                          view=self.controls["view"].value, focus=self._focus())
        finally:
            self._show_errors()
        self.panels["export"].value = panels.exported_html(self.controller.exported)
        return path

    @property
    def numerics_thread(self) -> threading.Thread:
        """The thread of the latest numerics check (join it to wait)."""
        return self.numerics_check.thread

    def check_numerics(self) -> Any:
        """`hv.numerics` of the shown settings (the Numerics tab's button): the table in the
        Numerics panel, the diagram coloured by each subgraph's error; returns the result."""
        return self.numerics_check.check()

    # ------------------------------------------------------------------ find fastest
    @property
    def build_thread(self) -> threading.Thread:
        """The thread building the shown settings' engines (join it to wait)."""
        return self.build_toggle.thread

    @property
    def compile_today_thread(self) -> threading.Thread:
        """The thread making the latest "torch_tensorrt.compile today" line (join it to wait)."""
        return self.compile_today.thread

    def find_fastest(self, budget: int = FASTEST_BUDGET, *, wait: bool = False,
                     **tune_options: Any) -> threading.Thread:
        """Run a small `hv.tune` from the shown settings in the background (the widget stays
        usable); when it ends, the "apply best" button offers its best setting and `.fastest`
        holds the TuneResult. Errors are shown in the widget, never raised. `wait=True` blocks
        until it ends (for scripts and tests)."""
        return self.fastest_search.start(self.config, budget, wait=wait, **tune_options)

    @property
    def fastest(self) -> "TuneResult | None":
        """The latest "find fastest" result (None before one ends, or when it failed)."""
        return self.fastest_search.result

    def apply_fastest(self) -> Config | None:
        """Set the controls to the best setting `find_fastest` found (one re-run); returns it."""
        best = self.fastest_search.best()
        self._show_config(best)
        return best

    def close(self) -> None:
        """Close the widget and end its work: work waiting to start is dropped (a change still
        waiting for its debounce, a build queued behind another), and its jobs in the worker
        process are cancelled (compile-today, measuring, builds, find fastest stop at once;
        their panels say so); nothing starts the worker again for this Explorer. Other
        Explorers' work goes on; the worker process (and what it started) ends, killed, with
        the last Explorer."""
        self._debouncer.cancel()
        for job in (self.compile_today.job, self.build_toggle.job, self.measuring.job, self.numerics_check.job,
                    self.what_if.job, self.fastest_search.job):
            job.close()
        self.controller.long_work.close()
        super().close()

    def __repr__(self) -> str:
        part = self.controller.partition
        state = part if part is not None else f"invalid: {self._errors.get('partition')}"
        return f"<hv.Explorer {self.name}: {state!r}>"
