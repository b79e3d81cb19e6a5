"""hv.tune on the CPU: two zoo models, TorchInductor and PyTorch subgraphs, budget 20.

Checks of issue 15:
  - the trials, how many were duplicates (same partition: measured once) and pruned;
  - the best setting against the default one, the model run eagerly (nn.Module) and the whole
    model through torch.compile; the best must match the model's outputs;
  - the tune loop's own overhead (everything but capturing, compiling and timing) must be
    <= 5% of its wall time.

    python benchmarks/tune_cpu.py [--models tiny_conv,bert] [--budget 20] [--iters 20]

Exit code 1 when a best does not match outputs or the overhead is above 5%.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OVERHEAD_TARGET = 0.05


def run(name: str, budget: int, iters: int) -> bool:
    import pandas as pd

    import hierviz as hv
    from hierviz.compare.tune_result import EAGER_MODULE, GRAPH_EAGER

    model, inputs = hv.zoo.load(name)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = hv.tune(model, inputs, budget=budget, device="cpu", measure={"warmup": 3, "iters": iters},
                      torch_compile=True, progress=False)
    wall = time.perf_counter() - started
    t = res.trials
    shown = t[["trial", "priority", "min_block_size", "torch_executed_ops", "subgraphs", "median_ms", "speedup",
               "outputs_match", "fallbacks", "status", "duplicate_of", "seconds"]].copy()
    shown["torch_executed_ops"] = shown["torch_executed_ops"].str.replace("torch.ops.aten.", "", regex=False)
    print(f"\n===== {name}: hv.tune, budget {budget}, {iters} timed calls per trial (CPU) =====")
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_colwidth", 36,
                           "display.float_format", lambda v: f"{v:.3f}"):
        print(shown.to_string(index=False, na_rep="-"))
    print(res)
    counts = t["status"].value_counts().to_dict()
    print(f"trials {len(t)}: measured {counts.get('measured', 0)}, duplicates skipped {counts.get('duplicate', 0)}, "
          f"pruned {counts.get('pruned', 0)}, "
          f"other {len(t) - sum(counts.get(s, 0) for s in ('measured', 'duplicate', 'pruned'))}")
    b = res.baselines
    best_ms = res.best_measurement.median_ms if res.best_measurement is not None else float("nan")
    default = t[t["trial"] == 0].iloc[0]
    print(f"{'':36}{'median ms':>10}")
    print(f"{'best':36}{best_ms:>10.3f}   {res.best.label() if res.best else '-'}")
    print(f"{'default setting':36}{default['median_ms']:>10.3f}   {res.default.label()}")
    print(f"{EAGER_MODULE:36}{b.get('eager_ms') or float('nan'):>10.3f}")
    print(f"{GRAPH_EAGER:36}{b.get('graph_eager_ms') or float('nan'):>10.3f}")
    print(f"{'torch.compile (whole)':36}{b.get('torch_compile_ms') or float('nan'):>10.3f}   "
          f"(compile {b.get('torch_compile_s', float('nan')):.1f} s)")
    match = res.best_measurement is not None and bool(res.best_measurement.outputs_match)
    print(f"best matches the model's outputs: {match} "
          f"(max abs error {getattr(res.best_measurement, 'max_abs_error', float('nan')):.2g})")
    ok_overhead = res.overhead <= OVERHEAD_TARGET
    print(f"tune wall {res.seconds:.1f} s (call {wall:.1f} s): capture {res.capture_s:.1f} s, compiling+timing "
          f"{res.measure_s:.1f} s, loop overhead {res.overhead_s:.2f} s = {res.overhead:.1%} of the wall time after "
          f"capture (target <= {OVERHEAD_TARGET:.0%}: {'ok' if ok_overhead else 'MISSED'})")
    return match and ok_overhead


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="tiny_conv,bert")
    parser.add_argument("--budget", type=int, default=20)
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    ok = True
    for name in args.models.split(","):
        ok = run(name.strip(), args.budget, args.iters) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
