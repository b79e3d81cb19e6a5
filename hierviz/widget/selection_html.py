"""The selection panel's text: what the explorer knows of the node, subgraph or module
selected in its diagram, as HTML (pure functions of the shown partition; selection_panel.py
puts them in the panel beside its buttons)."""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import torch

from hierviz.drawing.highlight import BLOCKER_LINE
from hierviz.drawing.text import op_short
from hierviz.foundation.stack_traces import frames
from hierviz.partitioner import FALLBACK
from hierviz.partitioner.blockers.blocker_causes import KIND_WORDS
from hierviz.partitioner.blockers.blocker_text import saves_text
from hierviz.widget.panels import table_html
from hierviz.widget.selection import Selection, members, repeat_run

if TYPE_CHECKING:
    import pandas as pd

    from hierviz.building.builds import Builds
    from hierviz.partitioner import Partition
    from hierviz.settings.config import Config

HINT = "Click a node or a subgraph in the diagram (or a box in the module view) to see it here and act on it."
SHOWN = 12  # names listed before "and N more"

# how the panel names a backend (the partition's own names stay beside it)
BACKEND_WORDS = {FALLBACK: "PyTorch", "tensorrt": "TensorRT", "inductor": "TorchInductor"}


TORCH_DIR = str(Path(torch.__file__).parent)


def source_line(node: torch.fx.Node) -> str:
    """'file:line: code' of the innermost recorded frame outside torch's own package (the line of
    the model's code, not nn.Module's forward that ran it); '' when none is recorded."""
    found = frames(node.meta.get("stack_trace"))
    outside = [f for f in found if not f.file.startswith(TORCH_DIR)] or found
    if not outside:
        return ""
    inner = outside[-1]
    return f"{inner.file}:{inner.line}: {inner.code}"


def backend_text(backend: str | None) -> str:
    """'PyTorch (torch)', 'TensorRT (tensorrt)', or the name alone for a backend of the user's."""
    if not backend:
        return "-"
    words = BACKEND_WORDS.get(backend)
    return f"{words} ({backend})" if words else backend


def _rows(rows: Iterable[tuple[str, str]]) -> str:
    body = "".join(f'<tr><td style="padding:1px 6px;color:#555;vertical-align:top;white-space:nowrap">{k}</td>'
                   f'<td style="padding:1px 6px;word-break:break-word">{v}</td></tr>' for k, v in rows)
    return f'<table class="hv-selection-table" style="line-height:1.35">{body}</table>'


def _listed(names: list[str]) -> str:
    shown = ", ".join(html.escape(n) for n in names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _head(kind: str, name: str) -> str:
    return (f'<div class="hv-selection-head" style="font-weight:bold;margin:2px 6px">{kind} '
            f"<code>{html.escape(name)}</code></div>")


def hint_html() -> str:
    return f'<div class="hv-selection-hint" style="color:#777;padding:6px">{html.escape(HINT)}</div>'


def gone_html(selection: Selection) -> str:
    """The selected thing is not in the shown partition (a subgraph tag the new setting lacks)."""
    return (f'<div style="color:#777;padding:6px">{selection.kind} {html.escape(selection.name)} is not in '
            "the shown partition. " + html.escape(HINT) + "</div>")


def node_html(part: "Partition", name: str, forced: Iterable[str]) -> str:
    """A node: its op, backend, subgraph, reason, module and source line; `forced` the
    torch_executed_ops the controls show (the op's "forced" mark)."""
    r = part.record(name)
    node = next((n for n in part.graph.graph.nodes if n.name == name), None)
    where = source_line(node) if node is not None else ""
    op = html.escape(r.op or r.kind)
    if r.op and r.op in set(forced):
        op += ' <span style="color:#555">(in torch_executed_ops)</span>'
    module = html.escape(r.module_path or "(the model itself)") + (
        f' <span style="color:#555">({html.escape(r.module_class)})</span>' if r.module_class else "")
    value = f"{r.dtype or ''} {list(r.shape) if r.shape is not None else ''}".strip()
    rows = [("op", op), ("backend", f'<b class="hv-selection-backend">{html.escape(backend_text(r.backend))}</b>'),
            ("subgraph", html.escape(r.tag or "-")), ("why", html.escape(r.reason)), ("module", module),
            ("source", f"<code>{html.escape(where)}</code>" if where else
             '<span style="color:#777">not recorded</span>')]
    if value:
        rows.append(("value", html.escape(value)))
    return _head("node", name) + _rows(rows)


def subgraph_html(part: "Partition", tag: str, builds: Builds | None = None) -> str:
    """A subgraph: its backend, ops, nodes, inputs and outputs, and its build row when built."""
    sg = part.subgraph(tag)
    ops = Counter(op_short(part.record(n).op) for n in sg.nodes if part.record(n).op)
    rows = [("backend", f'<b class="hv-selection-backend">{html.escape(backend_text(sg.backend))}</b>'),
            ("ops", f"{sg.compute_ops} compute op(s): " + _listed([f"{o} \u00d7{c}" for o, c in ops.most_common()])),
            ("nodes", f"{len(sg.nodes)}: " + _listed(list(sg.nodes))),
            ("inputs", _listed([str(t) for t in sg.inputs]) or "-"),
            ("outputs", _listed([str(t) for t in sg.outputs]) or "-")]
    row = next((r for r in getattr(builds, "rows", ()) if r.subgraph == tag), None)
    if row is not None:
        built = f"built, {row.engine_bytes:,} bytes" if row.stage == "built" and row.engine_bytes else row.stage
        text = html.escape(built) + (f": {html.escape(row.error)}" if row.error else "")
        rows.append(("build", text))
    return _head("subgraph", tag) + _rows(rows)


def module_nodes(part: "Partition", path: str) -> "pd.DataFrame":
    """The rows of Partition.nodes() inside module `path` (and its children)."""
    df = part.nodes()
    inside = (df["module_path"] == path) | df["module_path"].str.startswith(path + ".")
    return df[inside & (df["backend"] != "graph")]


def module_html(part: "Partition", path: str) -> str:
    """A module: its class, its nodes by backend, its subgraphs."""
    df = module_nodes(part, path)
    stacks = part.records.module_stack
    cls = next((c.rsplit(".", 1)[-1] for n in df["name"][:20] for p, c in stacks[part.record(n).index] if p == path),
               "")
    by_backend = Counter(df["backend"])
    tags = list(dict.fromkeys(str(t) for t in df["tag"] if t))
    rows = [("class", html.escape(cls or "-")),
            ("nodes", f"{len(df)}: " + ", ".join(f"{html.escape(backend_text(b))} {n}"
                                                   for b, n in by_backend.most_common())),
            ("subgraphs", _listed(tags) or "-")]
    return _head("module", path) + _rows(rows)


def ops_rows_html(part: "Partition", selection: Selection, ops: Iterable[str]) -> str:
    """The Ops tab showing only the rows of the selection's ops, with a line saying so."""
    wanted = set(ops)
    df = part.ops()
    df = df[df["op"].isin(wanted)]
    note = (f'<div class="hv-ops-filter" style="margin:4px 0">the rows of {selection.kind} '
            f"<code>{html.escape(selection.name)}</code> ({len(df)} of {len(part.ops())} ops); "
            "clear the selection for every row</div>")
    return note + table_html(df.reset_index(drop=True))


BLOCKER_RED = BLOCKER_LINE  # render(highlight="blockers")'s colour, and the diagram's marks
FINDING = "finding what blocks the most ... (in the worker)"


def blocker_name(row: Any) -> str:
    """A blocker row's op as the diagram names it ('aten.add.Tensor'; a demoted row's blocks as they are)."""
    op = str(row["op"])
    return op_short(op) if op.startswith("torch.ops.") else op


def kept_out_of(config: "Config") -> str:
    """The accelerated backends of `config`'s priority in words: 'TensorRT and TorchInductor'."""
    names = [BACKEND_WORDS.get(b, b) for b in config.priority if b != FALLBACK]
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names) or "the accelerated backends"


def _gives(row: Any) -> str:
    """What applying the row's fix gives, with its verdict, in words."""
    verdict = row["verdict"]
    return html.escape(saves_text(row)) + (f": <b>{html.escape(str(verdict))}</b>" if isinstance(verdict, str) else "")


def finding_html() -> str:
    return f'<div class="hv-top-blocker" style="color:#777;padding:4px 6px">{html.escape(FINDING)}</div>'


def blockers_failed_html(error: str) -> str:
    return (f'<div class="hv-top-blocker" style="color:{BLOCKER_RED};padding:4px 6px">could not find what blocks '
            f"the most: {html.escape(error)}</div>")


def no_blockers_html() -> str:
    return ('<div class="hv-top-blocker" style="color:#555;padding:4px 6px">Nothing keeps nodes out of the '
            "accelerated backends.</div>")


def top_blocker_html(row: Any, config: "Config") -> str:
    """What blocks the most (the first ranked row that keeps nodes out): its op and kind, the
    nodes it keeps out (marked red in the diagram), its fix and what the fix gives, in words."""
    fix = (f"Its fix, <i>{html.escape(str(row['change']))}</i>, gives {_gives(row)}."
           if row["config"] is not None else f"No setting fixes it here: {html.escape(str(row['change']))}.")
    act = ("Press <i>select it</i> (or click a red node), then <i>apply its fix</i>." if row["config"] is not None
           else "Press <i>select it</i> (or click a red node) to see it.")
    return (f'<div class="hv-top-blocker" style="padding:4px 6px;margin:4px 0;border-left:4px solid {BLOCKER_RED};'
            f'background:#FFEBEE"><b>What blocks the most</b>: <code>{html.escape(blocker_name(row))}</code> '
            f"({html.escape(KIND_WORDS.get(row['kind'], row['kind']))}) keeps {int(row['nodes'])} node(s) out of "
            f"{html.escape(kept_out_of(config))}; they are marked red in the diagram.<br>{fix}<br>"
            f'<span style="color:#555">{act}</span></div>')


def blocker_row_html(row: Any, rank: int, top: bool, here: int | None = None) -> str:
    """The Blockers tab's row `rank` (0-based) that keeps the selected node out (a box: `here` of
    its nodes): kind, nodes it keeps out, subgraphs saved, ops gained, verdict and the change,
    said to be a what-if."""
    saved, gained = row["subgraphs_saved"], row["accelerated_ops_gained"]
    counted = saved is not None and saved == saved
    rows = [("blocker", f"<code>{html.escape(blocker_name(row))}</code>: "
                        f"{html.escape(KIND_WORDS.get(row['kind'], row['kind']))}"),
            ("keeps out", f"{int(row['nodes'])} node(s)" + (f", {here} of them here" if here is not None else "")),
            ("subgraphs saved", f"{int(saved)} ({int(row['subgraphs_if_fixed'])} in all)" if counted else "-"),
            ("ops gained", f"{int(gained)}" if counted else "-"),
            ("verdict", f"<b>{html.escape(str(row['verdict']))}</b>" if isinstance(row["verdict"], str) else "-"),
            ("the fix", html.escape(str(row["change"])))]
    head = (f"row {rank + 1} of the Blockers tab" + (": what blocks the most" if top else ""))
    note = ("what-if: <i>apply its fix</i> sets the controls to it; <i>back</i> restores your setting"
            if row["config"] is not None else "no setting fixes it here")
    return (f'<div class="hv-node-blocker" style="margin:4px 0;border-left:4px solid {BLOCKER_RED};'
            f'background:#FFEBEE"><div style="font-weight:bold;margin:2px 6px">A blocker ({html.escape(head)})</div>'
            + _rows(rows) + f'<div style="color:#555;margin:2px 6px">{note}</div></div>')


def grouped_html(part: "Partition", selection: Selection) -> str:
    """A group of the collapsed view, a repeat of the module view or the top level (selection.members:
    its nodes): its nodes and subgraphs by backend and its ops; a group or repeat says what
    "focus here" draws."""
    names = members(part, selection)
    records = [part.record(n) for n in names]
    tags = list(dict.fromkeys(r.tag for r in records if r.tag))
    subs = Counter(part.subgraph(t).backend for t in tags)
    by_backend = Counter(r.backend for r in records)
    ops = Counter(op_short(r.op) for r in records if r.op)
    rows = [("backends", " \u00b7 ".join(f"{html.escape(backend_text(b))} {n} node(s), {subs[b]} subgraph(s)"
                                   for b, n in by_backend.most_common())),
            ("subgraphs", f"{len(tags)}: " + _listed(tags)), ("ops", _listed([f"{o} \u00d7{c}" for o, c in
                                                                              ops.most_common()]) or "-"),
            ("nodes", f"{len(names)}: " + _listed(names))]
    if selection.kind == "group" and tags:
        rows.append(("focus here", f"draws its first subgraph, {html.escape(tags[0])}"))
        return _head("group", selection.name) + _rows(rows)
    run = repeat_run(part, selection.name) if selection.kind == "repeat" else None
    if run:
        rows.insert(0, ("modules", f"{len(run)} {html.escape(run[0].cls)}: " + _listed([m.path for m in run])))
        rows.append(("focus here", f"draws the inside of {html.escape(run[0].path)}, as of each"))
        return _head("repeated modules", selection.name) + _rows(rows)
    return _head("ops outside any module", selection.name) + _rows(rows)


__all__ = ["HINT", "FINDING", "BLOCKER_RED", "blocker_name", "kept_out_of", "finding_html", "blockers_failed_html",
           "no_blockers_html", "top_blocker_html", "blocker_row_html", "source_line", "backend_text", "hint_html",
           "gone_html", "node_html", "subgraph_html", "module_html", "module_nodes", "ops_rows_html", "grouped_html"]
