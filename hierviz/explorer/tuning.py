"""hv.tune: search partition settings by measured latency (Optuna's TPE sampler), and say
which is fastest, against the default setting and the model run eagerly.

Each trial picks a value for every field of the space, partitions (cached), and measures
the split model. Trials whose partition equals an earlier one's (same subgraphs: per-node
backends and tags) are not measured again: they reuse its figures and say so
(`status="duplicate"`, `duplicate_of`). Measuring is done in two steps: a few timed calls
first, reported to Optuna's pruner (median rule), which stops slow trials there
(`status="pruned"`), then the full timing. A trial whose outputs differ from the model's,
or in which a subgraph fell back to eager because its backend failed, is never `best`.

With `executor="ray"` (or a Ray address) trials run as Ray tasks, several at a time
(TPE proposes a batch while earlier ones run; no pruning there).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import pandas as pd

from hierviz.config import Config
from hierviz.errors import ConfigError, HiervizError, MeasureError
from hierviz.explorer import columns
from hierviz.explorer.cache import cached_partition
from hierviz.explorer.sweep import expand_grid
from hierviz.partitioner import Partition, graph_of, make_config

DEFAULT_BUDGET = 20
QUICK = {"warmup": 1, "iters": 5}     # the first, prunable timing
FULL = {"warmup": 3, "iters": 30}     # the full timing of trials that are not pruned
MAX_OPS = 4                            # torch_executed_ops candidates in the default space
MAX_SIZES = 6                          # min_block_size candidates in the default space
STATUSES = ("measured", "duplicate", "pruned", "mismatch", "fallback", "failed", "invalid")
OPTUNA_HINT = "install Optuna with `pip install 'hierviz[tune]'` (make setup installs it)"


# ----------------------------------------------------------------------------- the space
def _fingerprint(part: Partition) -> tuple:
    """Identity of a partition: each subgraph's tag, backend and nodes (= per-node backend and tag)."""
    return tuple((sg.tag, sg.backend, sg.nodes) for sg in part.subgraphs)


def _why_unmeasurable(backend: str, device: Any, compilers: Mapping[str, Any] | None = None) -> str | None:
    """None when `backend` subgraphs can be compiled and timed on `device` (with hv.measure's
    `compilers=` overrides), else why not."""
    from hierviz.latency.compilers import get_compiler

    compiler = get_compiler(backend, dict(compilers) if compilers else None)
    if compiler is None:
        return f"no compiler is registered for {backend!r}"
    if compiler.needs_cuda and getattr(device, "type", str(device)) != "cuda":
        return f"{'TensorRT' if backend == 'tensorrt' else backend} needs an NVIDIA GPU (CUDA), measuring on {device}"
    try:
        return compiler.available(device)
    except TypeError:  # compilers whose check takes no device
        return compiler.available()


def _tune_base(base: Config, device: Any, compilers: Mapping[str, Any] | None = None) -> tuple[Config, list[str]]:
    """The Config trials start from: `base`, with TorchInductor allowed every op when `base`
    gives inductor no support of its own (the seed's default, no ops, would make it a no-op)
    and its priority restricted to the backends measurable here."""
    from hierviz import support

    notes = []
    if "inductor" not in (base.support or {}):
        sup = dict(base.support or {})
        sup["inductor"] = support.inductor()
        base = base.replace(support=sup)
        notes.append("inductor may take every op TorchInductor compiles (hv.support.inductor())")
    keep = tuple(b for b in base.priority if _why_unmeasurable(b, device, compilers) is None)
    dropped = [b for b in base.priority if b not in keep]
    for b in dropped:
        notes.append(f"{b} left out: {_why_unmeasurable(b, device, compilers)}")
    if not keep:
        keep = tuple(b for b in ("inductor",) if _why_unmeasurable(b, device) is None)
    if keep and keep != base.priority:
        base = _apply(base, {"priority": keep})
    return base, notes


def _apply(base: Config, changes: Mapping[str, Any]) -> Config:
    """`base.replace(**changes)`, leaving out of `support` the backends of our own that the new
    priority no longer names (a Config refuses support it would ignore)."""
    from hierviz.config import BUILTIN_BACKENDS, parse_priority

    changes = dict(changes)
    if "priority" in changes and "support" not in changes and base.support is not None:
        priority = parse_priority(changes["priority"])
        kept = {b: s for b, s in base.support.items() if b in priority or b in BUILTIN_BACKENDS}
        changes["support"] = kept or None
    return base.replace(**changes)


def _orders(backends: list[str]) -> list[tuple[str, ...]]:
    return [p for r in range(len(backends), 0, -1) for p in itertools.permutations(backends, r)]


def _sizes_changing(part: Partition) -> list[int]:
    """min_block_size values that give different partitions, one per outcome: the partition's
    own size for its outcome, the smallest size for the others (from Partition.recommend(),
    which re-partitions at each size)."""
    rec = part.recommend()
    own = part.config.min_block_size
    seen: dict[tuple, int] = {}
    for _, row in rec.sort_values("min_block_size").iterrows():
        key = tuple(row.drop("min_block_size").tolist())
        size = int(row["min_block_size"])
        if key not in seen or size == own:
            seen[key] = size
    return sorted(seen.values())


def _boundary_ops(part: Partition) -> list[str]:
    """Ops of accelerated compute nodes at subgraph boundaries (producing a subgraph's output
    or consuming its input), most frequent first."""
    from hierviz.opnames import qualname

    nodes = {n.name: n for n in part.graph.graph.nodes}
    counts: dict[str, int] = {}
    for sg in part.subgraphs:
        if not sg.is_acc:
            continue
        members = set(sg.nodes)
        edge = {t.name for t in sg.outputs if t.name in members}
        inputs = {t.name for t in sg.inputs}
        for name in sg.nodes:
            if any(a.name in inputs for a in nodes[name].all_input_nodes):
                edge.add(name)
        for name in edge:
            node = nodes[name]
            if node.op == "call_function" and "getitem" not in str(node.target):
                op = qualname(node.target)
                counts[op] = counts.get(op, 0) + 1
    return sorted(counts, key=lambda op: (-counts[op], op))


def _ops_changing(gm: Any, cfg: Config, part: Partition) -> list[str]:
    """Candidate torch_executed_ops: boundary ops first, then the other accelerated ops,
    keeping those whose forcing changes the partition into one no other op gives."""
    from hierviz.opnames import qualname

    nodes = {n.name: n for n in part.graph.graph.nodes}
    acc_ops: list[str] = []
    for sg in part.subgraphs:
        if sg.is_acc:
            for name in sg.nodes:
                n = nodes[name]
                if n.op == "call_function" and "getitem" not in str(n.target):
                    op = qualname(n.target)
                    if op not in acc_ops:
                        acc_ops.append(op)
    ranked = _boundary_ops(part) + sorted(op for op in acc_ops if op not in _boundary_ops(part))
    base_fp = _fingerprint(part)
    kept: list[str] = []
    seen = {base_fp}
    for op in ranked:
        try:
            forced = cached_partition(gm, cfg.replace(torch_executed_ops=cfg.torch_executed_ops | {op}))
        except HiervizError:
            continue
        fp = _fingerprint(forced)
        if fp not in seen:
            seen.add(fp)
            kept.append(op)
        if len(kept) >= MAX_OPS:
            break
    return kept


def default_space(model: Any, example_inputs: Any = None, *, base: Config | Mapping | None = None,
                  device: Any = None, compilers: Mapping[str, Any] | None = None) -> dict[str, list]:
    """The space `hv.tune` searches when none is given, derived from the graph:

    - `priority`: every order of the backends that can be measured on `device` (TensorRT
      only with a CUDA GPU), from the base priority and inductor;
    - `min_block_size`: the sizes that change the partition (from `Partition.recommend()`),
      for each of those priorities, and the base size;
    - `torch_executed_ops`: none, or one more op forced to PyTorch, among the ops at subgraph
      boundaries and the other accelerated ops whose forcing changes the partition.
    """
    from hierviz.latency.plan import resolve_device

    dev = resolve_device(device)
    base_cfg, _ = _tune_base(make_config(base), dev, compilers)
    gm = graph_of(model, example_inputs)
    backends = list(dict.fromkeys([*base_cfg.priority, "inductor", "tensorrt"]))
    backends = [b for b in backends if _why_unmeasurable(b, dev, compilers) is None]
    if not backends:
        raise MeasureError(f"no backend can be measured on {dev}: tensorrt needs a CUDA GPU and inductor "
                           "is not usable here; give space= with backends that are.")
    priorities = _orders(backends)
    first = _apply(base_cfg, {"priority": priorities[0]})
    ops = _ops_changing(gm, first, cached_partition(gm, first))
    forced = [base_cfg.torch_executed_ops] + [base_cfg.torch_executed_ops | {op} for op in ops]
    sizes = {base_cfg.min_block_size}
    for p in priorities:  # sizes that change the partition for some priority and forced op
        for f in forced:
            sizes.update(_sizes_changing(cached_partition(gm, _apply(base_cfg, {"priority": p,
                                                                                "torch_executed_ops": f}))))
    sizes_list = sorted(sizes)
    if len(sizes_list) > MAX_SIZES:  # keep the base size, the smallest and an even spread
        step = (len(sizes_list) - 1) / (MAX_SIZES - 1)
        picked = {sizes_list[round(i * step)] for i in range(MAX_SIZES)} | {base_cfg.min_block_size}
        sizes_list = sorted(picked)
    space: dict[str, list] = {"priority": priorities, "min_block_size": sizes_list}
    if ops:
        space["torch_executed_ops"] = forced
    return space


# ----------------------------------------------------------------------------- the result
@dataclass
class TuneResult:
    """What `hv.tune` found.

    `best` is the fastest setting whose outputs match the model's (None when no trial
    qualified); `best_measurement` its full `hv.Measurement` (per-subgraph times, baseline);
    `trials` one row per trial (the config's fields, subgraph counts, latency, `fallbacks`,
    `status`, `duplicate_of`); `default` the setting tuning started from; `baselines` the
    model's own times (`eager_ms`: your nn.Module run eagerly; `graph_eager_ms`: the captured
    graph run eagerly; `torch_compile_ms` when asked for).
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
    def best_trial(self) -> int | None:
        ok = self.trials[self.trials["status"] == "measured"]
        ok = ok[ok["outputs_match"].astype("boolean").fillna(False) & (ok["fallbacks"].fillna(0) == 0)]
        if not len(ok):
            return None
        return int(ok.sort_values(["median_ms", "trial"]).iloc[0]["trial"])

    @property
    def default_trial(self) -> int | None:
        return 0 if len(self.trials) else None

    @property
    def duplicates(self) -> int:
        return int((self.trials["status"] == "duplicate").sum())

    def partition(self) -> Partition:
        """The best setting's partition (hv.ConfigError when no trial qualified)."""
        if self.best is None:
            raise ConfigError("no trial qualified as best (see .trials['status'] and ['error']).")
        return cached_partition(self.graph, self.best)

    # -------------------------------------------------------------- display
    def _line(self, label: str, trial: int | None) -> str:
        row = self._row(trial)
        if row is None:
            return f"  {label:<8} -"
        text = f"{row['priority']} mbs={row['min_block_size']}"
        if row["torch_executed_ops"]:
            text += " torch=" + ",".join(o.replace("torch.ops.aten.", "") for o in str(row["torch_executed_ops"]).split(","))
        ms = row.get("median_ms")
        figure = "not measured" if ms is None or (isinstance(ms, float) and math.isnan(ms)) else f"{_ms(ms)} ms"
        speed = row.get("speedup")
        if speed is not None and not (isinstance(speed, float) and math.isnan(speed)):
            figure += f", {speed:.2f}x vs eager"
        status = row["status"]
        if status != "measured":
            figure += f" ({status}{': ' + str(row['error'])[:80] if isinstance(row['error'], str) else ''})"
        return f"  {label:<8} {text:<40} {figure}  [trial {trial}]"

    def __repr__(self) -> str:
        counts = self.trials["status"].value_counts().to_dict()
        parts = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts.get(s))
        lines = [f"<hv.tune: {len(self.trials)} trials ({parts}) in {self.seconds:.1f} s on {self.device}, "
                 f"stopped by {self.stopped}"]
        lines.append(self._line("best", self.best_trial) if self.best is not None else "  best     none: no trial "
                     "measured with matching outputs")
        lines.append(self._line("default", self.default_trial))
        b = self.baselines
        base = [f"eager nn.Module {_ms(b.get('eager_ms'))} ms", f"captured graph eager {_ms(b.get('graph_eager_ms'))} ms"]
        if "torch_compile_ms" in b:
            base.append(f"torch.compile {_ms(b.get('torch_compile_ms'))} ms")
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
        default setting, eager model and torch.compile as horizontal lines. Returns the Axes."""
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
        refs = [("eager nn.Module", self.baselines.get("eager_ms"), "black"),
                ("torch.compile", self.baselines.get("torch_compile_ms"), "tab:brown")]
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


# ----------------------------------------------------------------------------- one trial
@dataclass
class _Outcome:
    status: str
    quick: Any = None
    full: Any = None
    error: str | None = None
    seconds: float = 0.0


def _measure_trial(part: Partition, example_inputs: Any, device: Any, options: Mapping[str, Any],
                   prune: Any = None) -> _Outcome:
    """Measure one partition: a quick timing (checked against eager), `prune(median_ms)` asked
    whether to stop there, then the full timing. Never raises for a HiervizError."""
    from hierviz.latency import measure

    start = time.perf_counter()
    quick_opts = {**options, **QUICK, "check": True, "baseline": False, "per_subgraph": False}
    full_opts = {**FULL, **options, "check": False, "baseline": False, "per_subgraph": False}
    if "iters" in options:
        quick_opts["iters"] = max(1, min(QUICK["iters"], int(options["iters"])))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quick = measure(part, example_inputs, device=device, **quick_opts)
            if quick.outputs_match is False:
                return _Outcome("mismatch", quick, None, "; ".join(w for w in quick.warnings if "differ" in w)[:300],
                                time.perf_counter() - start)
            if quick.fallbacks:
                return _Outcome("fallback", quick, None, f"{len(quick.fallbacks)} subgraph(s) fell back to eager: "
                                f"{', '.join(quick.fallbacks)[:200]}", time.perf_counter() - start)
            if prune is not None and prune(quick.median_ms):
                return _Outcome("pruned", quick, None, None, time.perf_counter() - start)
            full = measure(part, example_inputs, device=device, **full_opts)
    except HiervizError as exc:
        return _Outcome("failed", None, None, str(exc), time.perf_counter() - start)
    return _Outcome("measured", quick, full, None, time.perf_counter() - start)


def _remote_trial(gm: Any, example_inputs: Any, config: Config, device: Any, options: Mapping[str, Any]) -> _Outcome:
    """A trial as a Ray task: partition the worker's copy of the graph, measure (no pruning)."""
    try:
        part = cached_partition(gm, config)
    except HiervizError as exc:
        return _Outcome("invalid", error=str(exc))
    return _measure_trial(part, example_inputs, device, options)


# ----------------------------------------------------------------------------- the search
class _Search:
    """The space as Optuna categorical choices (labels), mapped back to Config values."""

    def __init__(self, space: Mapping[str, Any], default: Config) -> None:
        expand_grid(space)  # checks field names and values the same way hv.sweep does
        self.fields: dict[str, list[tuple[Any, Any]]] = {}
        for name, values in space.items():
            pairs: list[tuple[Any, Any]] = []
            for combo in expand_grid({name: values}):
                raw = combo[name]
                label = self._label(name, raw)
                if label not in [p[0] for p in pairs]:
                    pairs.append((label, raw))
            current = self._label(name, getattr(default, name))
            if current not in [p[0] for p in pairs]:
                pairs.insert(0, (current, getattr(default, name)))
            self.fields[name] = pairs

    @staticmethod
    def _label(name: str, value: Any) -> Any:
        if name == "min_block_size":
            try:
                return int(value)
            except (TypeError, ValueError):
                return str(value)
        if name in ("require_full_compilation", "skip_fusion"):
            return bool(value)
        if name == "torch_executed_ops":
            from hierviz.opnames import normalize_all

            try:
                ops = normalize_all(value if not isinstance(value, str) else
                                    [v for v in value.split(",") if v.strip()])
            except HiervizError:
                return str(value)
            return ",".join(sorted(ops)) or "(none)"
        if name == "support" and isinstance(value, Mapping):
            return columns.format_field("support", value) + f" #{id(value) % 9973}"
        text = columns.format_field(name, value)
        return text if isinstance(text, (str, int, float, bool)) or text is None else str(text)

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.fields.values())

    def params_of(self, config: Config) -> dict[str, Any]:
        return {name: self._label(name, getattr(config, name)) for name in self.fields}

    def untried(self, tried: set[tuple], rng: random.Random) -> dict[str, Any] | None:
        """Params of a setting not in `tried` (chosen with `rng`), or None when all were tried."""
        names = list(self.fields)
        if self.size <= 4096:
            left = [dict(zip(names, combo)) for combo in itertools.product(*([p[0] for p in self.fields[n]] for n in names))]
            left = [p for p in left if _key(p) not in tried]
            return rng.choice(left) if left else None
        for _ in range(1000):
            params = {n: rng.choice(self.fields[n])[0] for n in names}
            if _key(params) not in tried:
                return params
        return None

    def suggest(self, trial: Any) -> dict[str, Any]:
        """Config changes for an Optuna trial (its params are the labels)."""
        changes = {}
        for name, pairs in self.fields.items():
            label = trial.suggest_categorical(name, [p[0] for p in pairs])
            changes[name] = dict(pairs)[label]
        return changes


def _optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise ConfigError(f"hv.tune needs Optuna, which is not installed: {OPTUNA_HINT}.") from None
    return optuna


@contextlib.contextmanager
def _quiet_optuna(optuna: Any) -> Any:
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def _check_args(budget: Any, timeout: Any) -> None:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ConfigError(f"budget must be a positive number of trials, e.g. budget=20, not {budget!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise ConfigError(f"timeout must be a positive number of seconds (or None), not {timeout!r}")


def tune(model: Any, example_inputs: Any = None, space: Mapping[str, Iterable[Any]] | None = None, *,
         base: Config | Mapping[str, Any] | None = None, budget: int = DEFAULT_BUDGET,
         timeout: float | None = None, device: Any = None, executor: Any = None, seed: int = 0,
         measure: Mapping[str, Any] | None = None, torch_compile: bool = False, pruning: bool = True,
         progress: bool = True) -> TuneResult:
    """Find the fastest partition setting for `model` by measuring it.

    - `space` maps Config fields to candidate values, like `hv.sweep`'s grid (settings as
      text work too: "inductor>tensorrt"); `base` is the Config they modify. By default the
      space comes from the graph (see `default_space`).
    - `budget`: at most this many trials (distinct settings); `timeout`: seconds after which
      no new trial starts. The search stops early when every setting has been tried.
    - `device`: "cuda" when a GPU is there, else "cpu"; TensorRT needs CUDA.
    - `measure`: `hv.measure` options for the full timing (default warmup 3, iters 30).
    - `torch_compile`: also time the whole model through `torch.compile`, for comparison.
    - `pruning`: stop trials whose first few timed calls are slower than the median trial.
    - `executor`: None (one trial at a time here), or "ray" / a Ray address to run trials as
      Ray tasks.
    - `seed`: the TPE sampler's seed: the same seed, model and space propose the same trials.

    Returns a TuneResult: `.best`, `.best_measurement`, `.trials`, `.plot()`.
    """
    from hierviz.explorer.ray_executor import is_ray
    from hierviz.latency import measure as hv_measure
    from hierviz.latency.baselines import time_model
    from hierviz.latency.plan import resolve_device

    _check_args(budget, timeout)
    if executor is not None and not is_ray(executor):
        raise ConfigError("hv.tune measures one trial at a time in this process (parallel timings would disturb "
                          "each other); executor may be None, or 'ray' / a Ray address to run trials on Ray workers.")
    if measure is not None and not isinstance(measure, Mapping):
        raise ConfigError("measure must be a dict of hv.measure options, e.g. {'iters': 50}.")
    options = dict(measure or {})
    for key in ("check", "baseline", "per_subgraph", "device"):
        if key in options:
            raise ConfigError(f"measure={{{key!r}: ...}} is set by hv.tune itself; leave it out.")
    optuna = _optuna()
    dev = resolve_device(device)
    started = time.perf_counter()
    gm = graph_of(model, example_inputs)
    capture_s = time.perf_counter() - started

    measure_s = 0.0
    default, notes = _tune_base(make_config(base), dev, options.get("compilers"))
    if space is None:
        space = default_space(gm, example_inputs, base=default, device=dev, compilers=options.get("compilers"))
        notes.append("space derived from the graph: " + ", ".join(f"{k} ({len(v)})" for k, v in space.items()))
    search = _Search(space, default)

    # baselines: the model itself, timed once
    t0 = time.perf_counter()
    timing = {"warmup": options.get("warmup", FULL["warmup"]), "iters": options.get("iters", FULL["iters"])}
    baselines: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from hierviz.capturing import source_of, updates_of
        from hierviz.latency.baselines import runnable_model

        timed = model if runnable_model(model) is not None else (source_of(gm) or model)  # the nn.Module
        own = time_model(timed, example_inputs, dev, torch_compile=torch_compile, updates=updates_of(gm), **timing)
    for name, b in own.items():
        baselines[f"{name}_ms"] = b.median_ms
        if b.error:
            notes.append(f"{name} baseline: {b.error}")
        if name == "torch_compile" and b.stats is not None:
            baselines["torch_compile_s"] = round(b.compile_s, 3)
    baselines.setdefault("eager_ms", None)
    measure_s += time.perf_counter() - t0

    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(8, max(2, budget // 3)))
    pruner = optuna.pruners.MedianPruner(n_startup_trials=3) if pruning else optuna.pruners.NopPruner()
    with _quiet_optuna(optuna):
        study = optuna.create_study(direction="minimize", sampler=sampler, pruner=pruner)
    study.enqueue_trial(search.params_of(default))

    rows: list[dict[str, Any]] = []
    by_params: dict[tuple, int] = {}
    by_print: dict[tuple, int] = {}
    outcomes: dict[int, _Outcome] = {}
    configs: dict[int, Config] = {}
    stopped = "budget"
    rng = random.Random(seed)

    from tqdm.auto import tqdm

    bar = tqdm(total=min(budget, search.size), desc="hv.tune", unit="trial", disable=not progress, leave=False)
    runner = None
    if executor is not None:
        from hierviz.explorer.ray_executor import RayRunner

        runner = RayRunner(executor, gm, example_inputs)
        notes.append(f"trials ran as Ray tasks ({runner.resources}); no pruning")

    def value_of(k: int) -> float | None:
        o = outcomes.get(k)
        if o is None:
            return None
        m = o.full or o.quick
        if o.status in ("measured", "pruned") and m is not None:
            return float(m.median_ms)
        return None

    def new_row(k: int, cfg: Config | None, changes: dict[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = {"trial": k}
        row.update(columns.config_columns(cfg if cfg is not None else default))
        if cfg is None:
            row.update({n: columns.format_field(n, v) for n, v in changes.items()})
        return row

    def fill(row: dict[str, Any], o: _Outcome) -> None:
        m = o.full or o.quick
        if m is not None:
            row.update(columns.latency_columns(m))
            first = o.quick if o.quick is not None else m  # it compiled and checked; the full run reuses it
            for name in ("outputs_match", "max_abs_error", "compile_s", "cache_hits", "cache_misses"):
                row[name] = getattr(first, name)
            row["fallbacks"] = len(m.fallbacks)
            eager = baselines.get("eager_ms")
            row["speedup"] = eager / m.median_ms if eager and m.median_ms else None
        row["status"] = o.status
        row["error"] = o.error
        row["seconds"] = round(o.seconds, 3)

    def tell(trial: Any, k: int) -> None:
        o = outcomes[k]
        v = value_of(k)
        with _quiet_optuna(optuna):
            if o.status == "pruned":
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            elif v is None or o.status != "measured":
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, v)

    pending: dict[Any, tuple[int, Any]] = {}   # Ray ref -> (row index, optuna trial)
    waiting: dict[int, list[tuple[int, Any]]] = {}  # duplicates of in-flight trials
    try:
        while True:
            elapsed = time.perf_counter() - started
            can_start = len(rows) < budget and len(by_params) < search.size
            if timeout is not None and elapsed > timeout and can_start and rows:  # the default always runs
                stopped, can_start = "timeout", False
            if not can_start and not pending:
                if len(by_params) >= search.size and len(rows) < budget:
                    stopped = "space exhausted"
                break
            slots = runner.slots if runner is not None else 1
            if can_start and len(pending) < slots:
                with _quiet_optuna(optuna):
                    trial = study.ask()
                changes = search.suggest(trial)
                key = _key(trial.params)
                if key in by_params:  # TPE proposed a setting already tried: tell it the same answer,
                    earlier = by_params[key]  # and have it try one not yet tried next
                    if earlier in outcomes:
                        tell(trial, earlier)
                    else:
                        with _quiet_optuna(optuna):
                            study.tell(trial, state=optuna.trial.TrialState.FAIL)
                    untried = search.untried(set(by_params), rng)
                    if untried is None:
                        stopped = "space exhausted"
                        if not pending:
                            break
                        continue
                    study.enqueue_trial(untried)
                    continue
                k = len(rows)
                by_params[key] = k
                try:
                    cfg = _apply(default, changes)
                    configs[k] = cfg
                    part = cached_partition(gm, cfg)
                except HiervizError as exc:
                    row = new_row(k, None, changes)
                    outcomes[k] = _Outcome("invalid", error=str(exc))
                    fill(row, outcomes[k])
                    rows.append(row)
                    tell(trial, k)
                    bar.update(1)
                    continue
                row = new_row(k, cfg, changes)
                row.update(columns.stat_columns(part))
                rows.append(row)
                fp = _fingerprint(part)
                if fp in by_print:
                    source = by_print[fp]
                    row["duplicate_of"] = source
                    if source in outcomes:
                        _copy_outcome(outcomes, k, source)
                        fill(row, outcomes[k])
                        tell(trial, k)
                        bar.update(1)
                    else:
                        waiting.setdefault(source, []).append((k, trial))
                    continue
                by_print[fp] = k
                if runner is None:
                    t1 = time.perf_counter()

                    def prune(ms: float, trial: Any = trial) -> bool:
                        trial.report(ms, step=0)
                        return bool(pruning and trial.should_prune())

                    outcomes[k] = _measure_trial(part, example_inputs, dev, options, prune)
                    measure_s += time.perf_counter() - t1
                    fill(row, outcomes[k])
                    tell(trial, k)
                    bar.update(1)
                    bar.set_postfix_str(_best_text(rows))
                else:
                    ref = runner.submit(_remote_trial, cfg, device, options)
                    pending[ref] = (k, trial)
                continue
            # Ray: wait for one trial to finish
            t1 = time.perf_counter()
            ref, result, error = next(runner.wait(list(pending)))
            measure_s += time.perf_counter() - t1
            k, trial = pending.pop(ref)
            outcomes[k] = result if error is None else _Outcome("failed", error=_error_text(error))
            fill(rows[k], outcomes[k])
            tell(trial, k)
            bar.update(1)
            for dup, dup_trial in waiting.pop(k, []):
                _copy_outcome(outcomes, dup, k)
                fill(rows[dup], outcomes[dup])
                tell(dup_trial, dup)
                bar.update(1)
            bar.set_postfix_str(_best_text(rows))
    finally:
        bar.close()

    extra_tail = ["status", "duplicate_of", "seconds"]
    if "fallbacks" not in columns.LATENCY_COLUMNS:
        extra_tail.insert(0, "fallbacks")
    trials = columns.frame(rows, latency=True, extra_head=("trial",), extra_tail=extra_tail)
    trials["duplicate_of"] = trials["duplicate_of"].astype("Int64")
    trials["fallbacks"] = trials["fallbacks"].astype("Int64")

    result = TuneResult(best=None, best_measurement=None, trials=trials, default=default, baselines=baselines,
                        space={k: [v for _, v in pairs] for k, pairs in search.fields.items()}, device=str(dev),
                        notes=notes, stopped=stopped, study=study, capture_s=capture_s, graph=gm)
    best = result.best_trial
    if best is not None:
        result.best = configs[best]
        t1 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                result.best_measurement = hv_measure(cached_partition(gm, result.best), example_inputs, device=dev,
                                                     **{**FULL, **options})
            except HiervizError as exc:
                notes.append(f"the best setting's final measurement failed: {exc}")
        measure_s += time.perf_counter() - t1
    baselines["graph_eager_ms"] = getattr(result.best_measurement, "graph_eager_ms", None)
    result.measure_s = measure_s
    result.seconds = time.perf_counter() - started
    return result


def _copy_outcome(outcomes: dict[int, _Outcome], k: int, source: int) -> None:
    o = outcomes[source]
    outcomes[k] = _Outcome("duplicate" if o.status in ("measured", "pruned") else o.status, o.quick, o.full,
                           o.error, 0.0)


def _error_text(error: BaseException) -> str:
    text = str(error).strip()
    return text if isinstance(error, HiervizError) or "Ray worker" in text else f"{type(error).__name__}: {text}"


def _best_text(rows: list[dict[str, Any]]) -> str:
    ok = [r["median_ms"] for r in rows if r.get("status") == "measured" and r.get("median_ms") is not None
          and r.get("outputs_match") is not False]
    return f"best {min(ok):.3f} ms" if ok else ""


def _key(params: Mapping[str, Any]) -> tuple:
    return tuple(sorted((n, str(v)) for n, v in params.items()))


__all__ = ["tune", "TuneResult", "default_space"]
