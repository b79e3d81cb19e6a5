"""Writing a graph-by-graph partition (hv.partition(..., ir="torch_compile")) to files, and its
Jupyter display.

`save_graphs` takes the suffixes Partition.save takes: .svg .png .pdf (the picture of
frames.py, laid out by dot), .dot/.gv, .json (saved_graphs.py's document, which
hv.load_partition reads back), .html (a standalone report: the picture, every graph, every
break, the settings, the tables with their `graph` column, the text report), and
format="model_explorer" (a graph collection with two graphs, modules and subgraphs, per dynamo
graph, named `g<k> modules` / `g<k> subgraphs`).
"""

from __future__ import annotations

import html as htmlmod
import json
import uuid
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hierviz.drawing import palette
from hierviz.drawing.files import IMAGE_FORMATS, json_text, target, write
from hierviz.drawing.graphviz_run import NOTEBOOK_TIMEOUT_S, DotMissing, layout, strip_prolog
from hierviz.drawing.report_page import backends_legend, config_rows, measurement_section, page_head, report_table
from hierviz.drawing.zoom_box import zoom_box
from hierviz.drawing.by_graph.breaks_and_starts import EAGER, short_path_text, where
from hierviz.drawing.by_graph.frames import overlay_per_graph, render_graphs
from hierviz.drawing.by_graph.graph_times import GraphTimes
from hierviz.errors import RenderError
from hierviz.partitioner.by_graph.per_graph import per_graph
from hierviz.partitioner.saved.saved_graphs import document_graphs

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import MultiGraphPartition


def save_graphs(mp: "MultiGraphPartition", path: str | Path, *, view: str = "auto", timeout: float | None = None,
                format: str | None = None, **kwargs: Any) -> Path:
    """Write `mp` to `path` in the format of its suffix (or `format`); see the module docstring."""
    path, suffix = target(path, format)
    data: str | bytes
    if suffix == "model_explorer":
        return save_model_explorer(mp, path, measurement=kwargs.get("measurement"), against=kwargs.get("against"))
    if suffix in (".dot", ".gv"):
        data = render_graphs(mp, view=view, **kwargs).source
    elif suffix == ".json":
        doc = to_json_graphs(mp)
        data = json_text(doc, sum(len(g["partition"]["nodes"]) for g in doc["graphs"]))
    elif suffix == ".html":
        data = report_html_graphs(mp, view=view, timeout=timeout, **kwargs)
    else:
        data = layout(render_graphs(mp, view=view, **kwargs), IMAGE_FORMATS[suffix], timeout=timeout)
    return write(path, data)


def to_json_graphs(mp: "MultiGraphPartition") -> dict:
    """The saved graph-by-graph document (saved_graphs.document_graphs) plus each backend's colour."""
    doc = document_graphs(mp)
    doc["colors"] = {b: palette.color(b) for b in mp.config.priority}
    return doc


# ---------------------------------------------------------------------------- Model Explorer
def to_model_explorer_graphs(mp: "MultiGraphPartition", measurement: Any = None, *, against: Any = None) -> dict:
    """A Model Explorer graph collection: per dynamo graph k, its `modules` and `subgraphs`
    graphs (drawing.model_explorer) named `g<k> modules` / `g<k> subgraphs`, each carrying the
    graph's source and the break that ended it as group attributes."""
    from hierviz.drawing.model_explorer import collection, to_model_explorer

    times = overlay_per_graph(mp, measurement, "measurement")
    others = overlay_per_graph(mp, against, "against")
    graphs = []
    for k, one in enumerate(per_graph(lambda p, m, a: to_model_explorer(p, m, against=a), mp, times, others)):
        g = mp.capture.graphs[k]
        facts = {"graph": f"g{k}", "function": g.function, "source": where(g.file, g.line), "calls": str(g.calls)}
        ended = mp.breaks_after(k)
        if ended:
            facts["then"] = "; ".join(f"graph break at {b.location}: {b.short}" for b in ended) + f" ({EAGER})"
        for graph in one["graphs"]:
            graph["id"] = f"g{k} {graph['id']}"
            graph["groupNodeAttributes"][""] = {**facts, **graph["groupNodeAttributes"][""]}
            graphs.append(graph)
    return collection(f"hierviz {mp.capture.model} graph by graph, {mp.config.label()}", graphs)


def save_model_explorer(mp: "MultiGraphPartition", path: Path, *, measurement: Any = None, against: Any = None) -> Path:
    """Write `to_model_explorer_graphs(mp)` to `path`, and each overlay's node data beside it
    (`<stem>.latency.json`, `.diff.json`), keyed by the graph ids."""
    from hierviz.drawing.context import make_overlays
    from hierviz.drawing.model_explorer import node_data_path, overlay_node_data

    doc = to_model_explorer_graphs(mp, measurement, against=against)
    data: dict[str, dict] = {}
    node_data = per_graph(lambda p, m, a: [(o.data_suffix, overlay_node_data(p, o)) for o in make_overlays(p, m, a)],
                          mp, overlay_per_graph(mp, measurement, "measurement"),
                          overlay_per_graph(mp, against, "against"))
    for k, overlays in enumerate(node_data):
        for suffix, nodes in overlays:
            data.setdefault(suffix, {}).update({f"g{k} {gid}": one for gid, one in nodes.items()})
    write(path, json.dumps(doc, separators=(",", ":"), ensure_ascii=False))
    for suffix, entry in data.items():
        write(node_data_path(path, suffix), json.dumps(entry))
    return path


# ---------------------------------------------------------------------------- HTML
def _totals_line(mp: "MultiGraphPartition") -> str:
    s = mp.stats
    by = ", ".join(f"{b} {n}" for b, n in s["subgraphs_by_backend"].items() if n)
    return (f"{s['graphs']} graphs, {s['graph_breaks']} graph breaks, {s['compute_ops']:,} compute ops, "
            f"{s['subgraphs']:,} subgraphs ({by}), coverage {s['coverage']:.1%}, accelerated "
            f"{s['accelerated_coverage']:.1%}, {s['graphs_left_whole']} graph(s) left whole in PyTorch")


def _svg(mp: "MultiGraphPartition", view: str, timeout: float | None, **kwargs: Any) -> str:
    return strip_prolog(layout(render_graphs(mp, view=view, **kwargs), "svg", timeout=timeout).decode("utf-8"))


def notebook_html_graphs(mp: "MultiGraphPartition") -> str:
    """What Jupyter shows for a MultiGraphPartition: a totals line and the picture inline; a
    missing dot or a layout past the notebook's timeout shows why, and the graphs table."""
    head = (f'<div style="font-family:Helvetica,Arial,sans-serif;font-size:13px">'
            f'<b>hv.MultiGraphPartition</b> {htmlmod.escape(mp.capture.model)} | '
            f'{htmlmod.escape(mp.config.label())} | {htmlmod.escape(_totals_line(mp))}</div>')
    try:
        svg = _svg(mp, "auto", NOTEBOOK_TIMEOUT_S)
    except RenderError as exc:
        return (head + f'<pre style="color:#a00;white-space:pre-wrap">{htmlmod.escape(str(exc))}</pre>'
                + graphs_table(mp).to_html(index=False, border=0))
    return head + zoom_box(svg, "hv-" + uuid.uuid4().hex[:12], height="560px")


def graphs_table(mp: "MultiGraphPartition") -> Any:
    """One row per graph: where it comes from, why it starts there, its ops and subgraphs, and
    what ends it."""
    import pandas as pd

    rows = []
    for k, p in enumerate(mp.graphs):
        g = mp.capture.graphs[k]
        s = p.stats
        ended = "; ".join(f"{b.short} ({where(b.file, b.line)})" for b in mp.breaks_after(k))
        rows.append({"graph": f"g{k}", "function": g.function, "source": where(g.file, g.line),
                     "starts": short_path_text(str(getattr(g, "starts", "") or "")), "calls": g.calls,
                     "ops": s["compute_ops"], "supported": s["supported_ops"], "subgraphs": s["subgraphs"],
                     **{b: n for b, n in s["subgraphs_by_backend"].items()},
                     "left whole": "yes" if mp.left_whole(k) else "",
                     "nothing to partition": "" if mp.has_compute(k) else "yes", "then: graph break": ended})
    return pd.DataFrame(rows).fillna(0)


def breaks_table(mp: "MultiGraphPartition") -> Any:
    """One row per graph break: after which graph, where, dynamo's type, explanation and hints."""
    import pandas as pd

    return pd.DataFrame([{"break": j + 1, "after": f"g{b.after_graph}" if b.after_graph >= 0 else "(start)",
                          "ended a graph": "yes" if b.ended_graph else "no", "at": where(b.file, b.line),
                          "function": b.function, "code": b.code.strip(), "type": b.short,
                          "explanation": b.explanation, "hints": "\n".join(b.hints)}
                         for j, b in enumerate(mp.breaks)],
                        columns=["break", "after", "ended a graph", "at", "function", "code", "type", "explanation",
                                 "hints"])


def report_html_graphs(mp: "MultiGraphPartition", *, view: str = "auto", timeout: float | None = None,
                       **kwargs: Any) -> str:
    """A standalone HTML report (no external resources, no script): the picture, a table of
    the graphs and one of the graph breaks (dynamo's reason, the user's line, hints), the
    settings, the subgraphs and ops of every graph, and the text report."""
    esc = htmlmod.escape
    try:
        diagram = zoom_box(_svg(mp, view, timeout, **kwargs), "hv-report", height="80vh")
    except DotMissing as exc:
        warnings.warn("dot is missing: the HTML report has no diagram. " + str(exc).splitlines()[0], stacklevel=3)
        diagram = f'<pre class="hv-note">{esc(str(exc))}</pre>'
    m = kwargs.get("measurement")
    if m is None or GraphTimes.of_graphs(m):  # hv.measure of the whole model: its table has a graph column
        measured = measurement_section(m)
    else:  # one Measurement per graph
        measured = '<h2 id="measured">Measured</h2>' + "".join(
            measurement_section(one, f"<h3>g{k}</h3>") for k, one in enumerate(overlay_per_graph(mp, m, "measurement"))
            if one is not None)
    title = f"hierviz report: {mp.capture.model} graph by graph, {mp.config.label()}"
    breaks = (report_table(breaks_table(mp), "graph breaks") if mp.breaks else "<p>No graph break: one graph.</p>")
    return page_head(title) + f"""<h1>hierviz report: {esc(mp.capture.model)} graph by graph</h1>
<div class="hv-stats">as torch.compile(model, backend="torch_tensorrt") runs it | {esc(mp.config.label())} |
{esc(mp.engine)} engine | {esc(_totals_line(mp))}</div>
<div class="hv-stats">backends:{backends_legend(mp.backends)}</div>
{''.join(f'<p class="hv-note">Note: {esc(n)}.</p>' for n in mp.notes)}
<h2 id="diagram">Diagram (graphs in execution order, graph breaks between them)</h2>
{diagram}
<h2 id="graphs">Graphs</h2>
{report_table(graphs_table(mp), "graphs")}
<h2 id="breaks">Graph breaks</h2>
<p>{esc(EAGER[0].upper() + EAGER[1:].replace("here", "a break"))}.</p>
{breaks}
<h2 id="config">Configuration</h2>
<table class="hv-table">{config_rows(mp.config)}</table>
<h2 id="subgraphs">Subgraphs</h2>
{report_table(mp.summary(), "subgraphs")}
{measured}<h2 id="ops">Ops</h2>
{report_table(mp.ops(), "ops")}
<h2 id="report">Report</h2>
<pre>{esc(mp.report())}</pre>
</body>
</html>
"""


__all__ = ["save_graphs", "to_json_graphs", "to_model_explorer_graphs", "save_model_explorer", "notebook_html_graphs",
           "report_html_graphs", "graphs_table", "breaks_table"]
