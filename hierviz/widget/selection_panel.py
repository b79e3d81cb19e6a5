"""The explorer's selection panel: what was clicked in the diagram, and what to do with it.

Beside the diagram (a DiagramWidget), it shows the selected node's op, backend, subgraph,
reason, module and source line (a subgraph's ops, inputs, outputs and build row; a module's
nodes by backend), with buttons:
- "run this op in PyTorch": the node's op joins the torch_executed_ops control, so the explorer
  re-partitions as if it were typed there; "undo" takes the op out again;
- "focus here": the focus control takes the name (the focus view draws its neighbourhood);
- "show its rows in Ops": the Ops tab opens showing only the selection's ops;
- "clear": nothing selected (the Ops tab shows every row again).
The panel follows the diagram: each redraw (a new setting) shows the selection as the new
partition has it. Every handler runs through the explorer's guard: no exception reaches the kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

import ipywidgets as widgets

from hierviz.errors import ConfigError
from hierviz.widget import selection_html as text
from hierviz.widget.diagram_widget import DiagramWidget
from hierviz.widget.selection import Selection, find, from_trait, has

if TYPE_CHECKING:
    from hierviz.partitioner import Partition
    from hierviz.widget.controller import Controller

Guard = Callable[[Callable[..., Any]], Callable[..., Any]]


class SelectionPanel:
    """The panel (`box`) and its buttons (`buttons`); `select(name)` is Explorer.selected's setter."""

    def __init__(self, controller: "Controller", controls: Mapping[str, Any], diagram: DiagramWidget,
                 ops_panel: widgets.HTML, guard: Guard, ops_tab: int) -> None:
        self.controller, self.controls, self.diagram = controller, controls, diagram
        self.ops_panel, self.ops_tab = ops_panel, ops_tab
        self.tabs: widgets.Tab | None = None  # the explorer's tabs, once laid out ("show its rows" opens Ops)
        self.forced: list[str] = []  # ops this panel added to torch_executed_ops, latest last ("undo")
        self.filtered = False  # the Ops tab shows the selection's rows only
        self.html = widgets.HTML(text.hint_html())
        self.buttons = {
            "run_in_pytorch": widgets.Button(description="run this op in PyTorch", icon="hand-paper-o",
                                             tooltip="add this node's op to torch_executed_ops and re-partition"),
            "undo": widgets.Button(description="undo", icon="undo",
                                   tooltip="take the op this panel added out of torch_executed_ops again"),
            "focus": widgets.Button(description="focus here", icon="crosshairs",
                                    tooltip="draw the neighbourhood of the selection (the focus view)"),
            "show_rows": widgets.Button(description="show its rows in Ops", icon="table",
                                        tooltip="open the Ops tab with the rows of the selection's ops"),
            "clear": widgets.Button(description="clear", icon="times", tooltip="select nothing"),
        }
        actions: dict[str, Callable[[], Any]] = {"run_in_pytorch": self.run_in_pytorch, "undo": self.undo,
                                                 "focus": self.focus_here, "show_rows": self.show_rows,
                                                 "clear": lambda: self.select(None)}
        for key, action in actions.items():
            self.buttons[key].layout = widgets.Layout(width="auto")
            self.buttons[key].on_click(guard(lambda _b, action=action: action()))
        self.box = widgets.VBox([widgets.HTML('<b style="margin:0 6px">Selection</b>'), self.html,
                                 widgets.VBox(list(self.buttons.values()))],
                                layout=widgets.Layout(width="300px", min_width="260px", flex="0 0 300px"))
        self.box.add_class("hv-selection")
        # a redraw refreshes it through `refresh()` (called after each update): observing the diagram's
        # value would run inside the panel writer's lock
        diagram.observe(guard(lambda _c: self.refresh()), names="selected")
        self.refresh()

    # ------------------------------------------------------------------ what is selected
    @property
    def selection(self) -> Selection | None:
        return from_trait(self.diagram.selected)

    def select(self, name: Any) -> Selection | None:
        """Select the node, subgraph or module `name` of the shown partition (None: nothing), as
        a click does; a ConfigError for a name it does not have."""
        if name is None:
            self.diagram.selected = {}
            self._show_all_ops()
            return None
        chosen = find(self._shown(), name)
        self.diagram.selected = chosen.trait()
        return chosen

    def _shown(self) -> "Partition":
        part = self.controller.shown
        if part is None:
            raise ConfigError("nothing is drawn yet: the settings are invalid (see the error area); fix them first.")
        return part

    def _selected(self, kind: str | None = None) -> Selection:
        chosen = self.selection
        if chosen is None:
            raise ConfigError("nothing is selected: click a node or subgraph in the diagram first "
                              "(or set Explorer.selected).")
        if kind is not None and chosen.kind != kind:
            raise ConfigError(f"{chosen.kind} {chosen.name!r} is selected; this acts on a {kind}: click one.")
        return chosen

    # ------------------------------------------------------------------ the panel
    def refresh(self) -> None:
        """Show the selection as the shown partition has it, and which buttons apply."""
        chosen, part = self.selection, self.controller.shown
        op = None
        if chosen is None or part is None:
            body = text.hint_html()
        elif not has(part, chosen.kind, chosen.name):
            body, chosen = text.gone_html(chosen), None
        elif chosen.kind == "node":
            op = part.record(chosen.name).op or None
            body = text.node_html(part, chosen.name, self._forced_now())
        elif chosen.kind == "subgraph":
            body = text.subgraph_html(part, chosen.name, self.controller.builds_of(part))
        else:
            body = text.module_html(part, chosen.name)
        self.html.value = body
        b = self.buttons
        b["run_in_pytorch"].disabled = op is None or op in self._forced_now()
        b["run_in_pytorch"].tooltip = (f"add {op} to torch_executed_ops and re-partition" if op else
                                       "select a node with an op (not an input, weight or output)")
        b["undo"].disabled = not any(o in self._forced_now() for o in self.forced)
        for key in ("focus", "show_rows", "clear"):
            b[key].disabled = chosen is None

    def _forced_now(self) -> list[str]:
        return list(self.controls["torch_executed_ops"].value)

    # ------------------------------------------------------------------ actions
    def run_in_pytorch(self) -> str:
        """Add the selected node's op to torch_executed_ops (the explorer re-partitions); the op."""
        chosen = self._selected("node")
        op = self._shown().record(chosen.name).op
        if not op:
            raise ConfigError(f"{chosen.name!r} is a graph input, weight or output, not an op: select a node "
                              "that calls an op.")
        ops = self.controls["torch_executed_ops"]
        if op not in ops.value:
            self.forced.append(op)
            ops.value = [*ops.value, op]
        self.refresh()
        return op

    def undo(self) -> str | None:
        """Take the op this panel last added out of torch_executed_ops again; that op (None: nothing to undo)."""
        ops = self.controls["torch_executed_ops"]
        while self.forced:
            op = self.forced.pop()
            if op in ops.value:
                ops.value = [o for o in ops.value if o != op]
                self.refresh()
                return op
        self.refresh()
        return None

    def focus_here(self) -> str:
        """The focus control takes the selection's name (the explorer switches to the focus view)."""
        chosen = self._selected()
        self.controls["focus"].value = chosen.name
        return chosen.name

    def show_rows(self) -> None:
        """Open the Ops tab with only the rows of the selection's ops."""
        chosen, part = self._selected(), self._shown()
        if chosen.kind == "node":
            ops = [part.record(chosen.name).op]
        elif chosen.kind == "subgraph":
            ops = [part.record(n).op for n in part.subgraph(chosen.name).nodes]
        else:
            ops = list(text.module_nodes(part, chosen.name)["op"])
        self.ops_panel.value = text.ops_rows_html(part, chosen, ops)
        self.filtered = True
        if self.tabs is not None:
            self.tabs.selected_index = self.ops_tab

    def _show_all_ops(self) -> None:
        part = self.controller.shown
        if self.filtered and part is not None:
            self.ops_panel.value = self.controller.tables(part)["ops"]
        self.filtered = False


__all__ = ["SelectionPanel"]
