"""hv.explore of a model graph by graph (`ir="torch_compile"`, or a MultiGraphPartition /
DynamoCapture given): a graph picker, the Explorer of the picked dynamo graph (its controls,
diagram, tables, history, measuring: explorer.Explorer on that graph's aten graph and its first
call's inputs), and below it every graph at the same settings: the totals over all graphs and,
on request ("draw every graph"), the picture of all graphs in execution order with the graph
breaks between them (MultiGraphPartition.render).

A setting change redraws only the shown graph (its Explorer); every graph is re-partitioned in
the background (every_graph.Latest, after the change's debounce and once the shown graph is
drawn), and the totals say they are pending until that pass ends, then show its numbers; the
picture, when on, is redrawn in the background after the pass, once the controls have been still
for PICTURE_QUIET_S (a setting a slider passes through is not drawn: its layout would compete
with the shown graph's), and says which setting it shows.
Picking another graph opens its Explorer at the settings in force (one Explorer per graph, kept),
re-partitioned there at once. Every callback is guarded: an error is shown in the widget, never
raised into the kernel; the background's errors are shown in the every-graph panel.
"""

from __future__ import annotations

import html
import threading
import time
from typing import Any, Callable

import ipywidgets as widgets

from hierviz.settings.config import Config
from hierviz.errors import HiervizError
from hierviz.partitioner import MultiGraphPartition
from hierviz.partitioner.by_graph.multi_graph import NOTHING_CAPTURED
from hierviz.widget.debounce import Debouncer
from hierviz.widget.every_graph import Latest, Superseded, partition_every
from hierviz.widget.explorer import DEFAULT_DEBOUNCE, Explorer
from hierviz.widget.guard import guarded


PICTURE_QUIET_S = 0.4  # the picture of every graph is redrawn once no control changed for this long
PICTURE_OFF = ("The picture of every graph is drawn on request (it is large: every graph laid out in one "
               "SVG): press \"draw every graph\"; it is then redrawn in the background after each change.")


class GraphsExplorer(widgets.VBox):
    """Every dynamo graph of a model, or one picked. `.picker` (the graph picker: its value is a
    graph index), `.explorer` (the picked graph's Explorer), `.explorers` (those opened, by
    index), `.partition` (the MultiGraphPartition at the settings in force: it waits for the
    background pass), `.pending` (the settings every graph is being re-partitioned at, else
    None), `.every` (the every-graph panel's HTML widget: the totals, or that they are pending),
    `.draw_every` (the toggle of the picture of every graph), `.picture` (that picture's HTML
    widget) and `.picture_note` (which setting it shows), `.wait()`, `.internal_errors`."""

    def __init__(self, multi: MultiGraphPartition, *, measure: bool = False, **options: Any) -> None:
        super().__init__()
        self.add_class("hierviz-graphs-explorer")
        self.multi = multi
        self.options = {"measure": measure, **options}
        self.internal_errors: list[BaseException] = []
        self.explorers: dict[int, Explorer] = {}
        self._shown: Explorer | None = None  # the Explorer on screen (until the picker's change is applied)
        self._quiet = False  # settings being put on a graph's controls: one redraw after, not one per control
        self._target: Config = multi.config  # the settings in force (the last change's)
        self._latest: tuple[Config, MultiGraphPartition] = (multi.config, multi)  # the last pass that ended
        self._every_error: tuple[Config, str] | None = None  # the settings the last pass failed at, and why
        self._last_change = 0.0  # time.monotonic() of the last control change
        self._drawn_at: Config | None = None  # the settings the picture shown is of
        self._show_lock = threading.Lock()  # the panels are written from the background too
        self._every = Latest("hierviz-every-graph", self._partition_work, self._partitioned,
                             self._every_failed, answered=multi.config)
        self._drawing = Latest("hierviz-every-graph-picture", self._draw_work, self._drawn, self._draw_failed)
        self._debouncer = Debouncer(DEFAULT_DEBOUNCE, self._apply_setting, self._guard)
        graphs = multi.capture.graphs
        self.picker = widgets.Dropdown(
            options=[(f"g{g.index}: {g.function or '?'} line {g.line}, {len(g.ops)} ops", g.index) for g in graphs],
            value=self._largest() if graphs else None, description="graph", disabled=not graphs,
            layout=widgets.Layout(width="520px"))
        self.every = widgets.HTML()
        self.picture = widgets.HTML()
        self.picture_note = widgets.HTML()
        self.draw_every = widgets.ToggleButton(value=False, description="draw every graph", disabled=not graphs,
                                               tooltip="Draw the picture of every graph (redrawn in the background "
                                                       "after each change)", layout=widgets.Layout(width="180px"))
        self.error = widgets.HTML()
        self.holder = widgets.VBox()
        head = widgets.HTML(f"<b>{html.escape(multi.capture.model)}</b>: {len(graphs)} graph(s), "
                            f"{len(multi.breaks)} graph break(s), as torch.compile(backend='torch_tensorrt') runs it")
        self.children = (head, self.picker, self.error, self.holder,
                         widgets.HBox([widgets.HTML("<b>Every graph at these settings</b>&nbsp;"), self.draw_every]),
                         self.every, self.picture_note, self.picture)
        self.picker.observe(self._guard(self._on_pick), names="value")
        self.draw_every.observe(self._guard(self._on_draw_every), names="value")
        if not graphs:  # dynamo made no graph: nothing to explore, and the breaks say why
            self.holder.children = (widgets.HTML(_nothing_captured_html(multi)),)
        else:
            self._guard(self._open)(self.picker.value, multi.config)
        self._guard(self._show_every)()

    # ------------------------------------------------------------------ the picked graph
    def _largest(self) -> int:
        sizes = [len(g.ops) for g in self.multi.capture.graphs]
        return max(range(len(sizes)), key=lambda k: (sizes[k], -k)) if sizes else 0

    @property
    def explorer(self) -> Explorer | None:
        """The picked graph's Explorer; None when dynamo made no graph."""
        return self.explorers.get(self.picker.value) if self.picker.value is not None else None

    def _open(self, k: int, config: Config) -> None:
        ex = self.explorers.get(k)
        if ex is None:
            g = self.multi.capture.graphs[k]
            ex = Explorer(g.graph, g.example_inputs, config, name=f"g{k}", **self.options)
            ex.controller.long_work.dynamo_graph = f"g{k}"  # its builds say what torch.compile then runs
            for w in ex.controls.values():
                w.observe(self._guard(self._on_setting), names="value")
            self.explorers[k] = ex
            self._debouncer.delay = ex.debounce  # the Explorers' own debounce (an option checked there)
        elif ex.config != config:
            self._set(ex, config)
        self.holder.children = (ex,)
        self._shown = ex

    def _set(self, ex: Explorer, config: Config) -> None:
        """Put `config` on `ex`'s controls (the settings follow the user from graph to graph)."""
        from hierviz.widget.controls import show_config

        self._quiet = True
        try:
            show_config(ex.controls, config)
        finally:
            self._quiet = False
        ex.flush()

    def _on_pick(self, change: dict) -> None:
        self._debouncer.flush()  # a change still waiting is the settings in force
        self._open(change["new"], self._target)

    # ------------------------------------------------------------------ every graph
    @property
    def partition(self) -> MultiGraphPartition:
        """The MultiGraphPartition at the settings in force: waits for a change still debouncing
        and for the background pass (when that pass failed, the last one made: the every-graph
        panel says why)."""
        self._debouncer.flush()
        self._every.wait()
        return self._latest[1]

    @property
    def pending(self) -> Config | None:
        """The settings every graph is being re-partitioned at (the totals are pending), else None."""
        return self._every.pending

    def wait(self, timeout: float | None = None) -> bool:
        """Apply a change still debouncing, then wait for the background work (every graph
        re-partitioned, and the picture when on): True when it ended, False after `timeout` s."""
        self._debouncer.flush()
        if not self._every.wait(timeout):
            return False
        return self._drawing.wait(timeout) if self.draw_every.value else True

    def _on_setting(self, change: dict) -> None:
        if self._quiet:
            return
        self._last_change = time.monotonic()
        self._debouncer.schedule()

    def _apply_setting(self) -> None:
        """After a change's debounce: the shown graph first (its Explorer's own update, done
        now if still waiting), then every graph in the background."""
        ex = self._shown  # whose controls changed (the picker may show another graph already)
        if ex is None:
            return
        ex.flush()
        values = ex.control_values_safe()
        if isinstance(values, HiervizError):
            raise values
        config = ex.controller.config_of(values)
        if config != self._target:
            self._target = config
            self._show_every()  # pending, at once
            self._every.request(config)

    def _partition_work(self, config: Config, wanted: Callable[[], bool]) -> MultiGraphPartition:
        return partition_every(self.multi.capture, config, wanted)

    def _partitioned(self, config: Config, part: MultiGraphPartition) -> None:
        """On the background thread: a pass ended and its settings are still wanted."""
        self._latest = (config, part)
        if self._every_error is not None and self._every_error[0] == config:
            self._every_error = None
        self._show_every()
        if self.draw_every.value:
            self._drawing.request(config)

    def _every_failed(self, config: Config, exc: Exception) -> None:
        if not isinstance(exc, HiervizError):
            self.internal_errors.append(exc)
        self._every_error = (config, f"{type(exc).__name__}: {exc}" if not isinstance(exc, HiervizError) else str(exc))
        self._show_every()

    def _show_every(self) -> None:
        """The totals (the last pass's, when it is of the settings in force), or that they are
        pending (with the last ones, marked as those of the previous settings), or why the pass
        failed; and the picture's note."""
        with self._show_lock:
            done, part = self._latest
            target = self._target
            if not self.multi.graphs:
                self.every.value = ""
            elif done == target:
                self.every.value = f"<p>{html.escape(totals_text(part))}</p>"
            elif self._every_error is not None and self._every_error[0] == target:
                self.every.value = (f"<p style='color:#b00'>Every graph could not be re-partitioned at "
                                    f"{html.escape(target.label())}: {html.escape(self._every_error[1])}</p>"
                                    f"<p style='color:#888'>At the previous settings ({html.escape(done.label())}): "
                                    f"{html.escape(totals_text(part))}</p>")
            else:
                self.every.value = (f"<p><i>Totals pending: re-partitioning every graph at "
                                    f"{html.escape(target.label())} ...</i></p>"
                                    f"<p style='color:#888'>At the previous settings ({html.escape(done.label())}): "
                                    f"{html.escape(totals_text(part))}</p>")
            self.picture_note.value = self._picture_note(target)

    # ------------------------------------------------------------------ the picture of every graph
    def _picture_note(self, target: Config) -> str:
        if not self.multi.graphs:
            return ""
        if not self.draw_every.value:
            return f"<p style='color:#555'>{html.escape(PICTURE_OFF)}</p>"
        drawn = self._drawn_at
        if drawn == target:
            return f"<p style='color:#555'>The picture of every graph at {html.escape(target.label())}:</p>"
        if drawn is None:
            return f"<p><i>Drawing every graph at {html.escape(target.label())} ...</i></p>"
        return (f"<p><i>Redrawing every graph at {html.escape(target.label())} ...</i> The picture below is of the "
                f"previous settings ({html.escape(drawn.label())}).</p>")

    def _on_draw_every(self, change: dict) -> None:
        if change["new"]:
            done = self._latest[0]
            if done == self._target:
                self._drawing.request(done)  # else the pass in flight asks for it when it ends
        else:
            self._drawing.forget()
            self._drawn_at = None
            self.picture.value = ""
        self._show_every()

    def _draw_work(self, config: Config, wanted: Callable[[], bool]) -> str:
        while True:  # drawn once the user pauses: a setting passed through is not drawn
            done, part = self._latest
            if done != config or not wanted():
                raise Superseded
            quiet = self._last_change + PICTURE_QUIET_S - time.monotonic()
            if quiet <= 0:
                break
            time.sleep(min(quiet, 0.05))
        return part.render().pipe(format="svg").decode("utf-8", "replace")

    def _drawn(self, config: Config, svg: str) -> None:
        if not self.draw_every.value:
            return
        self.picture.value = f"<div style='overflow:auto;max-height:900px'>{svg}</div>"
        self._drawn_at = config
        self._show_every()

    def _draw_failed(self, config: Config, exc: Exception) -> None:
        if not isinstance(exc, HiervizError):
            self.internal_errors.append(exc)
        self.picture.value = ""
        self._drawn_at = None
        self.picture_note.value = (f"<p style='color:#b00'>The picture of every graph at {html.escape(config.label())} "
                                   f"could not be drawn: {html.escape(str(exc))}</p>")

    # ------------------------------------------------------------------ errors
    def _guard(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return guarded(fn, "GraphsExplorer", self.internal_errors, self._show_error, succeeded=self._clear_error)

    def _show_error(self, message: str, _internal: bool) -> None:
        self.error.value = f"<pre style='color:#b00'>{html.escape(message)}</pre>"

    def _clear_error(self) -> None:
        self.error.value = ""

    def close(self) -> None:
        """Close the widget: its background work stops, and every graph's Explorer is closed
        (each releases its own work; other explorers' go on)."""
        self._debouncer.cancel()
        self._every.close()
        self._drawing.close()
        for ex in self.explorers.values():
            ex.close()
        super().close()

    def __repr__(self) -> str:
        showing = f"showing g{self.picker.value}" if self.multi.graphs else "nothing captured"
        return f"<hv.GraphsExplorer {self.multi.capture.model}: {len(self.multi.graphs)} graphs, {showing}>"


def totals_text(part: MultiGraphPartition) -> str:
    """The every-graph panel's totals: graphs, breaks, subgraphs by backend, ops accelerated."""
    s = part.stats
    by = ", ".join(f"{b} {n}" for b, n in s["subgraphs_by_backend"].items() if n)
    return (f"{s['graphs']} graphs, {s['graph_breaks']} breaks: {s['subgraphs']} subgraphs ({by}), "
            f"{s['accelerated_ops']}/{s['compute_ops']} ops accelerated, {s['graphs_left_whole']} graph(s) "
            f"left whole in PyTorch")


def _nothing_captured_html(multi: MultiGraphPartition) -> str:
    """What the explorer shows for a model dynamo made no graph of: that, and the breaks."""
    breaks = "".join(f"<li>{html.escape(b.location or 'unknown line')}: {html.escape(b.short)}</li>"
                     for b in multi.breaks)
    return (f"<p><b>{html.escape(NOTHING_CAPTURED[0].upper() + NOTHING_CAPTURED[1:])}</b>: dynamo made no graph, so "
            f"there is nothing to partition and nothing is accelerated (0%). Its graph breaks:</p><ul>{breaks}</ul>")


__all__ = ["GraphsExplorer"]
