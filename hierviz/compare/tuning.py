"""hv.tune: search partition settings by measured latency (Optuna's TPE sampler), and say
which is fastest, against the default setting and eager PyTorch (the model run eagerly).

Each trial picks a value for every field of the space, partitions (cached), and measures
the split model. Trials whose partition equals an earlier one's (same subgraphs: per-node
backends and tags) are not measured again: they reuse its figures and say so
(`status="duplicate"`, `duplicate_of`). Measuring is done in two steps: a few timed calls
first, reported to Optuna's pruner (median rule), which stops slow trials there
(`status="pruned"`), then the full timing. A trial whose outputs differ from the model's,
in which a subgraph fell back to eager because its backend failed, or whose partition
accelerates nothing (`status="nothing accelerated"`: not measured), is never `best`; nor is
a setting whose speed-up over eager PyTorch (your nn.Module) is not claimed by its 95% interval (narrow
and clear of 1.0: hierviz.latency.speedup_claim; see tune_result.pick_best): then the default
setting is `best`, with the verdict "no setting beat eager PyTorch (your nn.Module) here"; a bare
graph's search is against eager PyTorch (the captured graph) instead. Where the default
setting has TensorRT and TensorRT cannot be timed here (no CUDA GPU), every setting searched
keeps TensorRT's engines; one that changes them is not measured (`status="changes tensorrt"`),
and the verdict says what was not timed (tensorrt_kept.py).

With `executor="ray"` (or a Ray address) trials run as Ray tasks, several at a time
(TPE proposes a batch while earlier ones run; no pruning there). The default space is
tune_space.py, measuring a trial tune_trial.py, the space as Optuna's choices optuna_space.py,
the result tune_result.py, its arguments' check tune_options.py and its verdict tune_verdict.py.
One call is a `_TuneRun`: its state (the trials'
rows, Optuna's study, duplicates waiting for an in-flight trial, the Ray tasks) lives on the
object, and each method does one step: time the baselines, start a trial, collect a Ray
result, crown the best.
"""

from __future__ import annotations

import random
import time
import warnings
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from torch.fx import GraphModule

from hierviz.capturing.aten_capture import source_of, updates_of
from hierviz.capturing.target_device import DEFAULT_TARGET, check_target_device, target_of
from hierviz.settings.config import Config
from hierviz.errors import ConfigError, HiervizError, checked_arguments
from hierviz.compare import columns
from hierviz.compare.rows import partition_of
from hierviz.compare.engine_comparison import compile_baseline
from hierviz.compare.grid import check_grid
from hierviz.compare.ray_executor import RayRunner, WorkerDied, is_ray
from hierviz.compare.optuna_space import SearchSpace, load_optuna, params_key, quiet_optuna
from hierviz.compare.tune_options import check_tune_options
from hierviz.compare.tensorrt_kept import STATUS as KEPT_STATUS, KeptTensorRT, own_fallbacks
from hierviz.compare.tune_result import TuneResult, pick_best
from hierviz.latency.baseline_names import EAGER_MODULE, GRAPH_EAGER
from hierviz.compare.tune_space import apply_changes, default_space, fingerprint, tune_base
from hierviz.compare.tune_storage import check_setup, check_storage, finished, load_row, open_study, save_row
from hierviz.compare.tune_verdict import judge
from hierviz.compare.tune_trial import (Outcome, copy_outcome, final_measure, graph_eager, measure_trial,
                                        remote_trial, timing_only)
from hierviz.latency.baselines import runnable_model, time_model
from hierviz.latency.compiling.compile_plan import resolve_device
from hierviz.latency.measurement import ci_text, verdict, wide_baseline_note
from hierviz.latency.speedup_claim import clear_gain
from hierviz.latency.timing import speedup_interval
from hierviz.partitioner import MultiGraphPartition, graph_of, make_config, runs_by_graph
from hierviz.partitioner.by_graph.per_graph import partitions_of

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.partition_result import Partition

DEFAULT_BUDGET = 20


@checked_arguments
def tune(model: Any, example_inputs: Any = None, space: Mapping[str, Iterable[Any]] | None = None, *,
         base: Config | Mapping[str, Any] | None = None, budget: int = DEFAULT_BUDGET,
         timeout: float | None = None, device: Any = None, executor: Any = None, seed: int = 0,
         measure: Mapping[str, Any] | None = None, torch_compile: bool = False, pruning: bool = True,
         progress: bool = True, storage: str | None = None, study_name: str | None = None,
         ir: str = "dynamo", target_device: str = DEFAULT_TARGET) -> TuneResult:
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
    - `storage`: an Optuna RDB storage URL (`"sqlite:///tune.db"`) keeping the trials as they
      finish, in the study `study_name` (default "hierviz-tune"): run the same tune again and
      it resumes, reusing the finished trials (not measured again; `budget` counts them too).
    - `ir`: "dynamo" (torch.export, the default) or "torch_compile": what
      torch.compile(model, backend="torch_tensorrt") runs, graph by graph: each trial partitions
      every dynamo graph with its setting (hv.partition(..., ir="torch_compile")) and times the
      whole model through torch.compile (a DynamoCapture or MultiGraphPartition given as `model`
      is taken as it is). Not with a Ray executor.
    - `target_device`: the device the model is lowered for when it is captured, as in
      hv.partition ("cuda", the default: as Torch-TensorRT lowers it on a CUDA GPU, on any
      machine; "cpu"); a graph or capture given is kept as it was lowered. `device` is where
      trials are timed.
    - Ctrl-C (KeyboardInterrupt) stops the search: the result covers the trials finished so
      far, with a note.

    Returns a TuneResult: `.best`, `.best_measurement`, `.trials`, `.plot()`.
    """
    check_storage(storage, study_name)
    run = _TuneRun(model, example_inputs, space, base=base, budget=budget, timeout=timeout, device=device,
                   executor=executor, seed=seed, measure=measure, pruning=pruning, ir=ir,
                   target_device=target_device)
    run.storage, run.study_name = storage, study_name
    run.open()  # before the baselines are timed: a stored study started with other settings is refused first
    run.time_baselines(torch_compile)
    run.search(progress)
    return run.result()


class _TuneRun:
    """One hv.tune call: its settings, the Optuna study, and the trials so far (rows, outcomes,
    settings seen, Ray tasks in flight); each method does one step of the search."""

    def __init__(self, model: Any, example_inputs: Any, space: Mapping[str, Iterable[Any]] | None, *,
                 base: Any, budget: Any, timeout: Any, device: Any, executor: Any, seed: Any, measure: Any,
                 pruning: bool, ir: str = "dynamo", target_device: str = DEFAULT_TARGET) -> None:
        self.by_graph = runs_by_graph(model, ir)
        check_target_device(target_device)
        if self.by_graph and executor is not None and is_ray(executor):
            raise ConfigError("hv.tune(ir='torch_compile') measures in this process: Ray tasks take one captured "
                              "graph, not a model's graphs; leave executor out, or use ir='dynamo'.")
        self.options = check_tune_options(budget, timeout, seed, executor, measure)
        if space is not None:  # every bad value at once, before capturing; the space keeps the values read
            space, _ = check_grid(space, make_config(base), name="space")
        self.optuna = load_optuna()
        self.model, self.example_inputs, self.budget, self.timeout = model, example_inputs, budget, timeout
        self.executor, self.device, self.pruning, self.seed = executor, device, pruning, seed
        self.dev = resolve_device(device)
        self.started = time.perf_counter()
        if self.by_graph:
            from hierviz.compare.sweep import graphs_of  # (pandas: loaded on first use)

            self.gm: Any = graphs_of(model, example_inputs, target_device)
        else:
            self.gm = graph_of(model, example_inputs, target_device=target_device)
        self.capture_s = time.perf_counter() - self.started
        # what the trials run on, for a stored study: a graph or capture given keeps the device it was lowered for
        traced = self.gm.traced_for if self.by_graph else target_of(self.gm)
        self.captured_with = {"ir": "torch_compile" if self.by_graph else "dynamo",
                              "target_device": traced[0] if traced else target_device}
        self.measure_s = 0.0
        compilers = self.options.compilers
        self.base_config = make_config(base)
        self.kept = KeptTensorRT.of(self.base_config, self.dev, compilers,
                                    lambda cfg: partitions_of(partition_of(self.gm, cfg)))
        if self.kept is not None and "on_error" not in (measure or {}):
            # its subgraphs run in eager PyTorch, the same in every setting timed
            self.options = self.options.replace(on_error="fallback")
        self.default, self.notes = tune_base(self.base_config, self.dev, compilers, self.kept)
        if self.by_graph:
            self.notes.append(f"graph by graph (ir='torch_compile'): each trial partitions all {len(self.gm.graphs)} "
                              f"graph(s) dynamo made ({len(self.gm.breaks)} graph break(s)) and times the whole model")
        if space is None:
            space = default_space(self.gm, example_inputs, base=self.default, device=self.dev, compilers=compilers)
            self.notes.append("space derived from the graph: " + ", ".join(f"{k} ({len(v)})" for k, v in space.items()))
        self.space = SearchSpace(space, self.default)
        self.rows: list[dict[str, Any]] = []
        self.by_params: dict[tuple, int] = {}
        self.by_print: dict[tuple, int] = {}
        self.outcomes: dict[int, Outcome] = {}
        self.configs: dict[int, Config] = {}
        self.pending: dict[Any, tuple[int, Any]] = {}   # Ray ref -> (row index, optuna trial)
        self.waiting: dict[int, list[tuple[int, Any]]] = {}  # duplicates of in-flight trials
        self.stopped = "budget"
        self.rng = random.Random(seed)
        self.storage: str | None = None
        self.study_name: str | None = None
        self.runner: Any = None
        self.bar: Any = None

    # ------------------------------------------------------------------ the baselines
    def time_baselines(self, torch_compile: bool) -> None:
        """The model itself, timed once: `baselines`, `eager_stats` and what trials are `against`;
        and where TensorRT times, what torch_tensorrt.compile would run (its fast partition) and
        torch.compile, the two things a user would pick instead."""
        t0 = time.perf_counter()
        compile_ms, why = compile_baseline(self.gm, self.base_config, self.example_inputs, self.dev,
                                           timing_only(self.options))
        if why:
            self.notes.append(why)
        else:
            torch_compile = True
        timing = {"warmup": self.options.warmup, "iters": self.options.iters}
        self.baselines: dict[str, Any] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, gm = self.model, self.gm
            timed = model if runnable_model(model) is not None else (source_of(gm) or model)  # the nn.Module
            own = time_model(timed, self.example_inputs, self.dev, torch_compile=torch_compile,
                             updates=updates_of(gm) if isinstance(gm, GraphModule) else ((), ()), **timing)
        self.eager_stats = own["eager"].stats if own.get("eager") is not None else None
        if self.eager_stats is not None and self.eager_stats.wide:
            self.notes.append(f"at the start, {wide_baseline_note(self.eager_stats)}; the trials' speed-ups use it, "
                              "the verdict uses the final measurement")
        self.against = EAGER_MODULE
        if self.eager_stats is None:  # no nn.Module to run (a bare graph): the captured graph eagerly is the baseline
            self.eager_stats = graph_eager(self.gm, self.example_inputs, self.dev, timing, self.notes)
            self.against = GRAPH_EAGER
            self.baselines["graph_eager_ms"] = self.eager_stats.median_ms if self.eager_stats is not None else None
        for name, b in own.items():
            self.baselines[f"{name}_ms"] = b.median_ms
            if b.error:
                self.notes.append(f"{EAGER_MODULE if name == 'eager' else name} baseline: {b.error}")
            if name == "torch_compile" and b.stats is not None:
                self.baselines["torch_compile_s"] = round(b.compile_s, 3)
        self.baselines.setdefault("eager_ms", None)
        self.baselines["compile_ms"] = compile_ms
        self.measure_s += time.perf_counter() - t0

    # ------------------------------------------------------------------ rows and Optuna
    def value_of(self, k: int) -> float | None:
        o = self.outcomes.get(k)
        if o is None:
            return None
        m = o.full or o.quick
        if o.status in ("measured", "pruned") and m is not None:
            return float(m.median_ms)
        return None

    def new_row(self, k: int, cfg: Config | None, changes: dict[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = {"trial": k}
        row.update(columns.config_columns(cfg if cfg is not None else self.default))
        if cfg is None:
            row.update({n: columns.format_field(n, v) for n, v in changes.items()})
        return row

    def fill(self, row: dict[str, Any], o: Outcome) -> None:
        m = o.full or o.quick
        if m is not None:
            planned = row.get("nothing_accelerated")
            row.update(columns.latency_columns(m))
            if self.kept is not None:  # TensorRT's subgraphs ran eagerly only because they cannot be timed here
                row["nothing_accelerated"] = planned
            first = o.quick if o.quick is not None else m  # it compiled and checked; the full run reuses it
            for name in ("outputs_match", "max_abs_error", "compile_s", "cache_hits", "cache_misses"):
                row[name] = getattr(first, name)
            row["fallbacks"] = len(own_fallbacks(m, self.kept is not None))
            eager = self.eager_stats.median_ms if self.eager_stats is not None else None
            row["speedup"] = eager / m.median_ms if eager and m.median_ms else None
            samples = getattr(getattr(m, "timing", None), "samples_ms", None)
            row["speedup_ci"] = speedup_interval(self.eager_stats.samples_ms, samples) \
                if self.eager_stats is not None and samples else None
            # with TensorRT kept and not timed, its subgraphs ran eagerly: no "nothing accelerated" lead
            row["verdict"] = verdict(row["speedup_ci"], self.against, wide=m.baseline_wide) \
                if self.kept is not None else m.verdict_for(row["speedup_ci"], self.against)
        row["status"] = o.status
        row["error"] = o.error
        row["seconds"] = round(o.seconds, 3)

    def tell(self, trial: Any, k: int) -> None:
        o = self.outcomes[k]
        v = self.value_of(k)
        optuna = self.optuna
        with quiet_optuna(optuna):
            if o.status == "pruned":
                self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            elif v is None or o.status != "measured":
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                self.study.tell(trial, v)

    def finish(self, trial: Any, k: int, outcome: Outcome) -> None:
        """Trial `k` has its outcome: into its row, told to Optuna, counted on the bar."""
        self.outcomes[k] = outcome
        self.fill(self.rows[k], outcome)
        if self.storage is not None:
            save_row(trial, self.rows[k])
        self.tell(trial, k)
        self.bar.update(1)

    # ------------------------------------------------------------------ the search
    def open(self) -> None:
        """The Optuna study: new, or a stored one resumed (refused when it was started with other
        settings), with the default setting queued unless it was tried."""
        optuna = self.optuna
        sampler = optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=min(8, max(2, self.budget // 3)))
        pruner = optuna.pruners.MedianPruner(n_startup_trials=3) if self.pruning else optuna.pruners.NopPruner()
        with quiet_optuna(optuna):
            self.study = open_study(optuna, self.storage, self.study_name, sampler, pruner)
        if self.storage is not None:
            check_setup(self.study, {**self.space.setup(self.default), **self.captured_with}, self.storage)
        self.resume()
        if params_key(self.space.params_of(self.default)) not in self.by_params:
            self.study.enqueue_trial(self.space.params_of(self.default))

    def search(self, progress: bool) -> None:
        """Ask Optuna for settings and measure them until the budget, the timeout or the space
        is spent (Ray: several in flight, each collected as it finishes)."""
        from tqdm.auto import tqdm

        self.bar = tqdm(total=min(self.budget, self.space.size), initial=min(len(self.rows), self.budget),
                        desc="hv.tune", unit="trial", disable=not progress, leave=False)
        if self.executor is not None:
            self.runner = RayRunner(self.executor, self.gm, self.example_inputs)
            self.notes.append(f"trials ran as Ray tasks ({self.runner.resources}); no pruning")
        try:
            self.loop()
        except KeyboardInterrupt:
            self.interrupted()
        finally:
            self.bar.close()

    def resume(self) -> None:
        """The trials a stored study finished earlier, as rows again (not measured again)."""
        earlier = finished(self.optuna, self.study)
        for frozen in earlier:
            k = len(self.rows)
            row = load_row(frozen)
            row["trial"] = k
            try:
                fixed = self.optuna.trial.FixedTrial(frozen.params)
                self.configs[k] = apply_changes(self.default, self.space.suggest(fixed))
            except (HiervizError, ValueError):
                pass  # an invalid setting stays a row
            self.rows.append(row)
            self.by_params[params_key(frozen.params)] = k
            self.outcomes[k] = Outcome(row.get("status") or "failed", error=row.get("error"))
        if earlier:
            self.notes.append(f"resumed {len(earlier)} finished trial(s) from {self.storage} (study "
                              f"{self.study.study_name!r}); not measured again")

    def interrupted(self) -> None:
        """Ctrl-C: keep the trials that finished, drop the one being measured."""
        self.rows = [r for r in self.rows if r["trial"] in self.outcomes]
        self.pending.clear()
        self.stopped = "Ctrl-C"
        self.notes.append(f"interrupted (Ctrl-C): the result covers the {len(self.rows)} trial(s) finished so far"
                          + ("; run again with the same storage= to resume" if self.storage else
                             "; pass storage='sqlite:///tune.db' to keep trials across runs"))

    def loop(self) -> None:
        """Start and collect trials until the budget, the timeout or the space is spent."""
        while True:
            elapsed = time.perf_counter() - self.started
            can_start = len(self.rows) < self.budget and len(self.by_params) < self.space.size
            if self.timeout is not None and elapsed > self.timeout and can_start and self.rows:
                self.stopped, can_start = "timeout", False  # (the default always runs)
            if not can_start and not self.pending:
                if len(self.by_params) >= self.space.size and len(self.rows) < self.budget:
                    self.stopped = "space exhausted"
                break
            slots = self.runner.slots if self.runner is not None else 1
            if can_start and len(self.pending) < slots:
                if not self.start_trial():
                    break
                continue
            self.collect_one()

    def start_trial(self) -> bool:
        """Ask for one setting and run it (or hand it to Ray); False when the search must stop."""
        with quiet_optuna(self.optuna):
            trial = self.study.ask()
        changes = self.space.suggest(trial)
        key = params_key(trial.params)
        if key in self.by_params:
            return self.proposed_again(trial, key)
        k = len(self.rows)
        self.by_params[key] = k
        try:
            cfg = apply_changes(self.default, changes)
            self.configs[k] = cfg
            part = partition_of(self.gm, cfg)
        except HiervizError as exc:
            self.rows.append(self.new_row(k, None, changes))
            self.finish(trial, k, Outcome("invalid", error=str(exc)))
            return True
        row = self.new_row(k, cfg, changes)
        row.update(columns.stat_columns(part))
        self.rows.append(row)
        changed = self.kept.why_not_measured(cfg, partitions_of(part)) if self.kept is not None else None
        if changed is not None:  # TensorRT cannot be timed here: a setting that changes its engines is not compared
            self.finish(trial, k, Outcome(KEPT_STATUS, error=changed))
            return True
        if not accelerates(part):  # all PyTorch: nothing to compile or crown
            self.finish(trial, k, Outcome("nothing accelerated", error="no subgraph is accelerated: every node "
                                           "runs in PyTorch, as in the eager model"))
            return True
        fp = fingerprint(part)
        if fp in self.by_print:
            source = self.by_print[fp]
            row["duplicate_of"] = source
            if source in self.outcomes:
                copy_outcome(self.outcomes, k, source)
                self.finish(trial, k, self.outcomes[k])
            else:
                self.waiting.setdefault(source, []).append((k, trial))
            return True
        self.by_print[fp] = k
        if self.runner is not None:
            self.pending[self.runner.submit(remote_trial, cfg, self.device, self.options,
                                            self.kept is not None)] = (k, trial)
            return True
        t1 = time.perf_counter()

        def prune(ms: float, trial: Any = trial) -> bool:
            trial.report(ms, step=0)
            return bool(self.pruning and trial.should_prune())

        outcome = measure_trial(part, self.example_inputs, self.dev, self.options, prune, self.kept is not None)
        self.measure_s += time.perf_counter() - t1
        self.finish(trial, k, outcome)
        self.bar.set_postfix_str(best_text(self.rows))
        return True

    def proposed_again(self, trial: Any, key: tuple) -> bool:
        """TPE proposed a setting already tried: tell it the same answer, and have it try one
        not yet tried next. False when none is left and nothing is in flight."""
        earlier = self.by_params[key]
        if earlier in self.outcomes:
            self.tell(trial, earlier)
        else:
            with quiet_optuna(self.optuna):
                self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        untried = self.space.untried(set(self.by_params), self.rng)
        if untried is None:
            self.stopped = "space exhausted"
            return bool(self.pending)
        self.study.enqueue_trial(untried)
        return True

    def collect_one(self) -> None:
        """Ray: wait for one trial to finish, and settle the duplicates that waited on it."""
        t1 = time.perf_counter()
        ref, result, error = next(self.runner.wait(list(self.pending)))
        self.measure_s += time.perf_counter() - t1
        k, trial = self.pending.pop(ref)
        self.finish(trial, k, result if error is None else Outcome("failed", error=error_text(error)))
        for dup, dup_trial in self.waiting.pop(k, []):
            copy_outcome(self.outcomes, dup, k)
            self.finish(dup_trial, dup, self.outcomes[dup])
        self.bar.set_postfix_str(best_text(self.rows))

    # ------------------------------------------------------------------ the answer
    def result(self) -> TuneResult:
        """The trials as a table, and the best setting, measured once more."""
        trials = columns.frame(self.rows, latency=True, extra_head=("trial",),
                               extra_tail=("status", "duplicate_of", "seconds"))
        trials["duplicate_of"] = trials["duplicate_of"].astype("Int64")
        trials["fallbacks"] = trials["fallbacks"].astype("Int64")
        result = TuneResult(best=None, best_measurement=None, trials=trials, default=self.default,
                            baselines=self.baselines,
                            space={k: [v for _, v in pairs] for k, pairs in self.space.fields.items()},
                            device=str(self.dev), notes=self.notes, stopped=self.stopped, study=self.study,
                            capture_s=self.capture_s, graph=self.gm, against=self.against,
                            not_timed=self.kept.note if self.kept is not None else None)
        crowned, result.fastest_trial = pick_best(trials)
        t1 = time.perf_counter()
        if crowned is not None:
            crowned = self.crown(result, crowned)
        if crowned is None:
            self.fall_back_to_default(result)
        self.measure_s += time.perf_counter() - t1
        judge(result, self.baselines)
        self.baselines["graph_eager_ms"] = getattr(result.best_measurement, "graph_eager_ms", None) or \
            self.baselines.get("graph_eager_ms")
        result.measure_s = self.measure_s
        result.seconds = time.perf_counter() - self.started
        return result

    def crown(self, result: TuneResult, crowned: int) -> int | None:
        """Measure the fastest trial again (timed interleaved with the baseline); it is best
        when that measurement's speed-up interval claims a speed-up (latency.speedup_claim)."""
        m = final_measure(self.gm, self.configs[crowned], self.example_inputs, self.dev, self.options, self.notes)
        ci = getattr(m, "speedup_ci", None)
        if m is not None and (ci is None or clear_gain(ci) or getattr(m, "baseline_ms", None) is None):
            result.best, result.best_trial, result.best_measurement = self.configs[crowned], crowned, m
            return crowned
        self.notes.append(f"trial {crowned} looked faster than {self.against} but not when measured again"
                          + (f" ({ci_text(ci)})" if ci else ""))
        return None

    def fall_back_to_default(self, result: TuneResult) -> None:
        """No trial was confirmed faster: the default setting is best, unless its outputs differ."""
        default_row = result.trials[result.trials["trial"] == 0]
        if len(default_row) and default_row["status"].iloc[0] not in ("mismatch", KEPT_STATUS):
            result.best, result.best_trial = self.default, 0
            result.best_measurement = final_measure(self.gm, self.default, self.example_inputs, self.dev,
                                                     self.options, self.notes)

def accelerates(part: Partition | MultiGraphPartition) -> bool:
    """Whether any subgraph of the partition (of any graph, graph by graph) is accelerated."""
    return any(sg.is_acc for p in partitions_of(part) for sg in p.subgraphs)


def error_text(error: BaseException) -> str:
    """A failed Ray trial's message for its row: hierviz's own errors and a dead worker as they
    say it, any other exception with its type."""
    text = str(error).strip()
    return text if isinstance(error, (HiervizError, WorkerDied)) else f"{type(error).__name__}: {text}"


def best_text(rows: list[dict[str, Any]]) -> str:
    """The progress bar's note: the best median so far among trials that may be crowned."""
    ok = [r["median_ms"] for r in rows if r.get("status") == "measured" and r.get("median_ms") is not None
          and r.get("outputs_match") is not False]
    return f"best {min(ok):.3f} ms" if ok else ""


__all__ = ["tune", "TuneResult", "default_space"]

