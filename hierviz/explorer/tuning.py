"""hv.tune: search partition settings by measured latency (Optuna's TPE sampler), and say
which is fastest, against the default setting and the model run eagerly.

Each trial picks a value for every field of the space, partitions (cached), and measures
the split model. Trials whose partition equals an earlier one's (same subgraphs: per-node
backends and tags) are not measured again: they reuse its figures and say so
(`status="duplicate"`, `duplicate_of`). Measuring is done in two steps: a few timed calls
first, reported to Optuna's pruner (median rule), which stops slow trials there
(`status="pruned"`), then the full timing. A trial whose outputs differ from the model's,
in which a subgraph fell back to eager because its backend failed, or whose partition
accelerates nothing (`status="nothing accelerated"`: not measured), is never `best`; nor is
a setting whose speed-up over the eager nn.Module has a 95% interval reaching down to 1.0
(see tune_result.pick_best): then the default setting is `best`, with the verdict "no setting
beat eager nn.Module here".

With `executor="ray"` (or a Ray address) trials run as Ray tasks, several at a time
(TPE proposes a batch while earlier ones run; no pruning there). The default space is
tune_space.py, the result tune_result.py. This module is still over 400 lines because the
search loop is one function: the trials' rows, Optuna's ask/tell, duplicates waiting for an
in-flight trial and the Ray results all share its state, and splitting it would pass that
state around instead.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
import time
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from hierviz.capturing import source_of, updates_of
from hierviz.config import Config
from hierviz.errors import ConfigError, HiervizError
from hierviz.explorer import columns
from hierviz.explorer.cache import cached_partition
from hierviz.explorer.sweep import expand_grid
from hierviz.explorer.tune_result import NO_WINNER, TuneResult, pick_best
from hierviz.latency.result import ci_text
from hierviz.latency.timing import speedup_interval
from hierviz.explorer.tune_space import apply_changes, default_space, fingerprint, tune_base
from hierviz.opnames import normalize_all
from hierviz.partitioner import Partition, graph_of, make_config

DEFAULT_BUDGET = 20
QUICK = {"warmup": 1, "iters": 5}     # the first, prunable timing
FULL = {"warmup": 3, "iters": 30}     # the full timing of trials that are not pruned
OPTUNA_HINT = "install Optuna with `pip install 'hierviz[tune]'` (make setup installs it)"


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
    from hierviz.latency.numerics import locate_mismatch

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
                where = locate_mismatch(part, example_inputs, quick, **quick_opts)
                text = "; ".join(w for w in quick.warnings if "differ" in w)[:300]
                return _Outcome("mismatch", quick, None, (f"the error starts in {where}; " if where else "") + text,
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


def _check_args(budget: Any, timeout: Any, seed: Any = 0) -> None:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ConfigError(f"budget must be a positive number of trials, e.g. budget=20, not {budget!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or timeout <= 0):
        raise ConfigError(f"timeout must be a positive number of seconds (or None), not {timeout!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ConfigError(f"seed must be an int from 0 to 2**32 - 1, not {seed!r:.40}")


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
    from hierviz.latency.baselines import time_model
    from hierviz.latency.plan import resolve_device

    _check_args(budget, timeout, seed)
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
    default, notes = tune_base(make_config(base), dev, options.get("compilers"))
    if space is None:
        space = default_space(gm, example_inputs, base=default, device=dev, compilers=options.get("compilers"))
        notes.append("space derived from the graph: " + ", ".join(f"{k} ({len(v)})" for k, v in space.items()))
    search = _Search(space, default)

    # baselines: the model itself, timed once; what torch_tensorrt.compile would run (its fast
    # partition) and torch.compile, the two things a user would pick instead, where TensorRT times
    from hierviz.explorer.engines import compile_baseline

    t0 = time.perf_counter()
    compile_ms, why = compile_baseline(gm, make_config(base), example_inputs, dev,
                                       {**FULL, **options, "check": False, "baseline": False,
                                        "per_subgraph": False}, options.get("compilers"))
    if why:
        notes.append(why)
    else:
        torch_compile = True
    timing = {"warmup": options.get("warmup", FULL["warmup"]), "iters": options.get("iters", FULL["iters"])}
    baselines: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from hierviz.latency.baselines import runnable_model

        timed = model if runnable_model(model) is not None else (source_of(gm) or model)  # the nn.Module
        own = time_model(timed, example_inputs, dev, torch_compile=torch_compile, updates=updates_of(gm), **timing)
    eager_stats = own["eager"].stats if own.get("eager") is not None else None
    against = "eager nn.Module"
    if eager_stats is None:  # no nn.Module to run (a bare graph): the captured graph eagerly is the baseline
        eager_stats = _graph_eager(gm, example_inputs, dev, timing)
        against = "the captured graph run eagerly"
        baselines["graph_eager_ms"] = eager_stats.median_ms if eager_stats is not None else None
    for name, b in own.items():
        baselines[f"{name}_ms"] = b.median_ms
        if b.error:
            notes.append(f"{name} baseline: {b.error}")
        if name == "torch_compile" and b.stats is not None:
            baselines["torch_compile_s"] = round(b.compile_s, 3)
    baselines.setdefault("eager_ms", None)
    baselines["compile_ms"] = compile_ms
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
            eager = eager_stats.median_ms if eager_stats is not None else None
            row["speedup"] = eager / m.median_ms if eager and m.median_ms else None
            samples = getattr(getattr(m, "timing", None), "samples_ms", None)
            row["speedup_ci"] = speedup_interval(eager_stats.samples_ms, samples) \
                if eager_stats is not None and samples else None
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
                    cfg = apply_changes(default, changes)
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
                if not any(sg.is_acc for sg in part.subgraphs):  # all PyTorch: nothing to compile or crown
                    outcomes[k] = _Outcome("nothing accelerated", error="no subgraph is accelerated: every node "
                                           "runs in PyTorch, as in the eager model")
                    fill(row, outcomes[k])
                    tell(trial, k)
                    bar.update(1)
                    continue
                fp = fingerprint(part)
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

    trials = columns.frame(rows, latency=True, extra_head=("trial",), extra_tail=("status", "duplicate_of", "seconds"))
    trials["duplicate_of"] = trials["duplicate_of"].astype("Int64")
    trials["fallbacks"] = trials["fallbacks"].astype("Int64")

    result = TuneResult(best=None, best_measurement=None, trials=trials, default=default, baselines=baselines,
                        space={k: [v for _, v in pairs] for k, pairs in search.fields.items()}, device=str(dev),
                        notes=notes, stopped=stopped, study=study, capture_s=capture_s, graph=gm)
    crowned, result.fastest_trial = pick_best(trials)
    t1 = time.perf_counter()
    if crowned is not None:
        m = _final_measure(gm, configs[crowned], example_inputs, dev, options, notes)
        ci = getattr(m, "speedup_ci", None)
        if m is not None and (ci is None or ci[0] > 1.0 or getattr(m, "baseline_ms", None) is None):
            result.best, result.best_trial, result.best_measurement = configs[crowned], crowned, m
            result.beat_eager = True
            result.verdict = (f"trial {crowned} beats {against}: {trials.loc[trials['trial'] == crowned, 'speedup'].iloc[0]:.2f}x "
                              f"({ci_text(trials.loc[trials['trial'] == crowned, 'speedup_ci'].iloc[0])})")
        else:
            notes.append(f"trial {crowned} looked faster than {against} but not when measured again"
                         + (f" ({ci_text(ci)})" if ci else ""))
            crowned = None
    if crowned is None:
        result.verdict = NO_WINNER if against == "eager nn.Module" else f"no setting beat {against} here"
        default_row = trials[trials["trial"] == 0]
        if len(default_row) and default_row["status"].iloc[0] != "mismatch":
            result.best, result.best_trial = default, 0
            result.verdict += "; best is the default setting"
            if default_row["status"].iloc[0] not in ("measured", "nothing accelerated") or \
                    default_row["outputs_match"].iloc[0] is False:
                result.verdict += f" (its own trial: {default_row['status'].iloc[0]})"
            result.best_measurement = _final_measure(gm, default, example_inputs, dev, options, notes)
    measure_s += time.perf_counter() - t1
    baselines["graph_eager_ms"] = getattr(result.best_measurement, "graph_eager_ms", None) or \
        baselines.get("graph_eager_ms")
    result.measure_s = measure_s
    result.seconds = time.perf_counter() - started
    return result


def _final_measure(gm: Any, config: Config, example_inputs: Any, device: Any, options: Mapping[str, Any],
                   notes: list[str]) -> Any:
    """The full hv.measure of `config` (its baseline timed in the same call), or None with a note."""
    from hierviz.latency import measure as hv_measure

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return hv_measure(cached_partition(gm, config), example_inputs, device=device, **{**FULL, **options})
        except HiervizError as exc:
            notes.append(f"the final measurement of {config.label()} failed: {exc}")
            return None


def _graph_eager(gm: Any, example_inputs: Any, device: Any, timing: Mapping[str, int]) -> Any:
    """Stats of the captured graph run eagerly (the baseline when there is no nn.Module), or None."""
    import torch
    from torch.utils._pytree import tree_leaves

    from hierviz.latency.lift import lift
    from hierviz.latency.timing import time_fn

    try:
        base = lift(gm, device)
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in tree_leaves(example_inputs)]
        with torch.no_grad():
            return time_fn(lambda: base.gm(*inputs, *base.weights), device, warmup=max(1, timing["warmup"]),
                           iters=timing["iters"])
    except Exception:  # noqa: BLE001 - without a baseline no setting is crowned, which the verdict says
        return None


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
