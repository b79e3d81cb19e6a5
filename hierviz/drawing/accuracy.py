"""The numerics overlay: each subgraph's numerical error drawn on a diagram
(`render(..., numerics=hv.numerics(p, inputs))`).

A subgraph's border (the cluster of the full and focus views, the box of the collapsed view)
takes the colour of its isolated error as a fraction of `hv.measure`'s tolerance for its dtype,
on a five-step scale from exact to more than ten times the tolerance; its label says the error,
and the culprit (where the error starts) is marked. A module box, or a box of several
subgraphs, takes the worst of the subgraphs its ops belong to. The legend shows the scale.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

from hierviz.drawing.dot import html
from hierviz.drawing.overlays import Overlay
from hierviz.errors import RenderError

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.partition_result import Partition

# (upper bound of error / tolerance, border colour, legend text); a ratio above the last bound
# takes the last colour
SCALE: tuple[tuple[float, str, str], ...] = (
    (0.0, "#1A9850", "exact"),
    (0.1, "#66BD63", "< 10% of tolerance"),
    (1.0, "#D9A400", "within tolerance"),
    (10.0, "#F46D43", "fails: up to 10\u00d7 tolerance"),
    (math.inf, "#A50026", "fails: over 10\u00d7 tolerance"),
)
NOT_CHECKED = "#9E9E9E"


def colour(ratio: float) -> str:
    """The border colour of an error that is `ratio` times the tolerance."""
    if ratio is None or (isinstance(ratio, float) and math.isnan(ratio)):
        return NOT_CHECKED
    for bound, value, _ in SCALE:
        if ratio <= bound:
            return value
    return SCALE[-1][1]


def _num(x: float) -> str:
    return "inf" if x == math.inf else (f"{x:.1e}" if x else "0")


class NumericsMarks(Overlay):
    """Per-subgraph isolated errors of one hv.numerics result of partition `p`: each node's
    value is its subgraph's isolated error as a multiple of the tolerance."""

    data_name = "numerics (isolated error / tolerance of the node's subgraph)"
    data_suffix = ".numerics.json"
    gradient = ({"stop": 0, "bgColor": SCALE[0][1]}, {"stop": 0.5, "bgColor": SCALE[2][1]},
                {"stop": 1, "bgColor": SCALE[-1][1]})

    def __init__(self, p: Partition, result: Any) -> None:
        table = getattr(result, "per_subgraph", None)
        if table is None or not hasattr(table, "columns") or not {"tag", "isolated_ratio"} <= set(table.columns):
            raise RenderError("numerics= takes the result of hv.numerics(partition, inputs), "
                              f"not {type(result).__name__}.")
        tags = set(p.records.subgraph_tag)
        unknown = sorted(set(map(str, table["tag"])) - tags)[:3]
        if unknown:
            raise RenderError("numerics= must be a check of this partition (hv.numerics(p, inputs)); "
                              f"its subgraphs {unknown} are not in this one.")
        self.rows = {str(r["tag"]): r for r in table.to_dict("records")}
        self.culprit = getattr(result, "culprit", None)
        self.device = str(getattr(result, "device", ""))
        t = self.t = p.records
        self.tag_of_node = [t.subgraph_tag[k] if k >= 0 else None for k in t.subgraph]

    def _row(self, i: int) -> dict | None:
        """Node `i`'s subgraph's row, None outside a subgraph or one the check has no row for."""
        tag = self.tag_of_node[i]
        return None if tag is None else self.rows.get(tag)

    def node_value(self, i: int) -> float | None:
        row = self._row(i)
        return None if row is None else float(row["isolated_ratio"])

    def node_attrs(self, i: int) -> list[tuple[str, str]]:
        row = self._row(i)
        if row is None:
            return []
        return [("isolated_err", _num(float(row["isolated_max_abs"]))),
                ("isolated_ratio", f"{float(row['isolated_ratio']):.3g}"),
                ("accumulated_err", _num(float(row["accumulated_max_abs"])))]

    def decorate_subgraph(self, k: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        """A subgraph box or cluster: border colour and width by its isolated error, a label line."""
        tag = self.t.subgraph_tag[k]
        row = self.rows.get(tag)
        if row is None:
            return
        ratio = float(row["isolated_ratio"])
        attrs["color"] = colour(ratio)
        attrs["penwidth"] = max(float(attrs.get("penwidth") or 1.0), 2.2 if row["isolated_ok"] else 3.0)
        err = float(row["isolated_max_abs"])
        text = f"isolated err {_num(err)} ({ratio:.2g}\u00d7 tol)" if ratio else "isolated err 0 (exact)"
        carried = float(row["accumulated_max_abs"])
        if carried != err:
            text += f" \u00b7 carried {_num(carried)}"
        if tag == self.culprit:
            attrs["penwidth"] = 4.0
            lines.append(f'<FONT POINT-SIZE="9" COLOR="{colour(ratio)}"><B>{html(text)} \u2190 error starts here'
                         f'</B></FONT>')
        else:
            lines.append(f'<FONT POINT-SIZE="9" COLOR="{colour(ratio)}">{html(text)}</FONT>')
        tip.append(f"numerics: isolated max abs {_num(err)}, {ratio:.3g}\u00d7 the tolerance "
                   f"({row['tolerance']}); accumulated max abs {_num(float(row['accumulated_max_abs']))}; "
                   f"cosine {float(row['isolated_cosine']):.6f}")

    def decorate_ops(self, ops: Sequence[int], lines: list[str], tip: list[str], attrs: dict,
                     bar: bool = True) -> None:
        """A module box or a box of several subgraphs: the worst isolated error among the
        subgraphs of these ops."""
        tags = {self.tag_of_node[i] for i in ops} - {None}
        rows = [self.rows[tag] for tag in tags if tag in self.rows]
        if not rows:
            return
        worst = max(rows, key=lambda r: float(r["isolated_ratio"]))
        ratio = float(worst["isolated_ratio"])
        attrs["color"] = colour(ratio)
        attrs["penwidth"] = max(float(attrs.get("penwidth") or 1.0), 2.2 if worst["isolated_ok"] else 3.0)
        starts = self.culprit in tags
        text = (f"worst isolated err {_num(float(worst['isolated_max_abs']))} ({ratio:.2g}\u00d7 tol)"
                + (" \u2190 error starts here" if starts else ""))
        lines.append(f'<FONT POINT-SIZE="9" COLOR="{colour(ratio)}">{"<B>" if starts else ""}{html(text)}'
                     f'{"</B>" if starts else ""}</FONT>')
        tip.append(f"numerics: worst isolated error in {worst['tag']} ({len(rows)} subgraph(s) here)")

    def legend(self) -> str:
        """The scale in words."""
        return ("border colour: each subgraph's isolated error against eager, as a fraction of the tolerance "
                "for its dtype: " + "; ".join(f"{text}" for _, _, text in SCALE)
                + (f"; the error starts in {self.culprit}" if self.culprit else "; every subgraph within tolerance"))

    def legend_html(self) -> str:
        """The scale as coloured swatches, for the legend."""
        cells = "".join(f'<TD BORDER="2" COLOR="{value}" CELLPADDING="2"><FONT POINT-SIZE="9">{html(text)}</FONT></TD>'
                        for _, value, text in SCALE)
        where = (f"the error starts in {html(self.culprit)}" if self.culprit
                 else "every subgraph is within tolerance")
        return (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="0"><TR><TD ALIGN="LEFT" '
                f'COLSPAN="{len(SCALE)}">border: isolated error against eager / tolerance for the dtype'
                f'{" on " + html(self.device) if self.device else ""} \u00b7 {where}</TD></TR>'
                f'<TR>{cells}</TR></TABLE>')


__all__ = ["NumericsMarks", "colour", "SCALE", "NOT_CHECKED"]
