"""Timing: CUDA events on a GPU, perf_counter_ns on CPU, the statistics of the samples, a
baseline and a candidate timed interleaved (`time_paired`) so the same noise hits both, and each
subgraph timed on its own with the inputs it receives in the split model."""

from __future__ import annotations

import functools
import contextlib
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import torch

from hierviz.foundation.gcpause import gc_paused

NOISY_CV = 0.05  # coefficient of variation above which a timing is reported as noisy
CI_LEVEL = 0.95  # confidence level of speed-up intervals
CI_RESAMPLES = 2000  # bootstrap resamples per interval
WIDE_SPREAD = 0.25  # a baseline whose p10-p90 range is wider than this share of its median is flagged
PAIR_BATCH = 5  # calls per batch when a baseline and a candidate are timed in alternating batches
CLOCK = time.perf_counter_ns  # the host clock; tests put a fake one here to inject noise


@dataclass(frozen=True)
class Stats:
    """Per-iteration latencies in milliseconds and their summary."""

    median_ms: float
    p10_ms: float
    p90_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    iters: int
    samples_ms: tuple[float, ...]

    @property
    def cv(self) -> float:
        """Coefficient of variation: std / mean."""
        return self.std_ms / self.mean_ms if self.mean_ms > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.cv > NOISY_CV

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: how wide the middle 80% of the samples is, as a share."""
        return (self.p90_ms - self.p10_ms) / self.median_ms if self.median_ms > 0 else 0.0

    @property
    def wide(self) -> bool:
        """The spread is wider than WIDE_SPREAD: a figure compared against this is unreliable."""
        return self.spread > WIDE_SPREAD

    @classmethod
    def of(cls, samples_ms: list[float]) -> "Stats":
        if not samples_ms:
            raise ValueError("no samples")
        xs = sorted(samples_ms)
        n = len(xs)
        mean = sum(xs) / n
        std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
        return cls(median_ms=percentile(xs, 50), p10_ms=percentile(xs, 10), p90_ms=percentile(xs, 90),
                   mean_ms=mean, std_ms=std, min_ms=xs[0], max_ms=xs[-1], iters=n,
                   samples_ms=tuple(samples_ms))


def percentile(sorted_xs: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    n = len(sorted_xs)
    if n == 1:
        return sorted_xs[0]
    pos = (n - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def speedup_interval(baseline_ms: Sequence[float], candidate_ms: Sequence[float], *, level: float = CI_LEVEL,
                     resamples: int = CI_RESAMPLES, seed: int = 0,
                     paired: bool = False) -> tuple[float, float] | None:
    """A bootstrap confidence interval of median(baseline) / median(candidate): the samples are
    resampled with replacement `resamples` times (a fixed seed, so the same samples always give
    the same interval) and the central `level` share of the ratios is kept (percentile method).
    `paired` (samples from `time_paired`: sample i of each side ran in the same batch pair)
    resamples the pairs together, so noise both sides shared cancels out of the ratio; else
    the two sets are resampled on their own. None when either side has no samples or a median
    of zero. One sample on each side gives a zero-width interval: hv.tune never crowns a
    setting on that."""
    import numpy as np

    base = np.asarray(list(baseline_ms), dtype=float)
    cand = np.asarray(list(candidate_ms), dtype=float)
    if base.size == 0 or cand.size == 0 or not (np.isfinite(base).all() and np.isfinite(cand).all()):
        return None
    rng = np.random.default_rng(seed)
    if paired and base.size == cand.size:
        pick = rng.integers(0, base.size, (resamples, base.size))
        b, c = np.median(base[pick], axis=1), np.median(cand[pick], axis=1)
    else:
        b = np.median(base[rng.integers(0, base.size, (resamples, base.size))], axis=1)
        c = np.median(cand[rng.integers(0, cand.size, (resamples, cand.size))], axis=1)
    if (c <= 0).any():
        return None
    ratios = b / c
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(ratios, [tail, 100 - tail])
    return float(lo), float(hi)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_fn(fn: Callable[[], object], device: torch.device, *, warmup: int = 10, iters: int = 100) -> Stats:
    """Run `fn` `warmup` times, then time `iters` calls one by one.

    On CUDA each call is bracketed by CUDA events on the current stream and the device is
    synchronised before and after; elsewhere each call is timed with `perf_counter_ns`.
    The garbage collector is paused while timing.
    """
    if iters < 1:
        raise ValueError(f"iters must be >= 1, got {iters}")
    with gc_paused():
        if device.type == "cuda":
            return _time_cuda(fn, device, warmup, iters)
        return _time_host(fn, warmup, iters)


def _time_host(fn: Callable[[], object], warmup: int, iters: int) -> Stats:
    for _ in range(warmup):
        fn()
    return Stats.of(_calls_host(fn, iters))


def _calls_host(fn: Callable[[], object], n: int) -> list[float]:
    """`n` calls of fn, each timed with CLOCK, in ms."""
    samples = []
    clock = CLOCK
    for _ in range(n):
        start = clock()
        fn()
        samples.append((clock() - start) / 1e6)
    return samples


def _time_cuda(fn: Callable[[], object], device: torch.device, warmup: int, iters: int) -> Stats:
    with torch.cuda.device(device):
        torch.cuda.synchronize()
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        return Stats.of(_calls_cuda(fn, iters))


def _calls_cuda(fn: Callable[[], object], n: int) -> list[float]:
    """`n` calls of fn on the current CUDA device, each bracketed by events, in ms."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def time_paired(baseline: Callable[[], object], candidate: Callable[[], object], device: torch.device, *,
                warmup: int = 10, iters: int = 100, batch: int = PAIR_BATCH) -> tuple[Stats, Stats]:
    """(baseline's Stats, candidate's Stats), timed interleaved: `iters` calls of each in
    alternating batches of `batch` (baseline first in even rounds, candidate first in odd
    ones), so a burst of load or a slow drift hits both alike. Sample i of one side and sample
    i of the other ran in the same round: `speedup_interval(..., paired=True)` uses the pairs."""
    if iters < 1:
        raise ValueError(f"iters must be >= 1, got {iters}")
    sides: tuple[list[float], list[float]] = ([], [])
    fns = (baseline, candidate)
    with gc_paused():
        if device.type == "cuda":
            ctx: Any = torch.cuda.device(device)
            calls = _calls_cuda
        else:
            ctx, calls = contextlib.nullcontext(), _calls_host
        with ctx:
            for fn in fns:
                for _ in range(warmup):
                    fn()
            synchronize(device)
            done, k = 0, 0
            while done < iters:
                n = min(batch, iters - done)
                order = (0, 1) if k % 2 == 0 else (1, 0)
                for side in order:
                    sides[side].extend(calls(fns[side], n))
                done, k = done + n, k + 1
    return Stats.of(sides[0]), Stats.of(sides[1])


def subgraph_inputs(top: torch.nn.Module, names: Iterable[str], inputs: Sequence[Any]) -> dict[str, tuple]:
    """The arguments each submodule `names` of `top` receives in one run of `top(*inputs)`."""
    captured: dict[str, tuple] = {}
    handles = []
    for name in names:
        def hook(module: torch.nn.Module, args: tuple, name: str = name) -> None:
            captured[name] = args
        handles.append(getattr(top, name).register_forward_pre_hook(hook))
    try:
        top(*inputs)
    finally:
        for h in handles:
            h.remove()
    return captured


def time_submodules(top: torch.nn.Module, names: Sequence[str], inputs: Sequence[Any], device: torch.device, *,
                    warmup: int, iters: int, step: Callable[[str], Any] = lambda name: None) -> dict[str, Stats]:
    """Each submodule of `top` timed on its own, with the inputs it receives in `top(*inputs)`."""
    captured = subgraph_inputs(top, names, inputs)
    out: dict[str, Stats] = {}
    for name in names:
        args = captured.get(name)
        if args is not None:
            sub = getattr(top, name)
            out[name] = time_fn(functools.partial(sub, *args), device, warmup=warmup, iters=iters)
        step(name)
    return out


__all__ = ["Stats", "time_fn", "time_paired", "speedup_interval", "WIDE_SPREAD", "PAIR_BATCH", "CLOCK", "CI_LEVEL",
           "CI_RESAMPLES", "time_submodules", "subgraph_inputs", "percentile", "synchronize", "NOISY_CV"]
