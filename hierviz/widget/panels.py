"""The Explorer's panels as HTML: pure functions of a Partition (and a Measurement, a history
table, a diff), with no widgets and no state, so each panel can be tested and reused alone.

The widget (explorer.py) puts these strings into its `ipywidgets.HTML` panels; the controller
(controller.py) caches the expensive ones per Config.
"""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from hierviz.foundation.digests import text_digest
from hierviz.foundation.opnames import packet_name
from hierviz.compare import columns
from hierviz.partitioner.assumed_support import assumed_ops_text
from hierviz.partitioner.counts import count_text

if TYPE_CHECKING:
    import pandas as pd

    from hierviz.widget.result_status import Status

    from hierviz.partitioner import Partition

HISTORY_SHOWN = 50  # rows of history drawn in the panel (the DataFrame keeps them all)
ERROR_COLOR = "#D55E00"

# The error area's heading per kind of message (the keys of Controller.errors).
ERROR_LABELS = {"partition": "These settings are invalid", "control": "Control", "diagram": "Diagram",
                "measure": "Latency", "build": "Build", "numerics": "Numerics", "export": "Export", "action": "Error",
                "worker": "Worker process", "internal": "Internal error (please report)"}


def table_html(df: "pd.DataFrame", *, max_rows: int | None = None, height: str = "360px") -> str:
    """A DataFrame as a compact HTML table (cells escaped) that scrolls in its own box, both
    ways: the box takes the panel's width (width 0, min-width 100%: a wide table never widens the
    panel, whose scroll bar would then sit at the page's bottom)."""
    body = df.to_html(index=False, border=0, escape=True, max_rows=max_rows, na_rep="",
                      classes="hierviz-table", float_format=lambda v: f"{v:.4g}")
    return (f'<div class="hv-scroll-table" style="max-height:{height};overflow:auto;width:0;min-width:100%;'
            'font-size:12px">'
            f"<style>.hierviz-table td,.hierviz-table th{{padding:2px 6px;text-align:left;"
            f"white-space:nowrap}}</style>{body}</div>")


def message_html(text: str, color: str = "#555") -> str:
    """One escaped line of text, for panels that have nothing else to show."""
    return f'<div style="color:{color};padding:6px">{html.escape(text)}</div>'


def diagram_html(svg: str) -> str:
    """The SVG in a scrollable box with zoom buttons (the notebook display's own container)."""
    from hierviz.drawing.zoom_box import zoom_box as boxed

    uid = "hv-x" + text_digest(svg, 12)
    return boxed(svg, uid, height="640px")


def diagram_error_html(message: str) -> str:
    return message_html(f"No diagram: {message}", ERROR_COLOR)


FOCUS_HINT = "Pick a node or subgraph in the focus box to draw its neighbourhood."


def tables_html(part: "Partition") -> dict[str, str]:
    """The Ops, Subgraphs and Report panels of a partition."""
    report = part.report(what_to_change=False)  # the Blockers tab shows what to change
    return {
        "ops": table_html(part.ops()),
        "summary": table_html(part.summary()),
        "report": ('<div style="max-height:480px;overflow:auto;width:0;min-width:100%"><pre style="font-size:11px;'
                   f'line-height:1.3">{html.escape(report)}</pre></div>'),
    }


def _num(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def latency_html(measurement: Any) -> str:
    """One line: median, p10/p90, speedup, error, compile time and cache use, and warnings."""
    lat = columns.latency_columns(measurement)
    text = f"<b>{_num(lat['median_ms'])} ms</b> median (p10 {_num(lat['p10_ms'])}, p90 {_num(lat['p90_ms'])})"
    if lat.get("speedup") is not None:  # the baseline's short name; its tooltip says which ran (baseline_names)
        from hierviz.latency.baseline_names import EAGER
        from hierviz.latency.measurement import ci_text, verdict

        against = getattr(measurement, "against", None) or EAGER
        said = f"{_num(lat['speedup'])}&times; vs {EAGER}"
        ci = lat.get("speedup_ci")
        if ci is not None:
            wide = bool(getattr(measurement, "baseline_wide", False))
            said += f" ({html.escape(ci_text(ci))}: <b>{html.escape(verdict(ci, EAGER, wide=wide))}</b>)"
        text += f', <span title="{html.escape(against)}">{said}</span>'
    if lat.get("max_abs_error") is not None:
        text += f", max abs error {_num(lat['max_abs_error'])}"
    if lat.get("compile_s") is not None:
        text += f", compile {_num(lat['compile_s'])} s"
    if lat.get("cache_hits") is not None:
        text += f" (cache {lat['cache_hits']} hit / {lat['cache_misses']} miss)"
    fell = list(getattr(measurement, "fallbacks", None) or ())
    if fell:  # what ran: these subgraphs ran in eager PyTorch (the diagram draws them so)
        shown = ", ".join(fell[:6]) + (f" and {len(fell) - 6} more" if len(fell) > 6 else "")
        text += (f'<div style="color:{ERROR_COLOR}"><b>{len(fell)} subgraph(s) fell back to eager PyTorch</b>: '
                 f"{html.escape(shown)}</div>")
    nothing = measurement.nothing_accelerated_text() if hasattr(measurement, "nothing_accelerated_text") else ""
    if nothing:
        text += f'<div style="color:{ERROR_COLOR}"><b>{html.escape(nothing)}</b></div>'
    notes = list(getattr(measurement, "warnings", None) or [])
    if notes:
        items = "".join(f"<li>{html.escape(str(n))}</li>" for n in notes)
        text += f"<details><summary>{len(notes)} warning(s)</summary><ul>{items}</ul></details>"
    return text


def status_text(status: "Status") -> str:
    """A result's state in the words every panel uses: 'measuring ... (stage)', 'failed: error',
    'not asked' (grey while it runs or was not asked, red when it failed)."""
    from hierviz.widget.result_status import State

    colour = ERROR_COLOR if status.state is State.FAILED else "#777"
    return f'<span style="color:{colour}">{html.escape(status.words())}</span>'


def builds_html(builds: Any, status: "Status | None" = None) -> str:
    """The "built here" line: part.build()'s headline and builder, or its state (`status`:
    building, failed with its error); with builds from `with_repros()`, the smallest failing
    part of each failed engine (its headline)."""
    if builds is None:
        from hierviz.widget.result_status import State, Status

        status = status or Status("build")
        text = status_text(status if status.state is not State.NOT_ASKED else Status("build", State.RUNNING))
    else:
        colour = "#2E7D32" if builds.ok else "#C62828"
        text = (f'<span style="color:{colour}"><b>{html.escape(builds.headline())}</b></span>'
                f'<br><span style="color:#777">{html.escape(builds.where())}</span>')
        for name, repro in getattr(builds, "repros", ()):
            text += (f'<br><span style="color:#EF6C00">the smallest failing part of {html.escape(name)}</span>: '
                     f'{html.escape(repro.headline())} <span style="color:#777">'
                     f'(builds.repro({html.escape(repr(name))})'
                     f'.save(folder) writes a repro to file upstream)</span>')
    return f'<div style="padding:1px 8px"><span style="color:#555">built here</span> {text}</div>'


def stats_html(part: "Partition | None", measurement: Any = None, status: "Status | None" = None) -> str:
    """Subgraphs per backend, coverage, boundary tensors and latency, or its state (`status`:
    measuring with its stage, failed with its error; None: "measure latency" is off)."""
    if part is None:
        return ""
    from hierviz.compare.plots import backend_colors

    s = part.stats
    backends = list(s["subgraphs_by_backend"])
    colors = dict(zip(backends, backend_colors(backends)))
    chips = " ".join(
        f'<span style="border-left:10px solid {colors[b]};padding:0 6px;margin-right:6px">'
        f"{html.escape(b)} <b>{n}</b></span>" for b, n in s["subgraphs_by_backend"].items())
    rows = [
        ("subgraphs", f"<b>{s['subgraphs']}</b> ({s['acc_subgraphs']} accelerated): {chips}"),
        ("nodes", f"{count_text('nodes', s['nodes'])}, {count_text('compute_ops', s['compute_ops'])}, "
                  f"{count_text('supported_ops', s['supported_ops'])}"),
        ("coverage", f"{s['coverage']:.1%} of {s['compute_ops']} compute ops supported, "
                     f"{s['accelerated_coverage']:.1%} accelerated"),
        ("boundary tensors", str(s["boundary_tensors"])),
    ]
    if measurement is not None:
        rows.append(("latency", latency_html(measurement)))
    elif status is not None:
        rows.append(("latency", status_text(status)))
    else:
        rows.append(("latency", '<span style="color:#777">not asked: press "measure latency"</span>'))
    if part.assumed:  # a what-if's counts: say they are not what Torch-TensorRT runs
        rows.insert(0, ("what-if", '<span class="hv-assumed" style="color:#c60">what-if: TensorRT is assumed to '
                                   f"convert {html.escape(assumed_ops_text(part.assumed))} &mdash; Torch-TensorRT "
                                   "would not run this partition</span>"))
    body = "".join(f'<tr><td style="padding:1px 8px;color:#555">{k}</td><td style="padding:1px 8px">{v}</td></tr>'
                   for k, v in rows)
    return f"<table>{body}</table>"


def compile_today_html(today: Any, shown: "Partition | None" = None) -> str:
    """One line: the partition torch_tensorrt.compile makes with these settings (engine
    "fast"; a TodaysCompile, None while it is computed), its counts beside the shown
    partition's; or why it is not shown."""
    label = '<span style="color:#555">torch_tensorrt.compile today (fast):</span> '
    if today is None or today.stats is None:
        why = "computing ..." if today is None else today.why
        return f'<div class="hv-compile-today">{label}{html.escape(why)}</div>'
    s = today.stats
    text = (f"<b>{s['subgraphs_by_backend'].get('tensorrt', 0)}</b> TensorRT engine(s), "
            f"{s['subgraphs_by_backend'].get('torch', 0)} PyTorch subgraph(s), "
            f"{count_text('accelerated_ops', s['accelerated_ops'])} of {count_text('compute_ops', s['compute_ops'])}")
    if shown is not None and today.partition is not shown and shown.engine != "fast":
        t = shown.stats
        text += (f" &mdash; this partition ({html.escape(shown.engine)}): {t['acc_subgraphs']} accelerated "
                 f"subgraph(s), {count_text('accelerated_ops', t['accelerated_ops'])}")
    notes = "; ".join(today.notes)
    if notes:  # where the line came from (a cache, a fallback): a note, not a warning
        text += f' <span class="hv-note" style="color:#777">({html.escape(notes)})</span>'
    return f'<div class="hv-compile-today">{label}{text}</div>'


def history_html(df: "pd.DataFrame") -> str:
    """The history table, newest first; settings that never changed go last, so what changed
    and its effect fit on screen."""
    df = df.dropna(axis=1, how="all")
    fixed = [c for c in columns.setting_columns() if c in df and len(df) > 1 and df[c].astype(str).nunique() == 1]
    df = df[[c for c in df.columns if c not in fixed] + fixed]
    shown = df.iloc[::-1].head(HISTORY_SHOWN)
    note = (f'<div style="font-size:11px;color:#777">{len(df)} runs, newest first'
            + (f" (showing {HISTORY_SHOWN})" if len(df) > HISTORY_SHOWN else "")
            + "; all rows in Explorer.history</div>")
    return note + table_html(shown, height="420px")


CHANGE_TEXT = {"backend": "change backend", "split": "stay on their backend, subgraph split",
               "merged": "stay on their backend, subgraph merged"}


def diff_html(moved: "pd.DataFrame | None", current: "Partition | None", other: "Partition | None",
              what: str) -> str:
    """The Diff panel: how many nodes moved from `other` (the previous or pinned run) to `current`."""
    if current is None:
        return message_html("no valid run yet")
    if other is None or moved is None:
        hint = "press 'pin this run' to pin one" if what == "pinned run" else "change a setting to compare"
        return message_html(f"no {what} yet: {hint}")
    kinds = moved["change"].value_counts() if len(moved) else {}
    counts = ", ".join(f"{kinds[k]} {CHANGE_TEXT[k]}" for k in ("backend", "split", "merged") if kinds.get(k))
    head = (f"<div><b>{len(moved)}</b> node(s) moved from the {what} (A: {html.escape(other.config.label())}) "
            f"to this run (B: {html.escape(current.config.label())})" + (f": {counts}" if counts else "") + "</div>")
    if not len(moved):
        return head
    # backend changes first (the real change), then the nodes only regrouped, graph order within
    order = moved["change"].map({"backend": 0, "split": 1, "merged": 2})
    return head + table_html(moved.iloc[order.argsort(kind="stable")].reset_index(drop=True))


def ops_hint(graph_ops: Mapping[str, int]) -> str:
    """The torch_executed_ops picker's tooltip: the graph's ops, most frequent first."""
    return ", ".join(f"{op.replace('torch.ops.', '')} x{n}" for op, n in ops_by_count(graph_ops))


def ops_by_count(graph_ops: Mapping[str, int]) -> list[tuple[str, int]]:
    return sorted(graph_ops.items(), key=lambda kv: (-kv[1], kv[0]))


def teo_counts_html(chosen: Iterable[str], graph_ops: Counter) -> str:
    """Under the torch_executed_ops picker: how many nodes each chosen op forces to PyTorch."""
    chosen = list(chosen)
    if not chosen:
        text = (f"{len(graph_ops)} distinct ops in this graph: type one in the box (topk, aten.topk.default) "
                "and Enter or Tab, or pick one; hover for counts")
    else:
        def count(op: str) -> int:  # a packet ('torch.ops.aten.add') counts every overload of it
            return graph_ops.get(op, 0) or sum(n for o, n in graph_ops.items() if packet_name(str(o)) == op)

        text = "forced to PyTorch: " + ", ".join(
            f"{html.escape(str(op).replace('torch.ops.', ''))} &times;{count(op)}" for op in chosen)
    # the op tags take no typing (controls.py: the picker beside them does)
    hide = "<style>.hierviz-op-tags input.jupyter-widget-taginput{display:none}</style>"
    return f'{hide}<span style="font-size:11px;color:#555">{text}</span>'


def errors_html(errors: Mapping[str, str], shown: "Partition | None") -> str:
    """The error area: one line per kind of message (details folded), and which settings the
    panels still show while the current ones are invalid."""
    parts = []
    for key, text in errors.items():
        first, _, rest = text.partition("\n")
        body = html.escape(first)
        if rest.strip():
            body += f"<details><summary>details</summary><pre>{html.escape(rest)}</pre></details>"
        parts.append(f"<b>{ERROR_LABELS.get(key, key)}:</b> {body}")
    if "partition" in errors and shown is not None:
        parts.append(f"<i>The panels below show the last valid settings: "
                     f"{html.escape(shown.config.label())}</i>")
    if not parts:
        return ""
    return (f'<div style="border-left:4px solid {ERROR_COLOR};background:#fff3ee;'
            'padding:6px 10px;margin:4px 0">' + "<br>".join(parts) + "</div>")


def status_html(total_s: float, cached: bool) -> str:
    status = f"updated in {total_s * 1000:.0f} ms"
    if cached:
        status += " (partition from cache)"
    return f'<span style="color:#777;font-size:11px">{status}</span>'


def exported_html(paths: Iterable[Path]) -> str:
    items = "".join(f"<li><code>{html.escape(str(p))}</code></li>" for p in list(paths)[:20])
    return f"<div>Written:</div><ul>{items}</ul>"


def progress_label_html(stage: str) -> str:
    return f'<span style="font-size:11px;color:#555">{html.escape(str(stage))}</span>'


def fastest_html(result: Any, message: str | None = None, note: str | None = None) -> str:
    """The "find fastest" line: a message while searching, then the best setting against the
    one searched from, with the trial counts; `note`: where it ran, when not in the worker."""
    more = f'<div style="color:#777;font-size:11px">{html.escape(note)}</div>' if note else ""
    if result is None:
        return message_html(message or "") + more
    return _fastest_text(result) + more


def _fastest_text(result: Any) -> str:
    t = result.trials
    counts = t["status"].value_counts().to_dict()
    done = f"{len(t)} settings tried ({counts.get('duplicate', 0)} duplicates, {counts.get('pruned', 0)} pruned)"
    if result.best is None:
        return message_html(f"{done}; none measured with outputs matching the model's.", "#b00")
    best = t[t["trial"] == result.best_trial].iloc[0]
    start = t[t["trial"] == 0].iloc[0]
    verdict = getattr(result, "verdict", "")
    if getattr(result, "beat_eager", True):
        text = (f"fastest: <b>{html.escape(result.best.label())}</b> {_num(best['median_ms'])} ms "
                f"(from {html.escape(result.default.label())}: {_num(start['median_ms'])} ms); "
                f"{html.escape(verdict)}; {done}. Press <i>apply best</i> to show it.")
    else:
        from hierviz.compare.tune_result import EAGER  # a result is there: tuning is loaded already

        against = getattr(result, "against", EAGER)
        text = (f"fastest: <b>{html.escape(verdict or f'no setting beat {against} here')}</b>: keep "
                f"{html.escape(result.best.label())}; {done}.")
    return f"<div style='color:#333'>{text}</div>"
