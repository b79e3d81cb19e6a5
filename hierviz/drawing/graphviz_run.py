"""Running graphviz's `dot`: its path (with install commands when it is missing), a layout
with a timeout, so nothing blocks for minutes, and a partition's SVG.

How much dot is asked to do is decided before the DOT is written (budget.py); nothing here
rewrites it.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hierviz.drawing.budget import BITMAP_LIMIT_PX, DEFAULT_MAX_NODES
from hierviz.drawing.legend import octagon_swatches
from hierviz.drawing.views import render
from hierviz.errors import RenderError

if TYPE_CHECKING:  # pragma: no cover
    import graphviz

    from hierviz.partitioner import Partition

# dot gets this long before we give up; auto views finish in about a second.
DEFAULT_TIMEOUT_S = 120.0
NOTEBOOK_TIMEOUT_S = 30.0
# Laying out more drawn nodes than this warns that dot may take minutes.
SLOW_LAYOUT_NODES = 4 * DEFAULT_MAX_NODES

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
    out = _run_dot(dot, source, fmt, timeout, aligned)
    return octagon_swatches(out.decode("utf-8")).encode("utf-8") if fmt == "svg" else out


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


__all__ = ["check_dot", "layout", "to_svg", "strip_prolog", "DotMissing", "INSTALL_HELP", "DEFAULT_TIMEOUT_S",
           "NOTEBOOK_TIMEOUT_S"]
