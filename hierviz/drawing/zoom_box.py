"""A diagram in a page: the inline SVG in a scrollable box with fit / 50% / 100% / 200% zoom
(pure CSS, no script), as the notebook display, the HTML reports and the explorer show it."""

from __future__ import annotations

import re

from hierviz.drawing.graphviz_run import strip_prolog

_CSS = """
.hv-diagram{font-family:Helvetica,Arial,sans-serif;font-size:13px;margin:4px 0}
.hv-diagram .hv-zoom{margin:2px 0 4px 0;color:#444}
.hv-diagram .hv-zoom input{margin:0 2px 0 8px}
.hv-diagram .hv-scroll{overflow:auto;max-height:%(height)s;border:1px solid #ccc;resize:vertical;background:#fff}
.hv-diagram .hv-scroll svg{display:block}
"""


def zoom_box(svg: str, uid: str, height: str = "640px") -> str:
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


__all__ = ["zoom_box"]
