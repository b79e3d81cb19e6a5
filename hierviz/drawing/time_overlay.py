"""The cost overlay: measured time drawn on a diagram (`render(..., measurement=m)`).

A `hv.Measurement` times each subgraph on its own (`per_subgraph`: tag, median_ms, share).
The overlay writes those milliseconds and their share of the total into the labels and
tooltips of subgraphs (collapsed view, clusters of the full view) and module boxes, and
thickens their border with the share, so the expensive parts stand out without hiding the
backend colors. A module box's time is the sum over its ops of their subgraph's time split
over that subgraph's ops by an estimate of each op's work (FLOPs + bytes from the tensor
metadata, zero for getitem and views: drawing/work_estimate.py), since subgraphs are timed whole.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

from hierviz.drawing import palette
from hierviz.drawing.dot import html
from hierviz.drawing.overlays import Overlay
from hierviz.drawing.text import LABEL_CHARS
from hierviz.drawing.work_estimate import node_work, split_time
from hierviz.errors import RenderError
from hierviz.partitioner import FALLBACK
from hierviz.partitioner.record import dtype_itemsize
from hierviz.partitioner.report import measured_fallbacks

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.latency.measurement import Measurement
    from hierviz.partitioner.partition_result import Partition

TIME_BAR = "#4D4D4D"
MAX_EXTRA_PEN = 4.0


def ms_text(ms: float) -> str:
    """'0.042 ms', '3.21 ms', '12.5 ms'."""
    if ms < 0.1:
        return f"{ms:.3f} ms"
    return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms"


def subgraph_times(measurement: "Measurement | None") -> dict[str, tuple[float, float]]:
    """tag -> (median ms, share of the subgraphs' total) from a Measurement ({} without one)."""
    if measurement is None:
        return {}
    per = getattr(measurement, "per_subgraph", None)
    if per is None or not hasattr(per, "columns") or not {"tag", "median_ms"} <= set(per.columns):
        raise RenderError("measurement= takes the hv.Measurement that hv.measure(partition, ...) returned "
                          f"(with per_subgraph times), not {type(measurement).__name__}.")
    shares = per["share"].tolist() if "share" in per.columns else [float("nan")] * len(per)
    out = {}
    for tag, ms, share in zip(per["tag"].tolist(), per["median_ms"].tolist(), shares):
        if ms is not None and not (isinstance(ms, float) and math.isnan(ms)):
            out[str(tag)] = (float(ms), float(share) if share is not None else float("nan"))
    return out


class TimeOverlay(Overlay):
    """Per-subgraph and per-op times of one measurement of partition `p`: each node's value is
    its share of its subgraph's time (ms)."""

    data_name = "latency (ms, subgraph time split by estimated work)"
    data_suffix = ".latency.json"
    gradient = ({"stop": 0, "bgColor": "#FFFFFF"}, {"stop": 0.5, "bgColor": "#FDB863"},
                {"stop": 1, "bgColor": "#D7301F"})

    def __init__(self, p: "Partition", measurement: "Measurement") -> None:
        times = subgraph_times(measurement)
        tags = set(p.records.subgraph_tag)
        if not times or not set(times) <= tags:
            unknown = sorted(set(times) - tags)[:3]
            raise RenderError("measurement= must be a measurement of this partition (hv.measure(p, inputs)); "
                              + (f"its subgraphs {unknown} are not in this one." if unknown
                                 else "it has no per-subgraph times."))
        t = self.t = p.records
        self.measurement = measurement
        self.subgraph_ms = {tag: ms for tag, (ms, _) in times.items()}
        self.total = sum(self.subgraph_ms.values()) or 1.0
        self.op_ms = [0.0] * len(t)
        work = node_work(t)
        for k, members in enumerate(t.subgraph_members):
            ms = self.subgraph_ms.get(t.subgraph_tag[k])
            if ms is None or not members:
                continue
            for i, part in split_time(ms, members, work).items():
                self.op_ms[i] = part
        self.device = str(getattr(measurement, "device", ""))
        self.fallbacks = measured_fallbacks(p, measurement)
        index = {tag: k for k, tag in enumerate(t.subgraph_tag)}
        self.fell = {index[tag]: why for tag, why in self.fallbacks.items() if tag in index}

    def fell_back(self, k: int) -> str | None:
        return self.fell.get(k)

    def noisy_text(self) -> str:
        """'NOISY (cv 283%): ...' when the measurement says its spread was wide (Measurement.noisy:
        the machine was busy), else ''."""
        if not getattr(self.measurement, "noisy", False):
            return ""
        cvs = (getattr(self.measurement, "cv", None), getattr(self.measurement, "baseline_cv", None))
        worst = max((c for c in cvs if isinstance(c, (int, float)) and not math.isnan(c)), default=float("nan"))
        return f"NOISY (cv {worst:.0%}): the machine was busy while timing; measure again on a quiet machine"

    def title(self) -> str:
        parts = [self.noisy_text()]
        if self.fell:
            parts.append(f"measured: {len(self.fell)} of {len(self.subgraph_ms)} subgraphs fell back to eager PyTorch"
                         + (" (nothing accelerated)" if getattr(self.measurement, "nothing_accelerated", False)
                            else ""))
        return " \u00b7 ".join(p for p in parts if p)

    def share(self, ms: float) -> float:
        return ms / self.total

    def node_value(self, i: int) -> float | None:
        return round(self.op_ms[i], 6) if self.t.subgraph[i] >= 0 else None

    def node_attrs(self, i: int) -> list[tuple[str, str]]:
        tag = self.t.tag[i]
        ms = None if tag is None else self.subgraph_ms.get(tag)
        attrs = [] if ms is None else [("subgraph_ms", f"{ms:.4f}"), ("subgraph_share", f"{self.share(ms):.1%}")]
        why = self.fell.get(self.t.subgraph[i])
        if why:
            attrs += [("ran", f"{FALLBACK} (eager PyTorch; fell back from {self.t.backend[i]})"),
                      ("fell_back", f"{self.t.backend[i]} could not compile it: {why}")]
        return attrs

    def _annotate(self, ms: float, lines: list[str], tip: list[str], attrs: dict, what: str,
                  bar: bool = True) -> None:
        share = self.share(ms)
        width = max(1, round(80 * share))
        bar_html = (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0" ALIGN="LEFT" FIXEDSIZE="TRUE" '
                    f'WIDTH="80" HEIGHT="5"><TR>'
               f'<TD WIDTH="{width}" HEIGHT="5" FIXEDSIZE="TRUE" BGCOLOR="{TIME_BAR}"></TD>'
               + (f'<TD WIDTH="{80 - width}" HEIGHT="5" FIXEDSIZE="TRUE" BGCOLOR="#E6E6E6"></TD>'
                  if width < 80 else "") + "</TR></TABLE>")
        lines.append(f'<FONT POINT-SIZE="9"><B>{html(ms_text(ms))}</B> \u00b7 {share:.0%} of time</FONT>')
        if bar:
            lines.append(bar_html)
        tip.append(f"measured{' on ' + self.device if self.device else ''}: {ms_text(ms)} ({share:.1%} of the "
                   f"subgraphs' {ms_text(self.total)}){what}")
        attrs["penwidth"] = round(float(attrs.get("penwidth") or 1.0) + MAX_EXTRA_PEN * share, 2)

    def decorate_ops(self, ops: Sequence[int], lines: list[str], tip: list[str], attrs: dict,
                     bar: bool = True) -> None:
        """Module boxes (and boxes of several subgraphs): the time of these ops (subgraph times
        split over their nodes by estimated work)."""
        self._annotate(sum(self.op_ms[i] for i in ops), lines, tip, attrs,
                       "; each subgraph's time split over its nodes by estimated work (FLOPs + bytes)", bar=bar)

    def decorate_subgraph(self, k: int, lines: list[str], tip: list[str], attrs: dict) -> None:
        """A subgraph box or cluster (text lines only, no bar): its measured median, and, when
        it fell back, that it ran in eager PyTorch and why."""
        ms = self.subgraph_ms.get(self.t.subgraph_tag[k])
        why = self.fell.get(k)
        if why:
            lines.append(f'<FONT POINT-SIZE="9" COLOR="{palette.border(FALLBACK)}"><B>FELL BACK</B>: '
                         f"{html(why, LABEL_CHARS)}</FONT>")
            tip.append(f"fell back when measured: ran in eager PyTorch; {self.t.subgraph_backend[k]} could not "
                       f"compile it: {why}")
        if ms is not None:
            self._annotate(ms, lines, tip, attrs, " (in eager PyTorch: it fell back)" if why else "", bar=False)

    def weigh_edge(self, specs: Sequence[Any], text: str | None, pen: float,
                   tip: list[str]) -> tuple[str | None, float]:
        """A boundary edge's label and pen width, weighted by the bytes its tensors carry."""
        nbytes = sum(tensor_bytes(s) for s in specs)
        if not nbytes:
            return text, 1.2
        tip.insert(0, f"{size_text(nbytes)} cross here per call")
        return (f"{text} \u00b7 {size_text(nbytes)}" if text else size_text(nbytes)), edge_weight(nbytes)

    def legend_html(self) -> str:
        where = f" on {self.device}" if self.device else ""
        whole = getattr(self.measurement, "median_ms", None)
        if isinstance(whole, (int, float)) and not math.isnan(whole):  # the headline, and what the times sum to
            text = html(f"time: each subgraph's median, timed alone{where} (sum {ms_text(self.total)}; the whole "
                        f"model: {ms_text(whole)} median); grey bar and border width: share of the subgraphs' time; "
                        "edge width: bytes")
        else:
            text = html(f"time: measured median per subgraph{where} (total {ms_text(self.total)}); grey bar and "
                        "border width: share of time; edge width: bytes")
        noisy = self.noisy_text()
        if noisy:
            text += f'<BR ALIGN="LEFT"/><FONT COLOR="{palette.border(FALLBACK)}"><B>{html(noisy)}</B></FONT>'
        if self.fell:
            text += "<BR ALIGN=\"LEFT\"/>" + html(
                f"fell back: {len(self.fell)} subgraph(s) ran in eager PyTorch, so they are drawn and counted as "
                "PyTorch (a subgraph's box or cluster: dashed, bordered in the colour of the backend that could not "
                "compile it)")
        return text


def tensor_bytes(spec: Any) -> int:
    """Bytes of a tensor from its TensorSpec, torch.dtype.itemsize per element (0 when its shape
    is symbolic or unknown, or its dtype is not a torch dtype)."""
    size = dtype_itemsize(spec.dtype)
    if spec.shape is None or size is None or not all(isinstance(d, int) for d in spec.shape):
        return 0
    return math.prod(spec.shape) * size


def size_text(n: float) -> str:
    """'64 B', '8.0 KB', '1.5 MB'."""
    for unit in ("B", "KB", "MB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def edge_weight(nbytes: int) -> float:
    """Pen width of an edge carrying `nbytes`: 1 for nothing known, up to 4 for 1 MB and more."""
    return round(1.0 + min(3.0, math.log10(nbytes) / 2), 2) if nbytes > 1 else 1.0


__all__ = ["TimeOverlay", "ms_text", "subgraph_times", "tensor_bytes", "size_text", "edge_weight"]
