"""The explorer's selection panel: what was clicked in the diagram, and what to do with it.

Beside the diagram (a DiagramWidget), it shows the selected node's op, backend, subgraph,
reason, module and source line (a subgraph's ops, inputs, outputs and build row; a module's
nodes by backend), with buttons:
- "run this op in PyTorch": the node's op joins the torch_executed_ops control, so the explorer
  re-partitions as if it were typed there; "undo" takes the op out again;
- "focus here": the focus control takes the name (the focus view draws its neighbourhood);
- "show its rows in Ops": the Ops tab opens showing only the selection's ops;
- "clear": nothing selected (the Ops tab shows every row again).
It also says what blocks the most, from the Blockers tab's table (made in the worker in the
background: "finding what blocks the most ..." until then, or why it failed): with nothing
selected, the first ranked row that keeps nodes out, in words, its nodes marked red in the
diagram and a button "select it"; with a node selected that a row keeps out, that row and "apply
its fix", which applies the row's what-if as clicking the row in the Blockers tab does
(blockers_what_if.py: the same "back" restores the setting). A what-if applied says so.
The panel follows the diagram: each redraw (a new setting) shows the selection as the new
partition has it. Every handler runs through the explorer's guard: no exception reaches the kernel.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping

import ipywidgets as widgets

from hierviz.errors import ConfigError
from hierviz.widget import blocker_marks, blockers_tab
from hierviz.widget import selection_html as text
from hierviz.widget.blocker_rows import BlockerRows
from hierviz.widget.diagram_widget import DiagramWidget
from hierviz.widget.result_status import State
from hierviz.widget.selection import GROUPED, Selection, find, focus_target, from_trait, has, members

if TYPE_CHECKING:
    from hierviz.partitioner import Partition
    from hierviz.widget.blockers_what_if import BlockersWhatIf
    from hierviz.widget.controller import Controller

Guard = Callable[[Callable[..., Any]], Callable[..., Any]]


class SelectionPanel:
    """The panel (`box`) and its buttons (`buttons`); `select(name)` is Explorer.selected's setter.
    `what_if` is the Blockers tab's work (the table, "apply", "back"); without it the panel says
    nothing of blockers."""

    def __init__(self, controller: "Controller", controls: Mapping[str, Any], diagram: DiagramWidget,
                 ops_panel: widgets.HTML, guard: Guard, ops_tab: int,
                 what_if: "BlockersWhatIf | None" = None) -> None:
        self.controller, self.controls, self.diagram, self.what_if = controller, controls, diagram, what_if
        self._rows: BlockerRows | None = None  # the shown partition's table with each row's nodes
        self._marked: tuple[BlockerRows, str | None, dict[str, Any]] | None = None  # (for rows, svg): marked
        self._refreshing = threading.RLock()  # refreshed by the kernel and by the blockers' thread
        self.ops_panel, self.ops_tab = ops_panel, ops_tab
        self.tabs: widgets.Tab | None = None  # the explorer's tabs, once laid out ("show its rows" opens Ops)
        self.forced: list[str] = []  # ops this panel added to torch_executed_ops, latest last ("undo")
        self.filtered = False  # the Ops tab shows the selection's rows only
        self.html = widgets.HTML(text.hint_html())
        self.blocker_html = widgets.HTML()  # what blocks the most, or the selected node's row
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
            "select_top": widgets.Button(description="select it", icon="mouse-pointer",
                                         tooltip="select a node of what blocks the most (marked red)"),
            "apply_fix": widgets.Button(description="apply its fix", icon="magic", button_style="danger",
                                        tooltip="apply this blocker's what-if, as clicking its row in the "
                                                "Blockers tab does"),
            "back": widgets.Button(description="back", icon="undo",
                                   tooltip="restore the setting from before the first what-if"),
        }
        actions: dict[str, Callable[[], Any]] = {"run_in_pytorch": self.run_in_pytorch, "undo": self.undo,
                                                 "focus": self.focus_here, "show_rows": self.show_rows,
                                                 "clear": lambda: self.select(None), "select_top": self.select_top,
                                                 "apply_fix": self.apply_fix, "back": self.back}
        for key, action in actions.items():
            self.buttons[key].layout = widgets.Layout(width="auto")
            self.buttons[key].on_click(guard(lambda _b, action=action: action()))
        blocker_keys = ("select_top", "apply_fix", "back")
        self.box = widgets.VBox([widgets.HTML('<b style="margin:0 6px">Selection</b>'), self.html,
                                 self.blocker_html, widgets.VBox([self.buttons[k] for k in blocker_keys]),
                                 widgets.VBox([b for k, b in self.buttons.items() if k not in blocker_keys])],
                                layout=widgets.Layout(width="300px", min_width="260px", flex="0 0 300px"))
        self.box.add_class("hv-selection")
        if what_if is not None:
            what_if.listeners.append(guard(self.refresh))  # a table made: the top blocker, the marks
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
        """Show the selection as the shown partition has it, what blocks the most, and which
        buttons apply."""
        with self._refreshing:
            self._refresh()

    def _refresh(self) -> None:
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
        elif chosen.kind in GROUPED:
            body = text.grouped_html(part, chosen)
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
        b["focus"].disabled = chosen is None or (part is not None and focus_target(part, chosen) is None)
        self._show_blockers(part, chosen)

    # ------------------------------------------------------------------ what blocks the most
    def blocker_rows(self) -> BlockerRows | None:
        """The shown partition's blockers table with each row's nodes, once the worker made it
        (None until then, or without the Blockers tab's work)."""
        part = self.controller.shown
        if self.what_if is None or part is None:
            return None
        table = self.controller.blockers_of(part, compute=False)
        if table is None:
            return None
        rows = self._rows
        if rows is None or rows.table is not table:
            rows = self._rows = BlockerRows.of(part, table)
        return rows

    def _show_blockers(self, part: "Partition | None", chosen: Selection | None) -> None:
        """The blocker area, the diagram's red marks and the blocker buttons."""
        rows = self.blocker_rows()
        top = None if rows is None else rows.top()
        nodes = self._nodes_of(part, chosen) if part is not None and chosen is not None else []
        node_row = rows.of_nodes(nodes) if rows is not None else None
        body = ""
        if self.what_if is not None and part is not None:
            if rows is None:
                status = self.controller.store.status("blockers", part.config)
                body = text.blockers_failed_html(status.error) if status.state is State.FAILED else text.finding_html()
            elif chosen is None:
                body = text.no_blockers_html() if top is None else text.top_blocker_html(rows.row(top), part.config)
            elif node_row is not None and chosen is not None:
                kept = None if chosen.kind == "node" else rows.kept(node_row, nodes)
                body = text.blocker_row_html(rows.row(node_row), node_row, node_row == top, kept)
        applied = self.what_if.what_if if self.what_if is not None else None
        if applied is not None:
            before_cfg, before, change = applied
            body = blockers_tab.applied_html(change, before, self.controller.partition, before_cfg) + body
        if self.blocker_html.value != body:
            self.blocker_html.value = body
        marked = {} if rows is None or top is None or part is None else self._marks(part, rows, top)
        if applied is not None:  # the picture is a what-if's: it says so above the diagram too
            marked["what_if"] = f"what-if applied: {applied[2]} (back restores your setting)"
        if self.diagram.marked != marked:
            self.diagram.marked = marked
        b = self.buttons
        shown = {"select_top": chosen is None and top is not None,
                 "apply_fix": node_row is not None and rows is not None and rows.row(node_row)["config"] is not None,
                 "back": applied is not None}
        for key, visible in shown.items():
            b[key].layout.display = None if visible else "none"
            b[key].disabled = not visible

    def _marks(self, part: "Partition", rows: BlockerRows, top: int) -> dict[str, Any]:
        """The diagram's `marked` for the top row's nodes (blocker_marks.py), made again only for a
        new table or a new picture (the group boxes it draws)."""
        svg = self.controller.drawn_svg
        made = self._marked
        if made is not None and made[0] is rows and made[1] is svg:
            return dict(made[2])
        row, names = rows.row(top), rows.members[top]
        label = f"what blocks the most ({row['kind']}: {text.blocker_name(row)}, {len(names)} node(s))"
        marked = blocker_marks.marks(part, names, label, svg)
        self._marked = (rows, svg, marked)
        return dict(marked)

    def select_top(self) -> str:
        """Select the first element the diagram outlines in red for what blocks the most (a node;
        its subgraph's or module's box in a view that does not draw it); the page brings it into
        view. Its name."""
        rows = self.blocker_rows()
        top = None if rows is None else rows.top()
        part = self.controller.shown
        if rows is None or top is None or part is None:
            raise ConfigError("nothing blocks here yet: the Blockers tab's table is still being made, or no "
                              "cause keeps nodes out of the accelerated backends (see the Blockers tab).")
        chosen = blocker_marks.first_drawn(self._marks(part, rows, top), self.controller.drawn_svg)
        chosen = chosen or Selection("node", rows.members[top][0])
        self.diagram.selected = chosen.trait()
        return chosen.name

    def apply_fix(self) -> Any:
        """Apply the what-if of the first blocker row that keeps the selection's nodes out, as
        clicking that row in the Blockers tab does ("back" restores the setting); its setting."""
        chosen = self._selected()
        rows = self.blocker_rows()
        k = None if rows is None else rows.of_nodes(self._nodes_of(self._shown(), chosen))
        if self.what_if is None or rows is None or k is None:
            raise ConfigError(f"{chosen.kind} {chosen.name!r} is not kept out by any row of the Blockers tab (or "
                              "its table is still being made): select a node marked red, or use the Blockers tab.")
        row = rows.row(k)
        if row["config"] is None:
            raise ConfigError(f"no setting fixes {row['op']}: {row['change']}.")
        self.what_if.apply(row["config"], row["change"])
        self.refresh()
        return row["config"]

    def back(self) -> Any:
        """The Blockers tab's "back": the setting from before the first what-if (None: none applied)."""
        if self.what_if is None:
            return None
        before = self.what_if.undo()
        self.refresh()
        return before

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
        """The focus control takes the selection's name, a group's first subgraph or a repeat's
        first module (selection.focus_target; the explorer switches to the focus view)."""
        target = focus_target(self._shown(), self._selected())
        if target is None:
            raise ConfigError("the top level (the ops outside any module) is no one place to focus on: "
                              "select one of its nodes.")
        self.controls["focus"].value = target
        return target

    def show_rows(self) -> None:
        """Open the Ops tab with only the rows of the selection's ops."""
        chosen, part = self._selected(), self._shown()
        ops = [part.record(n).op for n in self._nodes_of(part, chosen)]
        self.ops_panel.value = text.ops_rows_html(part, chosen, ops)
        self.filtered = True
        if self.tabs is not None:
            self.tabs.selected_index = self.ops_tab

    @staticmethod
    def _nodes_of(part: "Partition", chosen: Selection) -> list[str]:
        """The node names the selection stands for (a node: itself)."""
        if chosen.kind == "node":
            return [chosen.name]
        if chosen.kind == "subgraph":
            return list(part.subgraph(chosen.name).nodes)
        if chosen.kind in GROUPED:
            return members(part, chosen)
        return list(text.module_nodes(part, chosen.name)["name"])

    def _show_all_ops(self) -> None:
        part = self.controller.shown
        if self.filtered and part is not None:
            self.ops_panel.value = self.controller.tables(part)["ops"]
        self.filtered = False


__all__ = ["SelectionPanel"]
