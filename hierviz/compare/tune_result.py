"""TuneResult: what `hv.tune` found (best, trials, baselines), its repr and its plot."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from hierviz.settings.config import Config
from hierviz.errors import ConfigError
from hierviz.compare.rows import partition_of
from hierviz.compare.tensorrt_kept import STATUS as KEPT_STATUS
from hierviz.latency.baseline_names import EAGER, EAGER_MODULE, GRAPH_EAGER
from hierviz.latency.measurement import ci_text
from hierviz.latency.speedup_claim import clear_gain
from hierviz.partitioner import MultiGraphPartition, Partition

STATUSES = ("measured", "duplicate", "pruned", "mismatch", "fallback", "nothing accelerated", KEPT_STATUS, "failed",
            "invalid")
NO_WINNER = f"no setting beat {EAGER_MODULE} here"


def pick_best(trials: pd.DataFrame) -> tuple[int | None, int | None]:
    """(crowned, fastest): `fastest` is the fastest trial that qualifies (status "measured",
    outputs match, no fallbacks: "nothing accelerated", "pruned", "mismatch" ... never do);
    `crowned` the one to measure again: the fastest of those whose speed-up interval against
    eager (`speedup_ci`) claims a speed-up (hierviz.latency.speedup_claim), else (every interval
    too wide: the eager time taken at the start was busy) the fastest whose interval lies above
    1.0; None when no trial's does. The final measurement, timed interleaved, decides the claim."""
    ok = trials[trials["status"] == "measured"]
    ok = ok[ok["outputs_match"].astype("boolean").fillna(False) & (ok["fallbacks"].fillna(0) == 0)]
    if not len(ok):
        return None, None
    ok = ok.sort_values(["median_ms", "trial"])
    fastest = int(ok.iloc[0]["trial"])
    cis = ok["speedup_ci"] if "speedup_ci" in ok.columns else pd.Series(None, index=ok.index, dtype=object)
    claimed = ok[cis.map(lambda ci: isinstance(ci, tuple) and clear_gain(ci)).astype(bool)]
    above = ok[cis.map(lambda ci: isinstance(ci, tuple) and ci[0] > 1.0).astype(bool)]
    pick = claimed if len(claimed) else above
    return (int(pick.iloc[0]["trial"]) if len(pick) else None), fastest


@dataclass
class TuneResult:
    """What `hv.tune` found.

    `best` is the fastest setting that beats eager: outputs match the model's, nothing fell
    back, something is accelerated, and its speed-up interval against your nn.Module run
    eagerly (`speedup_ci`, 95%, bootstrap over the timed samples) claims a speed-up (narrow and
    clear of 1.0: hierviz.latency.speedup_claim), confirmed by the full measurement of
    `best_measurement` (the setting and the eager model timed interleaved). `against` names that
    baseline: "eager PyTorch (your nn.Module)", or "eager PyTorch (the captured graph)" for a bare
    graph (the explorer's "find fastest" searches the captured graph in its worker). Where the
    default setting has TensorRT and it cannot be timed here, every setting proposed keeps
    TensorRT's engines (compare/tensorrt_kept.py) and `not_timed` says what was not timed and
    why; the verdict ends with it. When no setting does, `best` is the default setting and `verdict` says "no
    setting beat eager PyTorch (your nn.Module) here" (None only when the default's outputs differ from the
    model's too). `verdict`, `beat_eager` and the best line of the repr all come from
    `best_measurement`, so they never disagree; a baseline whose own spread was wide is
    flagged in the verdict and the notes. `best_measurement` is
    the best setting's full `hv.Measurement` (per-subgraph times, baseline); `best_trial` its
    row; `fastest_trial` the fastest qualifying trial whatever its interval. `trials` has one
    row per trial (the config's fields, subgraph counts, latency, `speedup`, `speedup_ci`,
    `fallbacks`, `status`, `duplicate_of`); `default` the setting tuning started from;
    `baselines` the model's own times (`eager_ms`: your nn.Module run eagerly, timed beside
    the best setting; `eager_start_ms`: timed once at the start, what the trials' `speedup` use;
    `graph_eager_ms`: the captured graph run eagerly; `torch_compile_ms` when asked for or
    when TensorRT times here; `compile_ms`: the fast partition torch_tensorrt.compile would
    run with the same settings, when TensorRT times here, else None and a note says why).
    """

    best: Config | None
    best_measurement: Any
    trials: pd.DataFrame
    default: Config
    baselines: dict[str, Any]
    space: dict[str, list]
    device: str
    notes: list[str] = field(default_factory=list)
    stopped: str = "budget"
    seconds: float = 0.0
    measure_s: float = 0.0
    capture_s: float = 0.0
    study: Any = field(default=None, repr=False)
    graph: Any = field(default=None, repr=False)
    best_trial: int | None = None
    fastest_trial: int | None = None
    beat_eager: bool = False
    verdict: str = ""
    against: str = EAGER_MODULE
    not_timed: str | None = None

    # -------------------------------------------------------------- figures
    @property
    def overhead_s(self) -> float:
        """Time spent in the tune loop itself: everything but capturing, compiling and timing."""
        return max(0.0, self.seconds - self.measure_s - self.capture_s)

    @property
    def overhead(self) -> float:
        """overhead_s as a share of the wall time spent after capture."""
        loop = self.seconds - self.capture_s
        return self.overhead_s / loop if loop > 0 else 0.0

    def _row(self, trial: int | None) -> pd.Series | None:
        if trial is None:
            return None
        rows = self.trials[self.trials["trial"] == trial]
        return rows.iloc[0] if len(rows) else None

    @property
    def default_trial(self) -> int | None:
        return 0 if len(self.trials) else None

    @property
    def duplicates(self) -> int:
        return int((self.trials["status"] == "duplicate").sum())

    def partition(self) -> Partition | MultiGraphPartition:
        """The best setting's partition (hv.ConfigError when no trial qualified): a Partition, or
        graph by graph (ir="torch_compile") a MultiGraphPartition."""
        if self.best is None:
            raise ConfigError("no trial qualified as best, not even the default setting "
                              "(see .trials['status'] and ['error']).")
        return partition_of(self.graph, self.best)

    # -------------------------------------------------------------- display
    def _line(self, label: str, trial: int | None, config: Config | None, measured: Any = None) -> str:
        """One setting's line; `measured` (the best's final Measurement) gives its figures, the
        same the verdict is made from, instead of the trial's row."""
        row = self._row(trial)
        if row is None or config is None:
            return f"  {label:<8} -"
        text = config.label()
        ms = row.get("median_ms") if measured is None else measured.median_ms
        figure = "not measured" if ms is None or (isinstance(ms, float) and math.isnan(ms)) else f"{_ms(ms)} ms"
        speed = row.get("speedup") if measured is None else measured.speedup
        if speed is not None and not (isinstance(speed, float) and math.isnan(speed)):
            ci = row.get("speedup_ci") if measured is None else measured.speedup_ci
            interval = f" ({ci_text(ci)})" if isinstance(ci, tuple) else ""
            figure += f", {speed:.2f}x{interval} vs {self.against}"
        status = row["status"]
        if status != "measured":
            figure += f" ({status}{': ' + str(row['error'])[:80] if isinstance(row['error'], str) else ''})"
        return f"  {label:<8} {text:<40} {figure}  [trial {trial}]"

    def __repr__(self) -> str:
        counts = self.trials["status"].value_counts().to_dict()
        parts = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts.get(s))
        lines = [f"<hv.tune: {len(self.trials)} trials ({parts}) in {self.seconds:.1f} s on {self.device}, "
                 f"stopped by {self.stopped}"]
        if self.best is None:
            lines.append("  best     none: no trial measured with matching outputs")
        else:
            lines.append(self._line("best", self.best_trial, self.best, self.best_measurement))
        if self.verdict:
            lines.append(f"  verdict: {self.verdict}")
        lines.append(self._line("default", self.default_trial, self.default))
        b = self.baselines
        base = [f"{EAGER_MODULE} {_ms(b.get('eager_ms'))} ms", f"{GRAPH_EAGER} {_ms(b.get('graph_eager_ms'))} ms"]
        if "torch_compile_ms" in b:
            base.append(f"torch.compile {_ms(b.get('torch_compile_ms'))} ms")
        if b.get("compile_ms") is not None:
            base.append(f"torch_tensorrt.compile {_ms(b.get('compile_ms'))} ms")
        lines.append("  baselines: " + "; ".join(base))
        for note in self.notes:
            lines.append(f"  note: {note}")
        return "\n".join(lines) + ">"

    def _repr_html_(self) -> str:
        import html

        shown = self.trials.drop(columns=[c for c in ("support",) if c in self.trials.columns])
        return (f"<pre>{html.escape(repr(self))}</pre>" +
                shown.to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="-"))

    def plot(self, ax: Any = None) -> Any:
        """Latency per trial (dots coloured by status), the best so far (a line), and the
        default setting, eager PyTorch (your nn.Module, the captured graph) and torch.compile as
        horizontal lines. Returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(7, 3.5))
        df = self.trials
        colours = {"measured": "tab:blue", "duplicate": "tab:gray", "pruned": "tab:orange",
                   "mismatch": "tab:red", "fallback": "tab:purple"}
        for status, colour in colours.items():
            part = df[(df["status"] == status) & df["median_ms"].notna()]
            if len(part):
                ax.scatter(part["trial"], part["median_ms"].astype(float), s=22, color=colour, label=status, zorder=3)
        ok = df[(df["status"] == "measured") & df["median_ms"].notna()]
        if len(ok):
            running = ok.set_index("trial")["median_ms"].astype(float).cummin()
            ax.step(running.index, running.values, where="post", color="tab:green", label="best so far", zorder=2)
        refs = [(EAGER_MODULE, self.baselines.get("eager_ms"), "black"),
                (GRAPH_EAGER, self.baselines.get("graph_eager_ms"), "tab:gray"),
                ("torch.compile", self.baselines.get("torch_compile_ms"), "tab:brown"),
                ("torch_tensorrt.compile", self.baselines.get("compile_ms"), "tab:olive")]
        default = self._row(self.default_trial)
        if default is not None and pd.notna(default.get("median_ms")):
            refs.append(("default setting", float(default["median_ms"]), "tab:cyan"))
        for label, value, colour in refs:
            if value is not None and not math.isnan(value):
                ax.axhline(value, color=colour, linestyle="--", linewidth=1, label=label)
        ax.set_xlabel("trial")
        ax.set_ylabel(f"median latency, ms ({self.device})")
        ax.set_title("hv.tune")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(fontsize=8, loc="best")
        return ax


def _ms(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


__all__ = ["TuneResult", "STATUSES", "NO_WINNER", "EAGER", "EAGER_MODULE", "GRAPH_EAGER", "pick_best"]
