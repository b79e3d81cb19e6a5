"""One trial of hv.tune, and its arguments checked up front: measuring a setting (a quick, prunable timing checked against eager,
then the full timing; as a Ray task too), the search space as Optuna's categorical choices,
Optuna itself (imported on first use, quietly), and the final measurement of the best.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
import time
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import torch
from torch.utils._pytree import tree_leaves

from hierviz.config import Config, whole_number
from hierviz.errors import ConfigError, HiervizError
from hierviz.compare import columns
from hierviz.compare.cache import cached_partition
from hierviz.compare.grid import expand_grid
from hierviz.compare.ray_executor import check_executor, is_ray
from hierviz.latency import measure
from hierviz.latency.lift import lift
from hierviz.latency.numerics import locate_mismatch
from hierviz.latency.timing import time_fn
from hierviz.opnames import normalize_all
from hierviz.partitioner import Partition

QUICK = {"warmup": 1, "iters": 5}     # the first, prunable timing
FULL = {"warmup": 3, "iters": 30}     # the full timing of trials that are not pruned
OPTUNA_HINT = "install Optuna with `pip install 'hierviz[tune]'` (make setup installs it)"


@dataclass
class Outcome:
    status: str
    quick: Any = None
    full: Any = None
    error: str | None = None
    seconds: float = 0.0


def measure_trial(part: Partition, example_inputs: Any, device: Any, options: Mapping[str, Any],
                   prune: Any = None) -> Outcome:
    """Measure one partition: a quick timing (checked against eager), `prune(median_ms)` asked
    whether to stop there, then the full timing. Never raises for a HiervizError."""
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
                return Outcome("mismatch", quick, None, (f"the error starts in {where}; " if where else "") + text,
                                time.perf_counter() - start)
            if quick.fallbacks:
                return Outcome("fallback", quick, None, f"{len(quick.fallbacks)} subgraph(s) fell back to eager: "
                                f"{', '.join(quick.fallbacks)[:200]}", time.perf_counter() - start)
            if prune is not None and prune(quick.median_ms):
                return Outcome("pruned", quick, None, None, time.perf_counter() - start)
            full = measure(part, example_inputs, device=device, **full_opts)
    except HiervizError as exc:
        return Outcome("failed", None, None, str(exc), time.perf_counter() - start)
    return Outcome("measured", quick, full, None, time.perf_counter() - start)


def remote_trial(gm: Any, example_inputs: Any, config: Config, device: Any, options: Mapping[str, Any]) -> Outcome:
    """A trial as a Ray task: partition the worker's copy of the graph, measure (no pruning)."""
    try:
        part = cached_partition(gm, config)
    except HiervizError as exc:
        return Outcome("invalid", error=str(exc))
    return measure_trial(part, example_inputs, device, options)


def check_options(budget: Any, timeout: Any, seed: Any, executor: Any, measure: Any) -> dict[str, Any]:
    """hv.tune's arguments checked up front; the hv.measure options of its trials."""
    if not whole_number(budget, 1):
        raise ConfigError(f"budget must be a positive number of trials, e.g. budget=20, not {budget!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or timeout <= 0):
        raise ConfigError(f"timeout must be a positive number of seconds (or None), not {timeout!r}")
    if not whole_number(seed, 0) or seed >= 2**32:
        raise ConfigError(f"seed must be an int from 0 to 2**32 - 1, not {seed!r:.40}")
    if executor is not None and not is_ray(executor):
        raise ConfigError("hv.tune measures one trial at a time in this process (parallel timings would disturb "
                          "each other); executor may be None, or 'ray' / a Ray address to run trials on Ray workers.")
    if executor is not None:
        check_executor(executor)  # before capturing: a typo must not cost the capture
    if measure is not None and not isinstance(measure, Mapping):
        raise ConfigError("measure must be a dict of hv.measure options, e.g. {'iters': 50}.")
    options = dict(measure or {})
    for key in ("check", "baseline", "per_subgraph", "device"):
        if key in options:
            raise ConfigError(f"measure={{{key!r}: ...}} is set by hv.tune itself; leave it out.")
    return options


# ----------------------------------------------------------------------------- the search
class SearchSpace:
    """The space as Optuna categorical choices (labels), mapped back to Config values."""

    def __init__(self, space: Mapping[str, Any], default: Config) -> None:
        if isinstance(space, Mapping) and "engine" in space:
            raise ConfigError("hv.tune searches hierviz's partitioner, so its space cannot vary 'engine': what "
                              "torch_tensorrt.compile runs is its compile_ms baseline; hv.compare_engines or "
                              "hv.sweep(grid={'engine': [...]}) compare engines.")
        expand_grid(space, name="space")  # field names; hv.tune checked the values first (check_grid)
        self.fields: dict[str, list[tuple[Any, Any]]] = {}
        for name, values in space.items():
            pairs: list[tuple[Any, Any]] = []
            for combo in expand_grid({name: values}, name="space"):
                raw = combo[name]
                label = self.label(name, raw)
                if label not in [p[0] for p in pairs]:
                    pairs.append((label, raw))
            current = self.label(name, getattr(default, name))
            if current not in [p[0] for p in pairs]:
                pairs.insert(0, (current, getattr(default, name)))
            self.fields[name] = pairs

    @staticmethod
    def label(name: str, value: Any) -> Any:
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
        return {name: self.label(name, getattr(config, name)) for name in self.fields}

    def untried(self, tried: set[tuple], rng: random.Random) -> dict[str, Any] | None:
        """Params of a setting not in `tried` (chosen with `rng`), or None when all were tried."""
        names = list(self.fields)
        if self.size <= 4096:
            left = [dict(zip(names, combo)) for combo in itertools.product(*([p[0] for p in self.fields[n]] for n in names))]
            left = [p for p in left if params_key(p) not in tried]
            return rng.choice(left) if left else None
        for _ in range(1000):
            params = {n: rng.choice(self.fields[n])[0] for n in names}
            if params_key(params) not in tried:
                return params
        return None

    def suggest(self, trial: Any) -> dict[str, Any]:
        """Config changes for an Optuna trial (its params are the labels)."""
        changes = {}
        for name, pairs in self.fields.items():
            label = trial.suggest_categorical(name, [p[0] for p in pairs])
            changes[name] = dict(pairs)[label]
        return changes


def load_optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise ConfigError(f"hv.tune needs Optuna, which is not installed: {OPTUNA_HINT}.") from None
    return optuna


@contextlib.contextmanager
def quiet_optuna(optuna: Any) -> Any:
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def final_measure(gm: Any, config: Config, example_inputs: Any, device: Any, options: Mapping[str, Any],
                   notes: list[str]) -> Any:
    """The full hv.measure of `config` (its baseline timed in the same call), or None with a note."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return measure(cached_partition(gm, config), example_inputs, device=device, **{**FULL, **options})
        except HiervizError as exc:
            notes.append(f"the final measurement of {config.label()} failed: {exc}")
            return None


def graph_eager(gm: Any, example_inputs: Any, device: Any, timing: Mapping[str, int]) -> Any:
    """Stats of the captured graph run eagerly (the baseline when there is no nn.Module), or None."""
    try:
        base = lift(gm, device)
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in tree_leaves(example_inputs)]
        with torch.no_grad():
            return time_fn(lambda: base.gm(*inputs, *base.weights), device, warmup=max(1, timing["warmup"]),
                           iters=timing["iters"])
    except Exception:  # noqa: BLE001 - without a baseline no setting is crowned, which the verdict says
        return None


def copy_outcome(outcomes: dict[int, Outcome], k: int, source: int) -> None:
    o = outcomes[source]
    outcomes[k] = Outcome("duplicate" if o.status in ("measured", "pruned") else o.status, o.quick, o.full,
                           o.error, 0.0)


def error_text(error: BaseException) -> str:
    text = str(error).strip()
    return text if isinstance(error, HiervizError) or "Ray worker" in text else f"{type(error).__name__}: {text}"


def best_text(rows: list[dict[str, Any]]) -> str:
    ok = [r["median_ms"] for r in rows if r.get("status") == "measured" and r.get("median_ms") is not None
          and r.get("outputs_match") is not False]
    return f"best {min(ok):.3f} ms" if ok else ""


def params_key(params: Mapping[str, Any]) -> tuple:
    return tuple(sorted((n, str(v)) for n, v in params.items()))


__all__ = ["QUICK", "FULL", "OPTUNA_HINT", "check_options", "Outcome", "measure_trial", "remote_trial", "SearchSpace", "load_optuna",
           "quiet_optuna", "final_measure", "graph_eager", "copy_outcome", "error_text", "best_text", "params_key"]
