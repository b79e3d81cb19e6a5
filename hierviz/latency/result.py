"""Measurement: what `hv.measure` found for one partition."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hierviz.latency.timing import NOISY_CV, Stats

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class MeasureWarning(UserWarning):
    """Something a measurement's user should know: noisy timing, a fallback, a mismatch."""


PER_SUBGRAPH_COLUMNS = ["tag", "backend", "median_ms", "share", "compile_s", "cached", "status",
                        "p10_ms", "p90_ms", "cv", "ops", "inputs", "outputs", "key"]


@dataclass(eq=False)
class Measurement:
    """Latency, compile cost and correctness of one partition, against eager PyTorch.

    Times are per call of the whole split model, in milliseconds (`median_ms`, `p10_ms`,
    `p90_ms`, `std_ms`, `cv` = std / mean). `baseline_ms` is the unsplit graph run eagerly,
    timed the same way in the same call; `speedup` = baseline_ms / median_ms. `compile_s` is the
    time spent compiling in this call (cache hits cost nothing). `per_subgraph` has one row per
    subgraph, each timed on its own with the inputs it receives in the split model; `share` is
    its part of the sum of the subgraphs' medians, and `glue_ms` what the split model costs on
    top of that sum (Python between subgraphs; can be slightly negative from noise).
    """

    median_ms: float
    p10_ms: float
    p90_ms: float
    std_ms: float
    cv: float
    iters: int
    warmup: int
    device: str
    compile_s: float
    cache_hits: int
    cache_misses: int
    baseline_ms: float | None
    baseline_cv: float | None
    speedup: float | None
    max_abs_error: float | None
    max_rel_error: float | None
    outputs_match: bool | None
    per_subgraph: "pd.DataFrame"
    glue_ms: float
    fallbacks: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)
    config: Any = None
    timing: Stats | None = field(default=None, repr=False)
    baseline_timing: Stats | None = field(default=None, repr=False)

    @property
    def noisy(self) -> bool:
        return self.cv > NOISY_CV or (self.baseline_cv is not None and self.baseline_cv > NOISY_CV)

    @property
    def subgraphs(self) -> int:
        return len(self.per_subgraph)

    def to_dict(self) -> dict[str, Any]:
        """The scalar results, flat, for a row of a DataFrame (per_subgraph left out)."""
        counts = self.per_subgraph["backend"].value_counts().to_dict() if len(self.per_subgraph) else {}
        return {
            "median_ms": self.median_ms,
            "p10_ms": self.p10_ms,
            "p90_ms": self.p90_ms,
            "std_ms": self.std_ms,
            "cv": self.cv,
            "iters": self.iters,
            "warmup": self.warmup,
            "device": self.device,
            "baseline_ms": self.baseline_ms,
            "baseline_cv": self.baseline_cv,
            "speedup": self.speedup,
            "compile_s": self.compile_s,
            "cache_hits": self.cache_hits,
            "cache_misses": self.cache_misses,
            "outputs_match": self.outputs_match,
            "max_abs_error": self.max_abs_error,
            "max_rel_error": self.max_rel_error,
            "glue_ms": self.glue_ms,
            "subgraphs": self.subgraphs,
            **{f"subgraphs_{b}": int(n) for b, n in sorted(counts.items())},
            "fallbacks": len(self.fallbacks),
            "warnings": "; ".join(self.warnings),
        }

    def __repr__(self) -> str:
        def ms(x: float | None) -> str:
            return "n/a" if x is None else (f"{x:.3f}" if x < 10 else f"{x:.1f}")

        parts = [f"{self.device}: {ms(self.median_ms)} ms median (p10 {ms(self.p10_ms)}, "
                 f"p90 {ms(self.p90_ms)}, cv {self.cv:.1%})"]
        if self.baseline_ms is not None:
            parts.append(f"eager {ms(self.baseline_ms)} ms, speedup {self.speedup:.2f}x")
        by = ", ".join(f"{b} {n}" for b, n in self.per_subgraph["backend"].value_counts().items()) \
            if len(self.per_subgraph) else "none"
        parts.append(f"{self.subgraphs} subgraphs ({by})")
        parts.append(f"compile cache {self.cache_hits} hit(s), {self.cache_misses} miss(es), "
                     f"{self.compile_s:.1f} s compiling")
        if self.outputs_match is None:
            parts.append("outputs not checked")
        else:
            err = "n/a" if self.max_abs_error is None or math.isnan(self.max_abs_error) \
                else f"{self.max_abs_error:.2g}"
            parts.append(("outputs match" if self.outputs_match else "OUTPUTS DIFFER") +
                         f" (max abs err {err})")
        if self.fallbacks:
            parts.append(f"{len(self.fallbacks)} fell back to eager")
        if self.warnings:
            parts.append(f"{len(self.warnings)} warning(s)")
        return "<hv.Measurement " + "; ".join(parts) + ">"

    def _repr_html_(self) -> str:
        import html

        head = html.escape(repr(self))
        warn = "".join(f"<li>{html.escape(w)}</li>" for w in self.warnings)
        table = self.per_subgraph.to_html(index=False, float_format=lambda x: f"{x:.4g}")
        return f"<div><p><code>{head}</code></p>{'<ul>' + warn + '</ul>' if warn else ''}{table}</div>"


__all__ = ["Measurement", "MeasureWarning", "PER_SUBGRAPH_COLUMNS"]
