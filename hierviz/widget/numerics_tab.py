"""The Explorer's Numerics tab: `hv.numerics` of the shown partition (its compiled subgraphs
reused from the compile cache) and the panel that shows where the error starts.

No ipywidgets here: `Checks` runs and keeps the checks of a Controller's settings, `numerics_html`
is the panel (pure HTML).
"""

from __future__ import annotations

import html
import math
import warnings
from typing import Any, Mapping

from hierviz.errors import HiervizError
from hierviz.compare.cache import BoundedCache

HINT = ("Press <b>check numerics</b> to compare each subgraph of these settings with eager PyTorch "
        "(isolated and accumulated error); the diagram then colours each subgraph by its error.")
COLUMNS = ("tag", "backend", "status", "ops", "dtypes", "isolated_max_abs", "isolated_ratio", "isolated_ok",
           "accumulated_max_abs", "accumulated_ok", "isolated_cosine")


class Checks:
    """hv.numerics results of a Controller's settings, stored as its measurements are
    (`controller.measure_key`), at most `size` of them."""

    def __init__(self, controller: Any, size: int) -> None:
        self.controller = controller
        self.store = BoundedCache(size)

    def of(self, part: Any) -> Any:
        """The stored check of `part`'s settings, else None."""
        return None if part is None else self.store.get(self.controller.measure_key(part))

    def run(self, part: Any) -> Any:
        """hv.numerics of `part` with the controller's inputs and measure options (the compile
        cache makes it cheap after a measurement); a HiervizError is filed under the
        controller's errors['numerics'] and None returned."""
        c = self.controller
        result, error = check(part, c.example_inputs, c.measure_options)
        if error is not None:
            c.errors["numerics"] = error
            return None
        c.errors.pop("numerics", None)
        return self.store.put(c.measure_key(part), result)

    def __len__(self) -> int:
        return len(self.store)


def check(part: Any, example_inputs: Any, options: Mapping[str, Any]) -> tuple[Any, str | None]:
    """(hv.numerics result, None), or (None, the message) when a HiervizError stops it."""
    from hierviz.latency import numerics

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return numerics(part, example_inputs, **{k: v for k, v in options.items() if k != "progress"}), None
    except HiervizError as exc:
        return None, str(exc)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.3g}"
    return html.escape(str(value))


def numerics_html(result: Any) -> str:
    """The Numerics panel: the one-line verdict and the per-subgraph table (the culprit first
    marked, failing rows tinted); the hint when there is no check yet."""
    if result is None:
        return f'<p style="color:#555">{HINT}</p>'
    t = result.per_subgraph
    cols = [c for c in COLUMNS if c in t.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    rows = []
    for row in t.to_dict("records"):
        style = ""
        if row["tag"] == result.culprit:
            style = ' style="background:#f8d0c8;font-weight:bold"'
        elif not row["isolated_ok"] or not row["accumulated_ok"]:
            style = ' style="background:#fdeee9"'
        rows.append(f"<tr{style}>" + "".join(f"<td>{_cell(row[c])}</td>" for c in cols) + "</tr>")
    verdict = html.escape(result.culprit_text())
    end = "outputs match eager" if result.outputs_match else f"outputs differ from eager (max abs {result.max_abs_error:.3g})"
    return (f'<p><b>{verdict}</b> &middot; {html.escape(end)} &middot; compiled {result.cache_misses} / from cache '
            f'{result.cache_hits}, check {result.check_s:.2f} s</p>'
            '<table style="border-collapse:collapse;font-size:12px" border="1" cellpadding="2">'
            f"<tr>{head}</tr>{''.join(rows)}</table>")


__all__ = ["Checks", "check", "numerics_html", "HINT", "COLUMNS"]
