"""The graph-by-graph picture's overview: one row per graph under the legend, its ops, a bar of
its ops' backends and what follows it (its breaks, how the next graph starts), each row linked to
its frame in an SVG."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from hierviz.drawing import palette
from hierviz.drawing.by_graph.breaks_and_starts import breaks_after, graph_start, repeats, start_lines, where
from hierviz.drawing.dot import html

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.capturing.by_graph.graph_break import GraphBreak
    from hierviz.partitioner import MultiGraphPartition, Partition

# The overview's backend bar (pt) and how much of what follows a graph a row shows.
BAR_PT = 160
THEN_CHARS = 150

def ops_by_backend(p: "Partition") -> dict[str, int]:
    """How many compute ops of graph partition `p` run in each backend, in the partition's
    backend order (those with none left out)."""
    t = p.records
    counts = Counter(t.backend[i] for i in range(len(t)) if t.compute[i])
    order = [b for b in p.backends if counts.get(b)] + sorted(b for b in counts if b not in p.backends)
    return {b: counts[b] for b in order}


def bar_widths(counts: dict[str, int], width: int = BAR_PT) -> list[tuple[str, int]]:
    """(backend, pt) of each segment of a `width` pt bar, in proportion to `counts` (each
    segment at least 1 pt; together exactly `width`)."""
    total = sum(counts.values())
    items = [(b, n) for b, n in counts.items() if n]
    out: list[tuple[str, int]] = []
    left = width
    for j, (b, n) in enumerate(items):
        rest = len(items) - j - 1  # segments still to come, 1 pt each at least
        w = left if rest == 0 else max(1, min(round(width * n / total), left - rest))
        out.append((b, w))
        left -= w
    return out


def then_text(mp: "MultiGraphPartition", k: int, after: dict[int, list[tuple[int, "GraphBreak"]]]) -> str:
    """What follows graph k, in one line: its graph breaks (those in a row at one line counted
    once) and why the next graph starts; '' when nothing does."""
    parts = []
    for j, b, count in repeats(after.get(k, [])):
        which = f"break {j + 1}" if count == 1 else f"breaks {j + 1}–{j + count}"
        parts.append(f"{which}: {b.short or 'graph break'}" + (f" ({where(b.file, b.line)})" if b.file else ""))
    if k + 1 < len(mp.graphs):
        starts = graph_start(mp, k + 1)
        if starts:
            parts.append(f"g{k + 1} starts: {start_lines(starts)[0]}")
        elif not after.get(k):
            parts.append(f"g{k + 1} follows")
    return " · ".join(parts)


def _title(text: str) -> str:
    """A cell's tooltip (SVG) holding all of a text the cell shortens."""
    return f' TITLE="{html(text)}"' if len(text) > THEN_CHARS else ""


def _small(text: str) -> str:
    return f'<FONT POINT-SIZE="9">{text}</FONT>' if text else ""  # graphviz refuses an empty FONT


def overview(mp: "MultiGraphPartition") -> str:
    """The picture's overview (an HTML-like table): one row per graph in execution order, its
    name and function, its ops, a bar of its ops' backends (BAR_PT wide, segments in proportion
    to the ops each backend runs) and what follows it; in an SVG a row links to its frame."""
    after = breaks_after(mp)
    head = ('<TR><TD ALIGN="LEFT"><I>graph</I></TD><TD ALIGN="LEFT"><I>function</I></TD>'
            '<TD ALIGN="RIGHT"><I>ops</I></TD><TD ALIGN="LEFT"><I>backends (share of its ops)</I></TD>'
            '<TD ALIGN="LEFT"><I>then (after this graph)</I></TD></TR>')
    rows = [head]
    if after.get(-1):
        first = " · ".join(f"break {j + 1}: {b.short}" for j, b, _ in repeats(after[-1]))
        rows.append(f'<TR><TD ALIGN="LEFT" COLSPAN="4">(before g0)</TD><TD ALIGN="LEFT">'
                    f'<FONT POINT-SIZE="9">{html(first, THEN_CHARS)}</FONT></TD></TR>')
    for k, p in enumerate(mp.graphs):
        g = mp.capture.graphs[k]
        counts = ops_by_backend(p)
        if counts:
            cells = "".join(f'<TD WIDTH="{w}" HEIGHT="9" FIXEDSIZE="TRUE" BGCOLOR="{palette.color(b)}"></TD>'
                            for b, w in bar_widths(counts))
        else:  # nothing to partition: an empty bar
            cells = (f'<TD WIDTH="{BAR_PT}" HEIGHT="9" FIXEDSIZE="TRUE" '
                     f'BGCOLOR="{palette.tint(palette.GREY, 0.8)}"></TD>')
        bar = ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0" FIXEDSIZE="TRUE" '
               f'WIDTH="{BAR_PT}" HEIGHT="9"><TR>{cells}</TR></TABLE>')
        share = ", ".join(f"{b} {n}" for b, n in counts.items()) or "no compute op"
        then = then_text(mp, k, after)
        link = f' HREF="#frame_g{k}" TITLE="g{k}: {html(g.function or "graph", 60)}: {html(share)}"'
        rows.append(f'<TR><TD ALIGN="LEFT"{link}><B>g{k}</B></TD>'
                    f'<TD ALIGN="LEFT"{link}>{html(g.function or "graph", 40)}</TD>'
                    f'<TD ALIGN="RIGHT">{p.stats["compute_ops"]:,}</TD>'
                    f'<TD ALIGN="LEFT" CELLPADDING="2"{link}>{bar}</TD>'
                    f'<TD ALIGN="LEFT"{_title(then)}>{_small(html(then, THEN_CHARS))}</TD></TR>')
    title = (f'<TR><TD ALIGN="LEFT" COLSPAN="5"><B>overview</B>: {len(mp.graphs)} graphs in execution order'
             ' (SVG: click a row to go to its frame)</TD></TR>')
    return ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">' + title + "".join(rows)
            + "</TABLE>")
