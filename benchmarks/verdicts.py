"""Honest verdicts on the CPU (issue 21): how wide a speed-up's confidence interval is, and
what hv.tune concludes.

  - hv.measure of resnet18 (TorchInductor for everything it compiles, the rest eager) at the
    default warmup 10 / iters 100: speed-up over the eager nn.Module with its 95% bootstrap
    interval, and the interval's width;
  - hv.tune on two zoo models: the trials' speed-ups with intervals and the verdict (a setting
    is crowned only when its interval lies above 1.0).

    python benchmarks/verdicts.py [--models tiny_conv,bert] [--budget 6] [--skip-measure]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def measure_resnet18() -> None:
    import hierviz as hv

    model, inputs = hv.zoo.load("resnet18")
    part = hv.partition(model, inputs, priority=("inductor",), support={"inductor": hv.support.inductor()})
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = hv.measure(part, inputs, device="cpu")  # default warmup 10, iters 100
    low, high = m.speedup_ci
    print(f"===== resnet18, CPU, hv.measure at the defaults (warmup {m.warmup}, iters {m.iters}) =====")
    print(m)
    print(f"split {m.median_ms:.2f} ms (cv {m.cv:.1%}), "
          f"eager PyTorch (your nn.Module) {m.baseline_ms:.2f} ms (cv {m.baseline_cv:.1%})")
    print(f"speedup {m.speedup:.3f}x, 95% CI [{low:.3f}, {high:.3f}], width {high - low:.3f} "
          f"({(high - low) / m.speedup:.1%} of the speed-up): {m.verdict}; {time.perf_counter() - started:.0f} s")


def tune(name: str, budget: int) -> None:
    import pandas as pd

    import hierviz as hv

    model, inputs = hv.zoo.load(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = hv.tune(model, inputs, budget=budget, device="cpu", progress=False)
    cols = [c for c in ("trial", "priority", "min_block_size", "torch_executed_ops", "subgraphs", "median_ms",
                        "speedup", "speedup_ci", "status") if c in res.trials.columns]
    shown = res.trials[cols].copy()
    shown["torch_executed_ops"] = shown["torch_executed_ops"].str.replace("torch.ops.aten.", "", regex=False)
    shown["speedup_ci"] = shown["speedup_ci"].map(lambda ci: f"[{ci[0]:.2f}, {ci[1]:.2f}]" if isinstance(ci, tuple)
                                                  else "-")
    print(f"\n===== {name}: hv.tune, budget {budget}, CPU =====")
    with pd.option_context("display.width", 200, "display.max_colwidth", 30, "display.float_format",
                           lambda v: f"{v:.3f}"):
        print(shown.to_string(index=False, na_rep="-"))
    print(res)
    print(f"verdict: {res.verdict} (beat eager: {res.beat_eager})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="tiny_conv,bert")
    parser.add_argument("--budget", type=int, default=6)
    parser.add_argument("--skip-measure", action="store_true")
    args = parser.parse_args()
    if not args.skip_measure:
        measure_resnet18()
    for name in args.models.split(","):
        tune(name.strip(), args.budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
