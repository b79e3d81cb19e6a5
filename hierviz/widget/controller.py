"""The Explorer's controller: turns the controls' state (a plain dict) into a Config and a
Partition, and keeps what the panels show — the history, the previous and pinned runs,
diagrams, tables, measurements, diffs and the messages of the error area.

It imports no ipywidgets, so it is tested with dicts alone (tests/widget/test_controller.py);
explorer.py maps widget values to `ControlState` and the results to panels (panels.py). Every
per-setting result sits in one store keyed by the setting (result_store.py: bounded, with each
result's status, the one rule for "still the setting on screen" and the one numbering of views),
the partition itself and the compile-today line included: what the panels show is read from it.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from hierviz.foundation.digests import text_digest
from hierviz.settings.config import Config, field_names, parse_config
from hierviz.errors import ConfigError, HiervizError
from hierviz.compare import columns
from hierviz.widget import panels
from hierviz.widget.long_work import LongWork
from hierviz.compare.partition_cache import lookup
from hierviz.widget.result_store import ResultStore
from hierviz.foundation.opnames import qualname
from hierviz.partitioner import CALLABLE_OPS, Partition, diff
from hierviz.partitioner.upstream.todays_compile import TodaysCompile

if TYPE_CHECKING:
    import pandas as pd
    from torch.fx import GraphModule

CACHE_SIZE = 64  # settings whose diagrams, tables, measurements and diffs are kept


@dataclass(frozen=True)
class ControlState:
    """What the controls show: the settings (`values`, possibly an invalid combination; the
    engine is one of them), the diagram view, the focus target and whether to measure."""

    values: Mapping[str, Any]
    view: str = "auto"
    focus: str | None = None
    measure: bool = False


@dataclass
class Update:
    """The outcome of one `Controller.update`: the Config and Partition (None when invalid,
    `error` says why), whether it differs from the last update and came from the cache."""

    config: Config | None
    partition: Partition | None
    error: str | None
    changed: bool
    cached: bool
    timings: dict[str, float] = field(default_factory=dict)


class Controller:
    """The Explorer's state machine over one captured graph (see the module docstring)."""

    def __init__(self, graph: "GraphModule", base: Config, *, example_inputs: Any = None,
                 max_nodes: int | None = None, measure_options: Mapping[str, Any] | None = None,
                 cache_size: int = CACHE_SIZE, in_worker: bool | None = None) -> None:
        self.graph = graph
        self.base = base
        self.example_inputs = example_inputs
        self.max_nodes = max_nodes
        self.measure_options = dict(measure_options or {})
        self.graph_ops: Counter = _count_ops(graph)
        self.node_names = [n.name for n in graph.graph.nodes if n.op in CALLABLE_OPS]

        self.config: Config | None = None
        self.partition: Partition | None = None
        self.previous: Partition | None = None  # the one shown before it
        self.pinned: Partition | None = None
        self.errors: dict[str, str] = {}
        self.runs: list[dict[str, Any]] = []
        self.exported: list[Path] = []
        self._state_key: Any = object()
        self.store = ResultStore(cache_size)  # every per-setting result, keyed by the setting
        # the SVG the latest diagram() made, which the Diagram panel shows (None: a message instead); a
        # measurement arriving later changes the picture's key, not what is on the screen until it is
        # redrawn. Several threads draw (a change, a build's or a measurement's redraw): each drawing takes
        # the store's number when it starts, and one that finishes after a newer one has written leaves
        # drawn_svg alone
        self.drawn_svg: str | None = None
        self._drawing = threading.Lock()
        self._drawn_by = 0  # the number of the drawing whose outcome drawn_svg holds
        # compile-today, measuring and find fastest: in the worker process
        self.long_work = LongWork(graph, example_inputs, in_worker=in_worker)

    @property
    def shown(self) -> Partition | None:
        """The partition the panels show (the last valid one): the store's, of the setting on screen."""
        return self.store.shown_result("partition")

    def cache_sizes(self) -> dict[str, int]:
        """Entries of each kind of result in the store (each holds at most `cache_size`)."""
        return self.store.sizes()

    # ------------------------------------------------------------------ settings -> partition
    def config_of(self, values: Mapping[str, Any]) -> Config:
        """The Config the control values describe, each read once by its setting's row
        (ConfigError when they are invalid)."""
        return parse_config(values)

    def update(self, state: ControlState | HiervizError) -> Update:
        """Partition for `state` (from the store when shown before, else the process-wide cache
        or partitioned) and put it on screen; add a history row when the settings changed;
        remember the previous valid partition for the Diff panel. `state` may be the
        HiervizError raised while reading the controls: it is shown like any other."""
        t0 = time.perf_counter()
        values = dict(state.values) if isinstance(state, ControlState) else {}
        cached = False
        try:
            if isinstance(state, HiervizError):
                raise state
            cfg = self.config_of(values)
            part = self.store.get("partition", cfg)
            cached = part is not None
            if part is None:
                part, cached = lookup(self.graph, cfg)
                self.store.put("partition", cfg, part)
            error = None
        except HiervizError as exc:
            cfg, part, error = None, None, str(exc)
        timings = {"partition": time.perf_counter() - t0}

        key = part.config if part is not None else ("error", error, repr(values))
        changed = key != self._state_key
        self._state_key = key
        self.config, self.partition = cfg, part
        self.errors.pop("action", None)
        if error is not None:
            self.errors["partition"] = error
        else:
            self.errors.pop("partition", None)
        if part is not None and not self.store.still(part.config):
            self.previous = self.shown
            self.store.show(part.config)
            for kind in ("measure", "build", "numerics"):  # about the setting shown before
                self.errors.pop(kind, None)
        if changed:
            self._add_run(values, cfg, part, error, cached)
        return Update(cfg, part, error, changed, cached, timings)

    def _add_run(self, values: Mapping[str, Any], cfg: Config | None, part: Partition | None,
                 error: str | None, cached: bool) -> None:
        row: dict[str, Any] = {"run": len(self.runs) + 1}
        if part is not None and cfg is not None:
            row.update(columns.config_columns(cfg))
            row.update(columns.stat_columns(part))
        else:
            row.update({k: columns.format_field(k, v) for k, v in values.items() if k in field_names()})
        row["error"] = error
        row["cached"] = cached
        row["_key"] = part.config if part is not None else None
        self.runs.append(row)

    def note_seconds(self, seconds: float) -> None:
        """Record how long the last run's update took (its history row's `seconds`)."""
        if self.runs:
            self.runs[-1]["seconds"] = round(seconds, 4)

    def history(self) -> "pd.DataFrame":
        """One row per run: run number, config fields, stats, latency, error, cached, seconds."""
        return columns.frame(self.runs, latency=True, extra_head=("run", *columns.head_columns(field_names())),
                             extra_tail=("cached", "seconds"))

    # ------------------------------------------------------------------ panels
    def diagram(self, part: Partition, view: str, focus: str | None) -> str:
        """The Diagram panel's HTML for `part` in `view` (cached per config, view and focus);
        a drawing error is filed under errors['diagram'] and shown in the panel. `drawn_svg` holds
        the SVG of the latest drawing started (an older one finishing later never replaces it)."""
        number = self.store.stamp()
        self.errors.pop("diagram", None)
        if view == "focus" and not focus:
            self._drawn(number, None)
            return panels.message_html(panels.FOCUS_HINT)
        try:
            svg = self.svg(part, view, focus)
        except HiervizError as exc:
            self.errors["diagram"] = str(exc)
            self._drawn(number, None)
            return panels.diagram_error_html(str(exc))
        self._drawn(number, svg)
        return panels.diagram_html(svg)

    def _drawn(self, number: int, svg: str | None) -> None:
        """Keep drawing `number`'s outcome as drawn_svg, unless a newer drawing has written it."""
        with self._drawing:
            if number > self._drawn_by:
                self._drawn_by, self.drawn_svg = number, svg

    def svg(self, part: Partition, view: str, focus: str | None) -> str:
        """The diagram as SVG text (RenderError when it cannot be drawn)."""
        focus = (focus or None) if view == "focus" else None
        key = self._svg_key(part, view, focus)  # with the cost overlay and numerics colours when there are
        svg = self.store.get("picture", part.config, key)
        if svg is None:
            from hierviz.drawing import to_svg

            svg = self.store.put("picture", part.config,
                                 to_svg(part, view=view, focus=focus, max_nodes=self.max_nodes,
                                        measurement=self.measurement_of(part), numerics=self.numerics_of(part),
                                        builds=self.builds_of(part)), key)
        return svg

    def cached_svg(self, part: Partition, view: str, focus: str | None) -> str | None:
        """The SVG already drawn for these settings, else None (never draws)."""
        focus = (focus or None) if view == "focus" else None
        return self.store.get("picture", part.config, self._svg_key(part, view, focus))

    def _svg_key(self, part: Partition, view: str, focus: str | None) -> tuple:
        measured, checked, built = self.measurement_of(part), self.numerics_of(part), self.builds_of(part)
        return (view, focus, self.max_nodes, None if measured is None else id(measured),
                None if checked is None else id(checked), None if built is None else id(built))

    def tables(self, part: Partition) -> dict[str, str]:
        """The Ops, Subgraphs and Report panels (cached per config)."""
        out = self.store.get("tables", part.config)
        if out is None:
            out = self.store.put("tables", part.config, panels.tables_html(part))
        return out

    def blockers_of(self, part: Partition | None, *, compute: bool = True) -> "pd.DataFrame | None":
        """`part.blockers()` (cached per config; the Blockers tab), None for no partition; made
        in the worker process (each what-if re-partitions); `compute=False`: None unless made."""
        if part is None:
            return None
        out = self.store.get("blockers", part.config)
        if out is None and compute:
            out = self.store.put("blockers", part.config, self.long_work.blockers(part))
            part.keep_blockers(out)  # as part.blockers() keeps its own (the report reads it)
        return out

    def focus_options(self, part: Partition) -> list[str]:
        """What the focus picker offers: subgraph tags, then node names."""
        return [sg.tag for sg in part.subgraphs] + self.node_names

    def stats(self, measuring: bool, building: bool = False) -> str:
        """The stats panel, with torch_tensorrt.compile's partition once the worker made it (the
        store's compile-today line of the shown setting, or its failure), and the engines built
        here when "build engines" is on."""
        shown = self.shown
        if shown is None:
            return ""
        key = shown.config
        text = panels.stats_html(shown, self.measurement_of(shown),
                                 self.store.status("measurement", key) if measuring else None)
        text += panels.compile_today_html(self._today_shown(key), shown)
        if building:
            text += panels.builds_html(self.builds_of(shown), self.store.status("build", key))
        return text

    def _today_shown(self, key: Config) -> TodaysCompile | None:
        """The compile-today line of setting `key`; its failure as a line that says it; None
        while it is made (or about to be)."""
        today = self.store.get("compile_today", key)
        failed = self.store.failure("compile_today", key) if today is None else None
        return today if failed is None else TodaysCompile(None, failed.words(), 0.0)

    def compile_today_line(self, part: Partition, wanted: Callable[[], bool] = lambda: True) -> TodaysCompile | None:
        """The "torch_tensorrt.compile today" line of `part`'s settings, kept in the store: from
        the process-wide compile-today cache when made, else made in the worker (running while
        it is, failed with the error it raises). None, and no status, when `wanted()` says no by
        the time the worker is free."""
        key = part.config
        got = self.store.get("compile_today", key)
        if got is None:
            got = self.long_work.made(part)
        if got is not None:
            return self.store.put("compile_today", key, got)
        self.store.running("compile_today", key)
        try:
            got = self.long_work.make_line(part, wanted)
        except HiervizError as exc:
            self.store.failed("compile_today", key, str(exc))
            raise
        if got is None:
            self.store.forget("compile_today", key)
            return None
        return self.store.put("compile_today", key, got)

    def diff_target(self, against: str) -> tuple[Partition | None, str]:
        """(the partition the Diff panel compares with, its name): 'previous' or 'pinned'."""
        if against == "pinned":
            return self.pinned, "pinned run"
        if against == "previous":
            return self.previous, "previous run"
        raise ConfigError(f"diff against must be 'previous' or 'pinned', not {against!r}")

    def moved(self, against: str) -> "pd.DataFrame | None":
        """`hv.diff(previous or pinned, shown)`, cached per pair of configs; None without a pair."""
        other, _ = self.diff_target(against)
        if other is None or self.shown is None:
            return None
        df = self.store.get("diff", self.shown.config, ("table", other.config))
        if df is None:
            df = self.store.put("diff", self.shown.config, diff(other, self.shown), ("table", other.config))
        return df

    def diff_panel(self, against: str, diagram: bool = True) -> str:
        """The Diff panel: the table of moved nodes, then (`diagram`) the diff diagram (module
        view, or collapsed for graphs without module information): `other` (previous or
        pinned) drawn against the shown partition, so changes read "old backend \u2192 new
        backend"."""
        other, what = self.diff_target(against)
        table = panels.diff_html(self.moved(against), self.shown, other, what)
        if other is None or self.shown is None or not diagram:
            return table
        key = ("diagram", other.config, self.max_nodes)
        svg = self.store.get("diff", self.shown.config, key)
        if svg is None:
            from hierviz.drawing import to_svg

            try:
                try:
                    svg = to_svg(other, view="modules", against=self.shown, max_nodes=self.max_nodes)
                except HiervizError:  # no nn_module_stack (a hand-built graph): by subgraph
                    svg = to_svg(other, view="collapsed", against=self.shown, max_nodes=self.max_nodes)
            except HiervizError as exc:
                return table + panels.diagram_error_html(str(exc))
            self.store.put("diff", self.shown.config, svg, key)
        return table + panels.diagram_html(svg)

    def pin(self) -> Partition:
        """Keep the current partition for the Diff panel to compare later runs with."""
        if self.partition is None:
            raise ConfigError("nothing to pin: the current settings are invalid; fix them first.")
        self.pinned = self.partition
        return self.pinned

    def unpin(self) -> None:
        self.pinned = None

    # ------------------------------------------------------------------ measuring
    def measurement_of(self, part: Partition | None) -> Any:
        """The stored measurement of `part`'s settings (with this Explorer's measure options), else None."""
        if part is None:
            return None
        return self.store.get("measurement", part.config)

    def measure(self, part: Partition, progress: Callable[[str, int, int], None] | None = None) -> Any:
        """`hv.measure` of `part` (stored per config), filling in its history row's latency.
        A MeasureError is filed under errors['measure'] and None returned."""
        key = part.config
        m = self.store.get("measurement", key)
        if m is None:
            self.store.running("measurement", key)

            def staged(stage: str, done: int, total: int) -> None:
                self.store.running("measurement", key, str(stage))
                if progress is not None:
                    progress(stage, done, total)

            # in the worker process; its warnings are shown in the stats panel (Measurement.warnings)
            m = self._filed("measure", lambda: self.long_work.measure(part, staged, self.measure_options), key)
            if m is None:
                return None
            self.store.put("measurement", key, m)
        self.errors.pop("measure", None)
        for row in reversed(self.runs):  # the latest run of the setting it belongs to (maybe not the last run)
            if row.get("_key") == part.config:
                row.update(columns.latency_columns(m))
                break
        return m

    def builds_of(self, part: Partition | None) -> Any:
        """The stored builds (hv.Builds) of `part`'s settings, else None."""
        return None if part is None else self.store.get("build", part.config)

    def build(self, part: Partition) -> Any:
        """`part.build()` in the worker (stored per config): every TensorRT engine converted and
        built. A HiervizError (no TensorRT builder here, ...) is filed under errors['build'] and
        None returned."""
        got = self.store.get("build", part.config)
        if got is None:
            self.store.running("build", part.config)
            got = self._filed("build", lambda: self.long_work.build(part), part.config)
            if got is None:
                return None
            self.store.put("build", part.config, got)
        self.errors.pop("build", None)
        return got

    def numerics_of(self, part: Partition | None) -> Any:
        """The stored hv.numerics check of `part`'s settings, else None."""
        return None if part is None else self.store.get("numerics", part.config)

    def check_numerics(self, part: Partition) -> Any:
        """`hv.numerics` of `part` with the example inputs and measure options (stored as its
        measurement is; the compile cache makes it cheap after a measurement). A HiervizError
        is filed under errors['numerics'] and None returned."""
        key = part.config
        self.store.running("numerics", key)
        result = self._filed("numerics", lambda: self.long_work.numerics(part, self.measure_options), key)
        return None if result is None else self.store.put("numerics", key, result)

    def _filed(self, kind: str, run: Callable[[], Any], key: Config) -> Any:
        """`run()` with its warnings silenced; a HiervizError it raises is the failed status of
        `kind` for setting `key`, and, while that setting is on screen, filed under errors[kind]
        (cleared when it succeeds); then None is returned."""
        stored = {"measure": "measurement"}.get(kind, kind)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = run()
        except HiervizError as exc:
            self.store.failed(stored, key, str(exc))
            if self.store.still(key):
                self.errors[kind] = str(exc)
            return None
        if self.store.still(key):
            self.errors.pop(kind, None)
        return result

    # ------------------------------------------------------------------ export
    def export(self, kind: str, out_dir: str | Path, name: str, *, view: str = "auto",
               focus: str | None = None) -> Path:
        """Write the diagram ('svg'), the HTML report ('html') or the history ('csv') into
        `out_dir`; returns the path. Errors are ConfigError (also filed under errors['export'])."""
        self.errors.pop("export", None)
        try:
            path = self._export(kind, Path(out_dir).expanduser(), name, view, focus)
        except HiervizError as exc:
            self.errors["export"] = str(exc)
            raise
        except OSError as exc:
            self.errors["export"] = f"could not write to {str(out_dir)!r}: {exc}"
            raise ConfigError(self.errors["export"]) from exc
        path = path.resolve()
        self.exported.insert(0, path)
        return path

    def _export(self, kind: str, out: Path, name: str, view: str, focus: str | None) -> Path:
        if kind not in ("svg", "html", "csv"):
            raise ConfigError(f"export kind must be 'svg', 'html' or 'csv', not {kind!r}")
        part = self.partition
        if kind != "csv" and part is None:
            raise ConfigError("the current settings are invalid; fix them before exporting.")
        out.mkdir(parents=True, exist_ok=True)
        if kind == "csv" or part is None:  # (part is None only for "csv", refused above otherwise)
            path = out / f"{slug(name)}-history.csv"
            self.history().to_csv(path, index=False)
            return path
        stem = f"{slug(name)}-{slug(part.config.label())}"
        if kind == "html":
            self.compile_today_line(part)  # made in the worker: never upstream's partitioner in the kernel
            if part.engine == "hierviz" or part.graph is None:
                self.blockers_of(part)  # the report's "What to change", made in the worker too
            part.compile_today()  # the report's "torch_tensorrt.compile today" table (from the line just made)
            return Path(part.save(out / f"{stem}.html"))
        path = out / f"{stem}.svg"
        svg = self.cached_svg(part, view, focus)
        if svg is None:
            svg = self.svg(part, "auto", None)
        path.write_text(svg, encoding="utf-8")
        return path


def _count_ops(graph: "GraphModule") -> Counter:
    """How many nodes call each op (qualified names, as torch_executed_ops takes them)."""
    counts: Counter = Counter()
    for node in graph.graph.nodes:
        if node.op in CALLABLE_OPS:
            counts[qualname(node.target) if node.op == "call_function" else str(node.target)] += 1
    return counts


def slug(text: str, limit: int = 60) -> str:
    """`text` as a file-name part: unsafe characters replaced, long ones shortened with a hash."""
    import re

    s = re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_") or "config"
    if len(s) > limit:
        s = s[:limit] + "-" + text_digest(text, 8)
    return s

