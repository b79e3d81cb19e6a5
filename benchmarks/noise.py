"""The measurement under a busy CPU (issue 31): a busy process beside it, switching on and off,
and the eager baseline and the split model timed one after the other (before) or interleaved in
alternating batches with the interval from the paired samples (hv.measure now).

The split model runs everything in PyTorch (a small MLP, min_block_size above the graph), so
its true speed-up over the eager nn.Module is about 1.0: a verdict of "faster" or "slower" is
the noise speaking. Prints, per run: the eager baseline's spread (p10-p90 over its median), the
speed-up, its 95% interval and width, and the verdict.

    python benchmarks/noise.py [--runs 3] [--iters 100] [--quiet-only]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BUSY = ("import time\nend = time.time() + {seconds}\n"
        "while time.time() < end:\n"
        "    t = time.time() + 0.15\n"
        "    while time.time() < t: pass\n"
        "    time.sleep(0.15)\n")


def busy(seconds: float) -> subprocess.Popen:
    """A process beside the measurement: 150 ms spinning, 150 ms asleep, for `seconds`."""
    return subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=seconds)])


def row(label: str, base, speedup: float, ci, verdict: str) -> str:
    low, high = ci
    return (f"{label:<26} baseline {base.median_ms:7.3f} ms spread {base.spread:6.1%}  speedup {speedup:5.2f}x  "
            f"CI [{low:.2f}, {high:.2f}] width {high - low:.3f}  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--quiet-only", action="store_true")
    args = parser.parse_args()

    import torch

    import hierviz as hv
    from hierviz.latency.measurement import verdict
    from hierviz.latency.compiling.compiled_split import compile_split
    from hierviz.latency.timing import speedup_interval, time_fn

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256)).eval()
    inputs = (torch.randn(32, 256),)
    part = hv.partition(model, inputs, min_block_size=10_000)  # everything in PyTorch: true speed-up ~1
    cpu = torch.device("cpu")
    split_model = compile_split(part, inputs, cpu, who="benchmarks/noise.py")  # what hv.measure times
    top, flat = split_model.module, split_model.inputs
    loads = ["quiet"] if args.quiet_only else ["quiet", "busy process beside it"]
    for load in loads:
        print(f"===== MLP 256-512-256 batch 32, CPU, {load}, iters {args.iters} =====")
        for run in range(args.runs):
            proc = busy(60) if load != "quiet" else None
            try:
                time.sleep(0.2 if proc else 0)
                with torch.no_grad():  # before: the split model, then the eager model, one after the other
                    split = time_fn(lambda: top(*flat), cpu, warmup=10, iters=args.iters)
                    base = time_fn(lambda: model(*inputs), cpu, warmup=10, iters=args.iters)
                ci = speedup_interval(base.samples_ms, split.samples_ms)
                print(row(f"run {run + 1} one after other", base, base.median_ms / split.median_ms, ci, verdict(ci)))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = hv.measure(part, inputs, device="cpu", iters=args.iters, per_subgraph=False)
                print(row(f"run {run + 1} hv.measure", m.eager_timing, m.speedup, m.speedup_ci, m.verdict))
            finally:
                if proc is not None:
                    proc.kill()
                    proc.wait()


if __name__ == "__main__":
    main()
