"""hv.explore of a model graph by graph (`ir="torch_compile"`, or a MultiGraphPartition /
DynamoCapture given): a graph picker, the Explorer of the picked dynamo graph (its controls,
diagram, tables, history, measuring: explorer.Explorer on that graph's aten graph and its first
call's inputs), and below it every graph at the same settings: the picture of all graphs in
execution order with the graph breaks between them (MultiGraphPartition.render) and the
totals, re-partitioned and redrawn on each setting change.

Picking another graph opens its Explorer at the settings in force (one Explorer per graph, kept).
Every callback is guarded: an error is shown in the widget, never raised into the kernel.
"""

from __future__ import annotations

import html
import traceback
from typing import Any, Callable, cast

import ipywidgets as widgets

from hierviz.config import Config
from hierviz.errors import HiervizError
from hierviz.partitioner import MultiGraphPartition, partition
from hierviz.partitioner.multi_graph import NOTHING_CAPTURED
from hierviz.widget.explorer import Explorer


class GraphsExplorer(widgets.VBox):
    """Every dynamo graph of a model, or one picked. `.picker` (the graph picker: its value is a
    graph index), `.explorer` (the picked graph's Explorer), `.explorers` (those opened, by
    index), `.partition` (the MultiGraphPartition at the settings in force), `.every` (the
    every-graph panel's HTML widget), `.internal_errors`."""

    def __init__(self, multi: MultiGraphPartition, *, measure: bool = False, **options: Any) -> None:
        super().__init__()
        self.add_class("hierviz-graphs-explorer")
        self.multi = multi
        self.partition: MultiGraphPartition = multi
        self.options = {"measure": measure, **options}
        self.internal_errors: list[BaseException] = []
        self.explorers: dict[int, Explorer] = {}
        self._quiet = False  # settings being put on a graph's controls: one redraw after, not one per control
        graphs = multi.capture.graphs
        self.picker = widgets.Dropdown(
            options=[(f"g{g.index}: {g.function or '?'} line {g.line}, {len(g.ops)} ops", g.index) for g in graphs],
            value=self._largest() if graphs else None, description="graph", disabled=not graphs,
            layout=widgets.Layout(width="520px"))
        self.every = widgets.HTML()
        self.error = widgets.HTML()
        self.holder = widgets.VBox()
        head = widgets.HTML(f"<b>{html.escape(multi.capture.model)}</b>: {len(graphs)} graph(s), "
                            f"{len(multi.breaks)} graph break(s), as torch.compile(backend='torch_tensorrt') runs it")
        self.children = (head, self.picker, self.error, self.holder,
                         widgets.HTML("<b>Every graph at these settings</b>"), self.every)
        self.picker.observe(self._guard(self._on_pick), names="value")
        if not graphs:  # dynamo made no graph: nothing to explore, and the breaks say why
            self.holder.children = (widgets.HTML(_nothing_captured_html(multi)),)
        else:
            self._guard(self._open)(self.picker.value, multi.config)
        self._guard(self._redraw_every)()

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
        elif ex.config != config:
            self._set(ex, config)
        self.holder.children = (ex,)

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
        self._open(change["new"], self.partition.config)

    # ------------------------------------------------------------------ every graph
    def _on_setting(self, change: dict) -> None:
        if self._quiet:
            return
        ex = self.explorer
        if ex is None:
            return
        values = ex.control_values_safe()
        if isinstance(values, HiervizError):
            raise values
        config = ex.controller.config_of(values)
        if config != self.partition.config:
            self.partition = cast(MultiGraphPartition, partition(self.multi, config=config))  # graph by graph, as given
            self._redraw_every()

    def _redraw_every(self) -> None:
        part = self.partition
        s = part.stats
        if s["nothing_captured"]:
            self.every.value = ""
            return
        by = ", ".join(f"{b} {n}" for b, n in s["subgraphs_by_backend"].items() if n)
        totals = (f"{s['graphs']} graphs, {s['graph_breaks']} breaks: {s['subgraphs']} subgraphs ({by}), "
                  f"{s['accelerated_ops']}/{s['compute_ops']} ops accelerated, {s['graphs_left_whole']} graph(s) "
                  f"left whole in PyTorch")
        svg = part.render().pipe(format="svg").decode("utf-8", "replace")
        self.every.value = f"<p>{html.escape(totals)}</p><div style='overflow:auto;max-height:900px'>{svg}</div>"

    # ------------------------------------------------------------------ errors
    def _guard(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                result = fn(*args, **kwargs)
                self.error.value = ""
                return result
            except HiervizError as exc:
                self.error.value = f"<pre style='color:#b00'>{html.escape(str(exc))}</pre>"
            except Exception as exc:  # noqa: BLE001 - the kernel must never see it
                self.internal_errors.append(exc)
                text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
                self.error.value = f"<pre style='color:#b00'>unexpected {html.escape(type(exc).__name__)}: " \
                                   f"{html.escape(str(exc))}\n{html.escape(text)}</pre>"
            return None
        guarded.__name__ = getattr(fn, "__name__", "callback")
        return guarded

    def close(self) -> None:
        """Close the widget and every graph's Explorer (each ends its worker process)."""
        for ex in self.explorers.values():
            ex.close()
        super().close()

    def __repr__(self) -> str:
        showing = f"showing g{self.picker.value}" if self.multi.graphs else "nothing captured"
        return f"<hv.GraphsExplorer {self.multi.capture.model}: {len(self.multi.graphs)} graphs, {showing}>"


def _nothing_captured_html(multi: MultiGraphPartition) -> str:
    """What the explorer shows for a model dynamo made no graph of: that, and the breaks."""
    breaks = "".join(f"<li>{html.escape(b.location or 'unknown line')}: {html.escape(b.short)}</li>" for b in multi.breaks)
    return (f"<p><b>{html.escape(NOTHING_CAPTURED[0].upper() + NOTHING_CAPTURED[1:])}</b>: dynamo made no graph, so "
            f"there is nothing to partition and nothing is accelerated (0%). Its graph breaks:</p><ul>{breaks}</ul>")


__all__ = ["GraphsExplorer"]
