"""What hv.numerics costs beyond the compile, against hv.measure (issue 25).

    python benchmarks/numerics_cost.py [--model resnet18] [--iters 20] [--repeats 5]

TorchInductor only, on the CPU. The model is measured first (hv.measure compiles every
subgraph), then hv.numerics runs `--repeats` times on the same compile cache, so it compiles
nothing (its cache misses are printed: they must be 0). Printed:
  - one hv.measure iteration: what one more timed iteration adds to hv.measure (it times the
    split model, the captured graph, the nn.Module and each subgraph per iteration), and, more
    strictly, one call of the compiled split model and one eager call of the captured graph (the
    floor of the check: it runs each once), timed interleaved with the hv.numerics runs;
  - hv.measure(warmup=0, iters=1) wall time with everything cached (one measure of one iteration:
    eager baselines, the split model, the output check);
  - hv.numerics' own time beyond the compile (`check_s`), median of the repeats, and its ratio to
    both. Target: at most 2x one hv.measure iteration. Exit code 1 when above.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET = 2.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--extra", type=int, default=3,
                    help="extra hv.measure iterations timed, for its per-iteration cost")
    args = ap.parse_args()

    import torch

    import hierviz as hv
    from hierviz.latency import CompileCache, compile_split
    from hierviz.latency.compiling.lift import lift

    torch.set_num_threads(max(1, torch.get_num_threads()))
    model, inputs = hv.zoo.load(args.model)
    part = hv.partition(model, inputs, priority=("inductor",), support={"inductor": hv.support.inductor()})
    cache = CompileCache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = hv.measure(part, inputs, device="cpu", cache=cache, warmup=3, iters=args.iters, per_subgraph=False)
        start = time.perf_counter()
        hv.measure(part, inputs, device="cpu", cache=cache, warmup=0, iters=1)
        one_measure_s = time.perf_counter() - start
        start = time.perf_counter()
        hv.measure(part, inputs, device="cpu", cache=cache, warmup=0, iters=1 + args.extra)
        per_measure_iter_s = (time.perf_counter() - start - one_measure_s) / args.extra
        split = compile_split(part, inputs, "cpu", cache=cache).module
        base = lift(part.graph, torch.device("cpu"))
        # interleaved, so the load of the machine weighs on both alike
        iteration, eager, runs = [], [], []
        with torch.no_grad():
            for _ in range(args.repeats):
                for _ in range(3):
                    t0 = time.perf_counter()
                    split(*inputs)
                    iteration.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                base.gm(*inputs, *base.weights)
                eager.append(time.perf_counter() - t0)
                runs.append(hv.numerics(part, inputs, device="cpu", cache=cache))
    it_ms = statistics.median(iteration) * 1e3
    eager_ms = statistics.median(eager) * 1e3
    check_ms = statistics.median(r.check_s for r in runs) * 1e3
    r = runs[-1]
    print(f"{args.model}: {len(part.subgraphs)} subgraph(s) "
          f"({', '.join(f'{b} {n}' for b, n in sorted(part.stats['subgraphs_by_backend'].items()))}), "
          f"input {tuple(inputs[0].shape)}, {torch.get_num_threads()} CPU thread(s)")
    print(f"  hv.measure: compile {m.compile_s:.1f} s; median per iteration {m.median_ms:.1f} ms "
          f"(eager graph {m.graph_eager_ms:.1f} ms)")
    print(f"  hv.measure(warmup=0, iters=1) with everything cached: {one_measure_s * 1e3:.1f} ms; each further "
          f"iteration of hv.measure (it times the split model, the captured graph, your nn.Module and each "
          f"subgraph): {per_measure_iter_s * 1e3:.1f} ms")
    print(f"  interleaved, median of {args.repeats}: one iteration of the split model {it_ms:.1f} ms, "
          f"the captured graph eagerly {eager_ms:.1f} ms, hv.numerics beyond the compile {check_ms:.1f} ms "
          f"(cache misses {r.cache_misses}, hits {r.cache_hits}; "
          f"peak reference {r.peak_reference_bytes / 2**20:.1f} MiB)")
    ratio = check_ms / (per_measure_iter_s * 1e3)
    print(f"  hv.numerics / one hv.measure iteration: {ratio:.2f}x (target <= {TARGET:.0f}x); / one call of the split "
          f"model: {check_ms / it_ms:.2f}x (its floor, one eager run and one compiled run: "
          f"{(it_ms + eager_ms) / it_ms:.2f}x); / hv.measure(iters=1): {check_ms / (one_measure_s * 1e3):.2f}x")
    print(f"  {r!r}")
    return 0 if ratio <= TARGET and r.cache_misses == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
