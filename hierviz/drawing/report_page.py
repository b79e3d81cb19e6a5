"""The standalone HTML report of a partition (no external resources, no script): the diagram,
the configuration, the tables, what to change, and the sections a measurement, numerics or
builds add. It reads the partition's public record and tables only."""

from __future__ import annotations

import html as htmlmod
import json
import warnings
from typing import TYPE_CHECKING, Any, Sequence

from hierviz.drawing import palette
from hierviz.drawing.graphviz_run import DotMissing, layout, strip_prolog
from hierviz.drawing.notebook import stats_line
from hierviz.drawing.views import render
from hierviz.drawing.zoom_box import zoom_box
from hierviz.partitioner.blockers.blocker_causes import COMBINED
from hierviz.partitioner.blockers.blocker_text import (REPORT_ROWS, for_reports, group_heading, groups, intro_text,
                                                       not_computed_text)
from hierviz.version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.building.builds import Builds
    from hierviz.partitioner import Partition
    from hierviz.settings.config import Config

TABLE_ROWS = 1000


def page_head(title: str) -> str:
    """The standalone HTML report's opening, up to <body>: its title, hierviz's version, the CSS."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="hierviz {htmlmod.escape(__version__)}">
<title>{htmlmod.escape(title)}</title>
<link rel="icon" href="data:,">
<style>{REPORT_CSS}</style>
</head>
<body>
"""


REPORT_CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:20px;color:#1a1a1a;max-width:1600px}
h1{font-size:22px;margin:0 0 6px 0} h2{font-size:17px;margin:22px 0 6px 0;border-bottom:1px solid #ddd}
.hv-stats{color:#333;margin-bottom:8px}
table.hv-table{border-collapse:collapse;font-size:12px}
table.hv-table th,table.hv-table td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
table.hv-table th{background:#f3f3f3}
pre{background:#f7f7f7;border:1px solid #ddd;padding:8px;font-size:12px;overflow:auto;max-height:600px}
.hv-swatch{display:inline-block;width:11px;height:11px;border:1px solid #555;margin:0 4px 0 10px;vertical-align:-1px}
.hv-note{color:#a00}
"""


def config_rows(config: "Config") -> str:
    """The settings as the rows of the report's Configuration table."""
    return "".join(f"<tr><th>{htmlmod.escape(k)}</th><td>{htmlmod.escape(json.dumps(v, ensure_ascii=False))}</td></tr>"
                   for k, v in config.to_dict().items())


def backends_legend(backends: Sequence[str]) -> str:
    """A swatch of each backend's colour, named, for the report's head."""
    return "".join(f'<span class="hv-swatch" style="background:{palette.fill(b)};border-color:{palette.border(b)}">'
                   f"</span>{htmlmod.escape(b)}" for b in backends)


def report_table(df: Any, what: str) -> str:
    """`df` as the report's HTML table (cells escaped, no NaN shown), its first TABLE_ROWS rows
    with a note saying how many `what` there are when it has more."""
    note = ""
    if len(df) > TABLE_ROWS:
        note = f'<p class="hv-note">First {TABLE_ROWS:,} of {len(df):,} {what}; save to .json for all.</p>'
        df = df.head(TABLE_ROWS)
    df = df.astype(object).where(df.notna(), "")  # None in an object column too: na_rep leaves it as "None"
    return note + df.to_html(index=False, border=0, classes="hv-table", escape=True)


def _compile_today(p: "Partition") -> str:
    """The fast partition's counts (what torch_tensorrt.compile runs with these settings)
    beside this one's, as a small table with what computing it cost, when `p.compile_today()`
    computed it; else how to include it. The report never runs a partitioner itself."""
    esc = htmlmod.escape
    head = '<h2 id="compile-today">torch_tensorrt.compile today</h2>'
    today = p.compile_today(compute=False)
    if today is None:
        return (f'{head}<p class="hv-note">Not computed: <code>p.compile_today()</code> runs Torch-TensorRT\'s '
                "fast partitioner on this graph (about as long as partitioning it) and keeps the answer with "
                "the partition; call it before saving to show here what torch_tensorrt.compile runs with "
                "these settings.</p>")
    if today.stats is None:
        return f'{head}<p class="hv-note">{esc(today.why)}</p>'
    itself = today.partition is p
    cost = ("this partition is the fast one: nothing extra was run" if itself else
            f"computed once by p.compile_today() in {today.seconds:.2f} s (Torch-TensorRT's fast partitioner "
            "on this graph), kept with the partition")
    rows = [(f"torch_tensorrt.compile (fast){' = this report' if itself else ''}", today.stats, today.notes)]
    if not itself:
        rows.append((f"this partition ({p.engine})", p.stats, tuple(getattr(p, "notes", ()))))
    body = "".join(
        f"<tr><td>{esc(name)}</td><td>{s['subgraphs']}</td><td>{s['acc_subgraphs']}</td>"
        f"<td>{s['accelerated_ops']} / {s['compute_ops']}</td><td>{s['boundary_tensors']}</td>"
        f"<td>{esc('; '.join(notes))}</td></tr>" for name, s, notes in rows)
    return (f'{head}<p class="hv-stats">{esc(cost)}</p><table class="hv-table"><tr><th>partition</th>'
            f"<th>subgraphs</th><th>accelerated subgraphs</th><th>accelerated ops</th><th>boundary tensors</th>"
            f"<th>note</th></tr>{body}</table>")


def report_html(p: "Partition", *, view: str = "auto", timeout: float | None = None, **kwargs: Any) -> str:
    """A standalone HTML report (no external resources, no script): the diagram inline, the
    config, the summary() and ops() tables and the text report; with `numerics=` (hv.numerics)
    the diagram is coloured by each subgraph's error and a Numerics section has its table."""
    esc = htmlmod.escape
    try:
        graph = render(p, view=view, **kwargs)
        svg = strip_prolog(layout(graph, "svg", timeout=timeout).decode("utf-8"))
        diagram = zoom_box(svg, "hv-report", height="80vh")
        view_used = graph.info["view"]
    except DotMissing as exc:
        warnings.warn("dot is missing: the HTML report has no diagram. " + str(exc).splitlines()[0], stacklevel=3)
        diagram = f'<pre class="hv-note">{esc(str(exc))}</pre>'
        view_used = view
    title = f"hierviz report: {p.config.label()}"
    numerics_html = _numerics_section(kwargs.get("numerics"))
    builds_html = _builds_section(kwargs.get("builds"))
    return page_head(title) + f"""<h1>hierviz partition report</h1>
<div class="hv-stats">{esc(p.config.label())} | {esc(p.engine)} engine | {esc(stats_line(p))}</div>
<div class="hv-stats">backends:{backends_legend(p.backends)}</div>
<h2 id="diagram">Diagram ({esc(view_used)} view)</h2>
{diagram}
{_what_to_change(p, kwargs.get("builds"))}
<h2 id="config">Configuration</h2>
<table class="hv-table">{config_rows(p.config)}</table>
{_compile_today(p)}
<h2 id="subgraphs">Subgraphs</h2>
{report_table(p.summary(), "subgraphs")}
{measurement_section(kwargs.get("measurement"))}{numerics_html}{builds_html}<h2 id="ops">Ops</h2>
{report_table(p.ops(), "ops")}
<h2 id="report">Report</h2>
<pre>{esc(p.report(what_to_change=False, measurement=kwargs.get("measurement"), builds=kwargs.get("builds")))}</pre>
</body>
</html>
"""


WHAT_TO_CHANGE_COLUMNS = ["change", "kind", "nodes", "subgraphs_if_fixed", "subgraphs_saved", "accelerated_ops_gained",
                          "verdict", "op", "note"]


def _what_to_change(p: "Partition", builds: Builds | None = None) -> str:
    """The report's "What to change" section: the blockers grouped by verdict (engines that fail
    to build first, with `builds`; improvements, trade-offs, no gain), each with what fixing it gives."""
    head = '<h2 id="what-to-change">What to change</h2>'
    table = for_reports(p, builds)
    if table is None:
        text = htmlmod.escape(not_computed_text(p)).replace("p.blockers()", "<code>p.blockers()</code>")
        return f'{head}<p class="hv-note">{text}</p>'
    if table[table.kind != COMBINED].empty:
        return f"{head}<p>Nothing keeps nodes out of the accelerated backends.</p>"
    code = {"part.blockers()": "<code>part.blockers()</code>",
            "hv.partition(model, inputs, config)": "<code>hv.partition(model, inputs, config)</code>"}
    intro = htmlmod.escape(intro_text(p, table))
    for text, html_text in code.items():
        intro = intro.replace(text, html_text)
    parts = [head, f"<p>{intro}</p>"]
    judged = table.verdict.notna().any()
    for verdict, shown, total in groups(table, REPORT_ROWS):
        if verdict is not None or judged:
            heading = group_heading(verdict, int((shown.kind != COMBINED).sum()), total)
            parts.append(f"<p><b>{htmlmod.escape(heading)}</b></p>")
        if not shown.empty:
            parts.append(report_table(shown[WHAT_TO_CHANGE_COLUMNS], "causes"))
    return "".join(parts)


def measurement_section(m: Any, heading: str = '<h2 id="measured">Measured</h2>') -> str:
    """The report's Measured section (with `measurement=`): the measurement's line, whether
    anything was accelerated, the subgraphs that fell back to eager PyTorch and why, and the
    per-subgraph table (`backend` is what ran, `asked` what the partition gave it)."""
    if m is None:
        return ""
    esc = htmlmod.escape
    parts = [f'{heading}\n<p>{esc(repr(m))}</p>']
    nothing = m.nothing_accelerated_text()
    if nothing:
        parts.append(f'<p class="hv-note"><b>{esc(nothing[0].upper() + nothing[1:])}</b>.</p>')
    per = m.per_subgraph
    fell = per[per["status"] == "fallback"]
    if len(fell):
        items = "".join(f"<li>{esc(tag)}: {esc(asked)} could not compile it, it ran in eager PyTorch: "
                        f"{esc(str(err))}</li>"
                        for tag, asked, err in zip(fell["tag"], fell["asked"], fell["error"]))
        parts.append(f'<p class="hv-note"><b>{len(fell)} subgraph(s) fell back to eager PyTorch</b> (drawn in '
                     f"PyTorch's colour, dashed):</p><ul>{items}</ul>")
    parts.append(report_table(per.drop(columns=["key"], errors="ignore"), "subgraphs"))
    return "\n".join(parts) + "\n"


def _builds_section(builds: Builds | None) -> str:
    """The report's "Built on this machine" section: part.build()'s headline, builder and table."""
    if builds is None:
        return ""
    return (f'<h2 id="built">Built on this machine</h2>\n<p><b>{htmlmod.escape(builds.headline())}</b><br>'
            f'{htmlmod.escape(builds.where())}</p>\n{report_table(builds.df, "subgraphs")}\n')


def _numerics_section(result: Any) -> str:
    """The report's Numerics section: where the error starts and the per-subgraph table."""
    if result is None:
        return ""
    return (f'<h2 id="numerics">Numerics</h2>\n<p>{htmlmod.escape(repr(result))}</p>\n'
            f'{report_table(result.per_subgraph, "subgraphs")}\n')


__all__ = ["report_html", "page_head", "report_table", "config_rows", "backends_legend", "measurement_section",
           "REPORT_CSS", "TABLE_ROWS"]
