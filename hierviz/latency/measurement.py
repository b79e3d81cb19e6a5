"""Measurement: what `hv.measure` found for one partition; SubgraphRecord: what ran per subgraph."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from hierviz.building.frozen_random import FrozenRandom
from hierviz.latency.baseline_names import EAGER, GRAPH_EAGER
from hierviz.latency.speedup_claim import difference
from hierviz.latency.timing import CI_LEVEL, NOISY_CV, WIDE_SPREAD, Stats

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class MeasureWarning(UserWarning):
    """Something a measurement's user should know: noisy timing, a fallback, a mismatch."""


PER_SUBGRAPH_COLUMNS = ["tag", "backend", "median_ms", "share", "asked", "status", "compile_s", "cached",
                        "p10_ms", "p90_ms", "cv", "ops", "inputs", "outputs", "error", "key"]
STATUSES = ("compiled", "cached", "fallback", "eager")
ACCELERATED_STATUSES = ("compiled", "cached")  # the subgraph ran on its backend


@dataclass
class SubgraphRecord:
    """What ran for one subgraph of the split model.

    `asked`: the backend the partition gave it; `ran`: the backend that actually ran it (the
    asked one, or "torch" for eager and fallback subgraphs). `status`: "compiled" (compiled in
    this call), "cached" (from the compile cache), "fallback" (its backend failed, it ran in eager
    PyTorch; `error` says why) or "eager" (a PyTorch subgraph). `compile_s` is the time spent
    compiling it in this call.
    """

    tag: str
    asked: str
    ran: str
    status: str
    compile_s: float
    ops: int
    inputs: int
    outputs: int
    key: str = ""
    cached: bool = False  # the compile (or its failure) came from the compile cache
    error: str | None = None
    stats: Stats | None = None

    @property
    def label(self) -> str:
        """'tensorrt', or 'tensorrt -> torch (fallback)' for a subgraph whose backend failed."""
        return f"{self.asked} -> {self.ran} (fallback)" if self.status == "fallback" else self.ran


@dataclass(eq=False)
class Measurement:
    """Latency, compile cost and correctness of one partition, against eager PyTorch.

    Times are per call of the whole split model, in milliseconds (`median_ms`, `p10_ms`,
    `p90_ms`, `std_ms`, `cv` = std / mean). `baseline_ms` is your nn.Module run eagerly (the
    model the partition's graph was captured from, or `model=`), timed the same way in the same
    call; `speedup` = baseline_ms / median_ms, and `speedup_ci` its 95% confidence interval
    (low, high), a bootstrap over both sets of timed samples (hierviz.latency.timing.
    speedup_interval): the split model is faster than eager PyTorch only when that interval is narrow and
    clear of 1.0 (hierviz.latency.speedup_claim; `verdict` says it in words). `against` names the
    baseline as hv.tune does (hierviz.latency.baseline_names): "eager PyTorch (your nn.Module)", or
    "eager PyTorch (the captured graph)" when there is no nn.Module (a bare graph) or it failed to
    run; None when nothing was timed beside the split model (baseline=False). Every timing keeps
    its samples (`timing`, `eager_timing`, `baseline_timing`: Stats with `samples_ms`).
    `graph_eager_ms` is the captured aten graph run eagerly (the baseline itself when there is
    no nn.Module, e.g. for a GraphModule), and `torch_compile_ms` the whole model through
    torch.compile when asked for (`torch_compile_s` its compile time). `compile_s` is the time
    spent compiling in this call (cache hits cost nothing); `compile_state` says per backend
    whether that compile was "cold" or "warm" (the backend's own on-disk caches, e.g. TensorRT's
    timing/runtime cache or TorchInductor's FX graph cache, already existed) or "cached".
    `per_subgraph` has one row per subgraph, each timed on its own with the inputs it receives in
    the split model: `backend` is the backend that ran it, `asked` the one the partition gave
    it, `status` compiled / cached / fallback / eager; `share` is its part of the sum of the
    subgraphs' medians, and `glue_ms` what the split model costs on top of that sum (Python
    between subgraphs; can be slightly negative from noise). `fallbacks` are the tags of
    subgraphs whose backend failed and that ran in eager PyTorch instead. `precision` records
    TF32 and matmul precision for every backend (see hierviz.latency.precision).
    `mismatch_at`: for outputs that differ, the subgraph where the error starts, when
    hv.tune / hv.sweep looked it up (hierviz.latency.numerics.locate_mismatch), else None.
    `frozen_random`: the random ops (aten.rand/randn/randperm) of the TensorRT subgraphs that ran
    as engines, which Torch-TensorRT evaluates once at build, so every run gives the same values
    (hierviz.building.frozen_random.FrozenRandom; each also a note in `warnings`, in Builds' words).
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
    precision: dict[str, Any] = field(default_factory=dict)
    compile_state: dict[str, str] = field(default_factory=dict)
    records: tuple[SubgraphRecord, ...] = field(default=(), repr=False)
    graph_eager_ms: float | None = None
    torch_compile_ms: float | None = None
    torch_compile_s: float | None = None
    speedup_ci: tuple[float, float] | None = None
    eager_timing: Stats | None = field(default=None, repr=False)
    mismatch_at: str | None = None
    against: str | None = None
    frozen_random: tuple[FrozenRandom, ...] = ()

    @property
    def verdict(self) -> str:
        """'faster than', 'slower than' or 'no clear difference from' `against` (e.g. 'faster than
        eager PyTorch (your nn.Module)'), from `speedup_ci` by hierviz.latency.speedup_claim ('not
        compared with eager PyTorch' without a baseline), flagged when the baseline's own spread is
        wide (`baseline_wide`); led by 'nothing accelerated: ...' when every subgraph ran in eager PyTorch."""
        return self.verdict_for(self.speedup_ci)

    def verdict_for(self, ci: tuple[float, float] | None, against: str | None = None) -> str:
        """The verdict of a speed-up interval `ci` of this measurement against `against` (another
        timing of the eager model, as hv.tune's trials have; by default this measurement's own
        baseline), led by 'nothing accelerated: ...' when every subgraph ran in eager PyTorch."""
        text = verdict(ci, against or self.against or EAGER, wide=self.baseline_wide)
        nothing = self.nothing_accelerated_text()
        return f"{nothing}; {text}" if nothing else text

    @property
    def accelerated(self) -> int:
        """Subgraphs that ran on an accelerated backend (compiled now or from the cache), as
        `per_subgraph` says: a subgraph that fell back ran in eager PyTorch and is not counted."""
        per = self.per_subgraph
        if per is None or not len(per) or "status" not in per.columns:
            return 0
        return int(per["status"].isin(ACCELERATED_STATUSES).sum())

    @property
    def nothing_accelerated(self) -> bool:
        """Every subgraph ran in eager PyTorch (none was accelerated, or all that were fell back):
        this timed the eager model in pieces, whatever the speed-up says."""
        return self.accelerated == 0

    def nothing_accelerated_text(self) -> str:
        """'nothing accelerated: every subgraph ran in eager PyTorch (...why)', '' when something was."""
        if not self.nothing_accelerated:
            return ""
        why = (f"{len(self.fallbacks)} fell back" if self.fallbacks else
               "the partition has no accelerated subgraph: see part.blockers(), or give a backend its ops "
               "with support=")
        return f"nothing accelerated: every subgraph ran in eager PyTorch ({why})"

    @property
    def baseline_wide(self) -> bool:
        """The eager baseline's own samples spread wide (p10-p90 over WIDE_SPREAD of its median):
        the machine was busy while it was timed, and the speed-up is less certain than its
        interval says."""
        return self.eager_timing is not None and self.eager_timing.wide

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
            "graph_eager_ms": self.graph_eager_ms,
            "torch_compile_ms": self.torch_compile_ms,
            "baseline_cv": self.baseline_cv,
            "speedup": self.speedup,
            "speedup_ci": self.speedup_ci,
            "compile_s": self.compile_s,
            "cache_hits": self.cache_hits,
            "cache_misses": self.cache_misses,
            "outputs_match": self.outputs_match,
            "max_abs_error": self.max_abs_error,
            "max_rel_error": self.max_rel_error,
            "mismatch_at": self.mismatch_at,
            "glue_ms": self.glue_ms,
            "subgraphs": self.subgraphs,
            **{f"subgraphs_{b}": int(n) for b, n in sorted(counts.items())},
            "accelerated": self.accelerated,
            "verdict": self.verdict,
            "fallbacks": len(self.fallbacks),
            "fallback_tags": ",".join(self.fallbacks),
            "tf32": self.precision.get("tf32"),
            "compile_state": ",".join(f"{b}:{s}" for b, s in sorted(self.compile_state.items())),
            "warnings": "; ".join(self.warnings),
        }

    def __repr__(self) -> str:
        def ms(x: float | None) -> str:
            return "n/a" if x is None else (f"{x:.3f}" if x < 10 else f"{x:.1f}")

        parts = [f"{self.device}: {ms(self.median_ms)} ms median (p10 {ms(self.p10_ms)}, "
                 f"p90 {ms(self.p90_ms)}, cv {self.cv:.1%})"]
        if self.baseline_ms is not None:
            against = self.against or EAGER
            said = verdict(self.speedup_ci, against, wide=self.baseline_wide)
            parts.append(f"{against} {ms(self.baseline_ms)} ms, speedup {self.speedup:.2f}x"
                         + (f" ({ci_text(self.speedup_ci)}: {said})" if self.speedup_ci else ""))
        if self.graph_eager_ms is not None and self.against != GRAPH_EAGER:
            parts.append(f"{GRAPH_EAGER} {ms(self.graph_eager_ms)} ms")
        if self.torch_compile_ms is not None:
            parts.append(f"torch.compile {ms(self.torch_compile_ms)} ms")
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
                         f" (max abs err {err})" + (f", starting in {self.mismatch_at}" if self.mismatch_at else ""))
        if self.fallbacks:
            asked = self.per_subgraph.loc[self.per_subgraph["status"] == "fallback", "asked"].value_counts()
            parts.append(f"{len(self.fallbacks)} FELL BACK to {EAGER} ("
                         + ", ".join(f"{n} {b}" for b, n in asked.items()) + ")")
        if self.nothing_accelerated:
            parts.append("NOTHING ACCELERATED" + self.nothing_accelerated_text()[len("nothing accelerated"):])
        if self.precision and self.device.startswith("cuda"):
            parts.append("TF32 on" if self.precision.get("tf32") else "strict FP32 (TF32 off)")
        if self.warnings:
            parts.append(f"{len(self.warnings)} warning(s)")
        return "<hv.Measurement " + "; ".join(parts) + ">"

    def _repr_html_(self) -> str:
        import html

        head = html.escape(repr(self))
        warn = "".join(f"<li>{html.escape(w)}</li>" for w in self.warnings)
        table = self.per_subgraph.to_html(index=False, float_format=lambda x: f"{x:.4g}")
        return f"<div><p><code>{head}</code></p>{'<ul>' + warn + '</ul>' if warn else ''}{table}</div>"


def fallback_note(records: Sequence[SubgraphRecord]) -> str | None:
    """The one note for the subgraphs of a build that fell back to eager PyTorch (None when
    none did): how many, then per backend and reason, each subgraph named once."""
    fell = [r for r in records if r.status == "fallback"]
    if not fell:
        return None
    groups: dict[tuple[str, str], list[SubgraphRecord]] = {}
    for r in fell:
        groups.setdefault((r.asked, r.error or "its compile failed"), []).append(r)
    parts = []
    for (asked, error), group in groups.items():
        named = ", ".join(f"{r.tag} ({r.ops} ops{'; failure remembered from an earlier compile' if r.cached else ''})"
                          for r in group)
        parts.append(f"{len(group)} {asked}: {error}: {named}")
    return (f"{len(fell)} of {len(records)} subgraph(s) fell back to eager PyTorch (their backend could not "
            "compile them; they ran, and were timed, in PyTorch): " + "; ".join(parts))


def ci_text(ci: tuple[float, float] | None) -> str:
    """'95% CI 1.02-1.10x' ('' without an interval)."""
    if ci is None:
        return ""
    return f"{CI_LEVEL:.0%} CI {ci[0]:.2f}-{ci[1]:.2f}x"


def verdict(ci: tuple[float, float] | None, against: str = EAGER, *, wide: bool = False) -> str:
    """What a speed-up interval says against the baseline `against` (hierviz.latency.baseline_names):
    faster, slower or no clear difference, by the one rule of hierviz.latency.speedup_claim (a
    narrow interval clear of 1.0 by 5%); `wide`: the baseline's own spread is wide, said after it."""
    said = difference(ci)
    if said == "unknown":
        return f"not compared with {against}"
    if said == "faster":
        text = f"faster than {against}"
    elif said == "slower":
        text = f"slower than {against}"
    else:
        text = f"no clear difference from {against}"
    return text + (" (but the baseline's own timing spread is wide: the machine was busy)" if wide else "")


def wide_baseline_note(stats: Stats) -> str:
    """The note for a baseline whose own samples spread wide (Stats.wide)."""
    return (f"the {EAGER} baseline's own timing spread is wide: p10-p90 {stats.p10_ms:.3g}-{stats.p90_ms:.3g} ms "
            f"around a median of {stats.median_ms:.3g} ms ({stats.spread:.0%} > {WIDE_SPREAD:.0%}); the machine "
            "was busy while it ran: measure again on a quiet machine, or raise iters")


__all__ = ["fallback_note", "ACCELERATED_STATUSES", "ci_text", "verdict", "wide_baseline_note", "Measurement",
           "MeasureWarning", "SubgraphRecord", "PER_SUBGRAPH_COLUMNS", "STATUSES"]
