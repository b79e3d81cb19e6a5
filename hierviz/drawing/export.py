"""Running graphviz, and writing a partition to files: .svg .png .pdf .dot .json .html.

`.dot` and `.json` need no graphviz install; the image formats and the diagram of the HTML
report run `dot` (with a timeout, so nothing blocks for minutes). How much dot is asked to do
is decided before the DOT is written (budget.py); nothing here rewrites it. The JSON and the
HTML report read the partition's public record and tables only.
"""

from __future__ import annotations

import functools
import html as htmlmod
import json
import re
import shutil
import subprocess
import uuid
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hierviz.drawing import palette
from hierviz.drawing.budget import BITMAP_LIMIT_PX, DEFAULT_MAX_NODES
from hierviz.drawing.views import render
from hierviz.errors import RenderError
from hierviz.partitioner.blockers.blocker_causes import COMBINED
from hierviz.partitioner.blockers.blocker_text import (REPORT_ROWS, for_reports, group_heading, groups, intro_text,
                                                       not_computed_text)
from hierviz.partitioner.saved.saved_partition import document
from hierviz.partitioner.counts import by_backend_text, count_text
from hierviz.version import __version__

if TYPE_CHECKING:  # pragma: no cover
    import graphviz

    from hierviz.partitioner import Partition

FORMATS = (".svg", ".png", ".pdf", ".dot", ".gv", ".json", ".html")
IMAGE_FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf"}
# dot gets this long before we give up; auto views finish in about a second.
DEFAULT_TIMEOUT_S = 120.0
NOTEBOOK_TIMEOUT_S = 30.0
# Laying out more drawn nodes than this warns that dot may take minutes.
SLOW_LAYOUT_NODES = 4 * DEFAULT_MAX_NODES
TABLE_ROWS = 1000

INSTALL_HELP = (
    "graphviz's `dot` program is not on PATH, so the diagram cannot be laid out. Install it:\n"
    "  Debian/Ubuntu:  sudo apt-get install graphviz\n"
    "  conda:          conda install -c conda-forge graphviz\n"
    "  macOS:          brew install graphviz\n"
    "(`pip install graphviz` installs only the Python bindings, not `dot`.) "
    "Saving to .dot or .json works without it."
)


class DotMissing(RenderError):
    """graphviz's `dot` is not on PATH."""


def check_dot() -> str:
    """The path of graphviz's `dot`; RenderError with install commands when it is missing."""
    path = shutil.which("dot")
    if path is None:
        raise DotMissing(INSTALL_HELP)
    return path


def layout(graph: "graphviz.Digraph | str", fmt: str = "svg", *, timeout: float | None = None) -> bytes:
    """Run `dot -T<fmt>` on a Digraph (or DOT text) and return the output bytes; RenderError
    when dot fails or runs past `timeout` seconds (default DEFAULT_TIMEOUT_S)."""
    source = graph if isinstance(graph, str) else graph.source
    info = getattr(graph, "info", None) or {}
    if info.get("nodes", 0) > SLOW_LAYOUT_NODES:
        warnings.warn(f"laying out {info['nodes']:,} nodes with graphviz may take minutes; "
                      "view='collapsed' or focus=... draws a smaller picture.", stacklevel=3)
    dot = check_dot()
    limit = DEFAULT_TIMEOUT_S if timeout is None else float(timeout)
    run = _layout_cached if fmt == "svg" else _run_dot  # the notebook and explorer redraw often
    out = run(dot, source, fmt, limit, bool(info.get("aligned")))
    if fmt == "png" and len(out) >= 24 and out[:4] == b"\x89PNG":  # its IHDR holds width, height
        width, height = int.from_bytes(out[16:20], "big"), int.from_bytes(out[20:24], "big")
        if max(width, height) >= BITMAP_LIMIT_PX:
            warnings.warn(f"the picture reached graphviz's {BITMAP_LIMIT_PX:,} px limit for bitmaps "
                          f"({width:,}\u00d7{height:,} px): graphviz scaled it down to fit; save .svg for the "
                          "full size, or draw view='modules' / 'collapsed'.", stacklevel=3)
    return out


@functools.lru_cache(maxsize=32)
def _layout_cached(dot: str, source: str, fmt: str, timeout: float, aligned: bool = False) -> bytes:
    return _run_dot(dot, source, fmt, timeout, aligned)


def _run_dot(dot: str, source: str, fmt: str, timeout: float, aligned: bool = False) -> bytes:
    """dot's drawing of `source`; `aligned` (the graph-by-graph picture, align.py): laid out by
    dot, its frames moved onto one axis, then drawn where they are by neato -n2."""
    if aligned:
        from hierviz.drawing.by_graph.align import POSITIONED_ENGINE, aligned as on_one_axis

        engine = shutil.which(POSITIONED_ENGINE[0]) or str(Path(dot).with_name(POSITIONED_ENGINE[0]))
        if Path(engine).exists():  # graphviz ships neato with dot; without it the frames stay where dot put them
            positioned = on_one_axis(_dot_call([dot, "-Tdot"], source, timeout).decode("utf-8"))
            return _dot_call([engine, POSITIONED_ENGINE[1], f"-T{fmt}"], positioned, timeout)
    return _dot_call([dot, f"-T{fmt}"], source, timeout)


def _dot_call(args: list[str], source: str, timeout: float) -> bytes:
    dot = args[0]
    try:
        proc = subprocess.run(args, input=source.encode("utf-8"), capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RenderError(f"graphviz took longer than {timeout:.0f} s to lay out this diagram; draw less of "
                       "it: view='collapsed', focus=<node or subgraph tag>, or a smaller max_nodes.") from None
    except OSError as exc:
        raise RenderError(f"could not run graphviz's dot ({dot}): {exc}") from exc
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()[-2000:]
        raise RenderError(f"graphviz's dot failed (exit {proc.returncode}): {err}")
    return proc.stdout


def strip_prolog(svg: str) -> str:
    """The `<svg ...>...</svg>` element alone, for embedding in HTML."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


def to_svg(p: "Partition", view: str = "auto", *, timeout: float | None = None, **kwargs: Any) -> str:
    """The partition as SVG text (an `<svg>` element, no XML prolog), laid out by dot.

    `view` and `kwargs` (focus, max_nodes, radius, weights) are those of `render`."""
    graph = render(p, view=view, **kwargs)
    return strip_prolog(layout(graph, "svg", timeout=timeout).decode("utf-8"))


# ---------------------------------------------------------------------------- save
def save(p: "Partition", path: str | Path, *, view: str = "auto", timeout: float | None = None,
         format: str | None = None, **kwargs: Any) -> Path:
    """Write the partition to `path`, the format chosen by its suffix (or `format`):
    .svg .png .pdf (diagram), .dot/.gv (DOT text), .json (nodes, subgraphs, config),
    .html (standalone report: diagram, config, tables, text report);
    format="model_explorer": a graph JSON for Google's Model Explorer (see drawing.model_explorer)."""
    path, suffix = target(path, format)
    if suffix == "model_explorer":
        from hierviz.drawing import model_explorer

        return model_explorer.save(p, path, measurement=kwargs.get("measurement"), against=kwargs.get("against"),
                                   numerics=kwargs.get("numerics"))
    data: str | bytes
    if suffix in (".dot", ".gv"):
        data = render(p, view=view, **kwargs).source
    elif suffix == ".json":
        doc = to_json(p)
        data = json_text(doc, len(doc["nodes"]))
    elif suffix == ".html":
        data = report_html(p, view=view, timeout=timeout, **kwargs)
    else:
        data = layout(render(p, view=view, **kwargs), IMAGE_FORMATS[suffix], timeout=timeout)
    return write(path, data)


def target(path: Any, format: str | None) -> tuple[Path, str]:
    """(the path, the format to write: a suffix of FORMATS or 'model_explorer'), from the
    path's suffix or `format`; RenderError for anything else."""
    if not isinstance(path, (str, Path)):
        raise RenderError(f"save takes a file path (str or Path) such as 'part.svg', not {type(path).__name__}.")
    path = Path(path)
    if format == "model_explorer":
        return path, format
    suffix = path.suffix.lower()
    if format is not None:
        suffix = "." + str(format).lower().lstrip(".")
        if suffix not in FORMATS:
            raise RenderError(f"unknown format {format!r}; formats are model_explorer and "
                              f"{' '.join(f.lstrip('.') for f in FORMATS)}.")
    if suffix not in FORMATS:
        raise RenderError(f"cannot save {path.name!r}: unknown suffix {path.suffix!r}; use one of "
                          f"{' '.join(FORMATS)}.")
    return path, suffix


def json_text(doc: dict, nodes: int) -> str:
    """A saved document as JSON text: indented when a person might read it (at most 5,000 nodes)."""
    small = nodes <= 5000
    return json.dumps(doc, indent=1 if small else None, separators=None if small else (",", ":"))


def write(path: Path, data: str | bytes) -> Path:
    """`data` written to `path` (its folder made); RenderError saying why it could not be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise RenderError(f"cannot save {str(path)!r}: {exc}") from exc
    return path


def to_json(p: "Partition") -> dict:
    """The saved-partition document (hierviz.partitioner.saved.saved_partition.document: nodes, subgraphs,
    config, stats, versions; `hv.load_partition` reads it back) plus each backend's colour."""
    doc = document(p)
    doc["colors"] = {b: palette.color(b) for b in p.backends}
    return doc


# ---------------------------------------------------------------------------- HTML
_CSS = """
.hv-diagram{font-family:Helvetica,Arial,sans-serif;font-size:13px;margin:4px 0}
.hv-diagram .hv-zoom{margin:2px 0 4px 0;color:#444}
.hv-diagram .hv-zoom input{margin:0 2px 0 8px}
.hv-diagram .hv-scroll{overflow:auto;max-height:%(height)s;border:1px solid #ccc;resize:vertical;background:#fff}
.hv-diagram .hv-scroll svg{display:block}
"""


def diagram_html(svg: str, uid: str, height: str = "640px") -> str:
    """An inline SVG in a scrollable box with fit / 100% / 200% zoom (pure CSS, no script)."""
    svg = strip_prolog(svg)
    m = re.search(r'<svg[^>]*\swidth="([\d.]+)pt"[^>]*\sheight="([\d.]+)pt"', svg)
    width_px = float(m.group(1)) * 4 / 3 if m else 800.0
    css = _CSS % {"height": height}
    levels = [("fit", None), ("50%", 0.5), ("100%", 1.0), ("200%", 2.0)]
    rules = []
    radios = []
    for n, (label, scale) in enumerate(levels):
        rid = f"{uid}-z{n}"
        checked = " checked" if n == 0 else ""
        radios.append(f'<input type="radio" name="{uid}-zoom" id="{rid}"{checked}><label for="{rid}">{label}</label>')
        size = "max-width:100%;height:auto" if scale is None else \
            f"max-width:none;width:{width_px * scale:.0f}px;height:auto"
        rules.append(f"#{rid}:checked~.hv-scroll svg{{{size}}}")
    style = css + "\n".join(rules)
    return (f'<div class="hv-diagram" id="{uid}"><style>{style}</style>'
            f'<span class="hv-zoom">zoom:</span>{"".join(radios)}'
            f'<div class="hv-scroll">{svg}</div></div>')


def stats_line(p: "Partition") -> str:
    s = p.stats
    return (f"{count_text('nodes', s['nodes'])}, {count_text('compute_ops', s['compute_ops'])}, "
            f"{count_text('supported_ops', s['supported_ops'])}, {s['subgraphs']:,} subgraphs "
            f"({by_backend_text(s)}), coverage {s['coverage']:.1%}, accelerated {s['accelerated_coverage']:.1%}, "
            f"{s['boundary_tensors']:,} boundary tensors")


def notebook_html(p: "Partition") -> str:
    """What Jupyter shows for a Partition: a summary line and the auto view as inline SVG.

    The auto view keeps dot's work to about a second; a missing dot or a layout that times
    out shows the message instead of the diagram, never a traceback or a long wait."""
    head = (f'<div style="font-family:Helvetica,Arial,sans-serif;font-size:13px">'
            f'<b>hv.Partition</b> | {htmlmod.escape(p.config.label())} | {htmlmod.escape(stats_line(p))}</div>')
    try:
        svg = to_svg(p, "auto", timeout=NOTEBOOK_TIMEOUT_S)
    except RenderError as exc:
        table = p.summary().head(50).to_html(index=False, border=0)
        return (head + f'<pre style="color:#a00;white-space:pre-wrap">{htmlmod.escape(str(exc))}</pre>' + table)
    return head + diagram_html(svg, "hv-" + uuid.uuid4().hex[:12], height="560px")


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


def table_html(df: Any, what: str) -> str:
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
        diagram = diagram_html(svg, "hv-report", height="80vh")
        view_used = graph.info["view"]
    except DotMissing as exc:
        warnings.warn("dot is missing: the HTML report has no diagram. " + str(exc).splitlines()[0], stacklevel=3)
        diagram = f'<pre class="hv-note">{esc(str(exc))}</pre>'
        view_used = view
    cfg = p.config.to_dict()
    cfg_rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(json.dumps(v, ensure_ascii=False))}</td></tr>"
                       for k, v in cfg.items())
    legend = "".join(f'<span class="hv-swatch" style="background:{palette.fill(b)};border-color:{palette.border(b)}">'
                     f"</span>{esc(b)}" for b in p.backends)
    title = f"hierviz report: {p.config.label()}"
    numerics_html = _numerics_section(kwargs.get("numerics"))
    builds_html = _builds_section(kwargs.get("builds"))
    return page_head(title) + f"""<h1>hierviz partition report</h1>
<div class="hv-stats">{esc(p.config.label())} | {esc(p.engine)} engine | {esc(stats_line(p))}</div>
<div class="hv-stats">backends:{legend}</div>
<h2 id="diagram">Diagram ({esc(view_used)} view)</h2>
{diagram}
{_what_to_change(p)}
<h2 id="config">Configuration</h2>
<table class="hv-table">{cfg_rows}</table>
{_compile_today(p)}
<h2 id="subgraphs">Subgraphs</h2>
{table_html(p.summary(), "subgraphs")}
{measurement_section(kwargs.get("measurement"))}{numerics_html}{builds_html}<h2 id="ops">Ops</h2>
{table_html(p.ops(), "ops")}
<h2 id="report">Report</h2>
<pre>{esc(p.report(what_to_change=False, measurement=kwargs.get("measurement"), builds=kwargs.get("builds")))}</pre>
</body>
</html>
"""


WHAT_TO_CHANGE_COLUMNS = ["change", "kind", "nodes", "subgraphs_if_fixed", "subgraphs_saved", "accelerated_ops_gained",
                          "verdict", "op", "note"]


def _what_to_change(p: "Partition") -> str:
    """The report's "What to change" section: the blockers grouped by verdict (improvements,
    trade-offs, no gain), each with what fixing it gives."""
    head = '<h2 id="what-to-change">What to change</h2>'
    table = for_reports(p)
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
            parts.append(table_html(shown[WHAT_TO_CHANGE_COLUMNS], "causes"))
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
    parts.append(table_html(per.drop(columns=["key"], errors="ignore"), "subgraphs"))
    return "\n".join(parts) + "\n"


def _builds_section(builds: Any) -> str:
    """The report's "Built on this machine" section: part.build()'s headline, builder and table."""
    if builds is None:
        return ""
    return (f'<h2 id="built">Built on this machine</h2>\n<p><b>{htmlmod.escape(builds.headline())}</b><br>'
            f'{htmlmod.escape(builds.where())}</p>\n{table_html(builds.df, "subgraphs")}\n')


def _numerics_section(result: Any) -> str:
    """The report's Numerics section: where the error starts and the per-subgraph table."""
    if result is None:
        return ""
    return (f'<h2 id="numerics">Numerics</h2>\n<p>{htmlmod.escape(repr(result))}</p>\n'
            f'{table_html(result.per_subgraph, "subgraphs")}\n')


__all__ = ["check_dot", "layout", "to_svg", "save", "to_json", "notebook_html", "report_html", "diagram_html",
           "strip_prolog", "target", "json_text", "write", "table_html", "stats_line", "measurement_section",
           "DotMissing", "REPORT_CSS", "FORMATS", "INSTALL_HELP"]
