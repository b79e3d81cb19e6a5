"""How long the Explorer takes to update after a control change, without measuring.

Target (issue 6): every control change on resnet50 and on bert updates everything (partition,
diagram, stats, tables, report, history, diff) in <= 1 s on the 2-core CPU dev machine.

    python benchmarks/explore_latency.py [--models resnet50,bert] [--repeat 1]

For each model it builds an Explorer (debounce=0, so each `.value = ...` applies synchronously,
exactly as a click does after its debounce), then applies a fixed sequence of control changes,
each to a setting not seen before (cold: partition + dot layout + tables), then goes back to
earlier settings (warm: everything from the per-Config caches). Each line prints the wall time
of the change and its split: partition / render (DOT + dot layout) / tables (ops, summary,
report) / panels (stats, history, diff). Beside it, the upstream Torch-TensorRT partitioner's
time for the same setting alone (engine="torch_tensorrt"), run in the same process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_S = 1.0


def steps(ex) -> list[tuple[str, str, object]]:
    """(description, control, value) — every control a user touches, cold first, then warm."""
    graph_ops = ex.controller.graph_ops
    top_ops = [op for op, _ in graph_ops.most_common() if op.startswith("torch.ops.aten.")]
    relu = next((op for op in top_ops if "relu" in op or "gelu" in op), top_ops[0])
    second = next(op for op in top_ops if op != relu)
    return [
        ("min_block_size 5 -> 3", "min_block_size", 3),
        (f"torch_executed_ops + {relu.replace('torch.ops.aten.', '')}", "torch_executed_ops", [relu]),
        ("min_block_size 3 -> 8", "min_block_size", 8),
        (f"torch_executed_ops + {second.replace('torch.ops.aten.', '')}", "torch_executed_ops", [relu, second]),
        ("support inductor = lowerings", "support", {"inductor": "inductor"}),
        ("priority inductor > tensorrt", "priority", ["inductor", "tensorrt"]),
        ("skip_fusion on", "skip_fusion", True),
        ("require_full_compilation on", "require_full_compilation", True),
        ("require_full_compilation off", "require_full_compilation", False),
        ("view collapsed", "view", "collapsed"),
        ("view full", "view", "full"),
        ("view auto", "view", "auto"),
        ("priority tensorrt only", "priority", ["tensorrt"]),
        ("priority empty (invalid)", "priority", []),
        # warm: back through the settings seen before, newest first (all from the caches)
        ("back: priority inductor > tensorrt", "priority", ["inductor", "tensorrt"]),
        ("back: skip_fusion off", "skip_fusion", False),
        ("back: priority tensorrt > inductor", "priority", ["tensorrt", "inductor"]),
        ("back: support default", "support", {}),
        (f"back: torch_executed_ops {relu.replace('torch.ops.aten.', '')}", "torch_executed_ops", [relu]),
        ("back: min_block_size 3", "min_block_size", 3),
        ("back: torch_executed_ops none", "torch_executed_ops", []),
        ("back: min_block_size 5", "min_block_size", 5),
    ]


def upstream_seconds(gm, cfg) -> float | None:
    from hierviz.partitioner import partition

    try:
        t = time.perf_counter()
        partition(gm, config=cfg, engine="torch_tensorrt")
        return time.perf_counter() - t
    except Exception:  # noqa: BLE001 - upstream may be missing or reject the setting
        return None


def bench(name: str, upstream: bool) -> list[float]:
    import hierviz as hv
    from hierviz.compare import clear_cache

    model, inputs = hv.zoo.load(name)
    t = time.perf_counter()
    gm = hv.capture(model, inputs)
    capture_s = time.perf_counter() - t
    n_nodes = sum(1 for n in gm.graph.nodes if n.op == "call_function")
    clear_cache()
    t = time.perf_counter()
    ex = hv.explore(gm, inputs, debounce=0, name=name)
    build_s = time.perf_counter() - t
    print(f"\n== {name}: {n_nodes} call nodes ({len(gm.graph.nodes)} in all); capture {capture_s:.2f} s "
          f"(once, not part of an update); Explorer built in {build_s:.2f} s ==")
    print(f"{'change':44s} {'total':>8s} {'partition':>10s} {'render':>8s} {'tables':>8s} {'panels':>8s} "
          f"{'subgraphs':>9s}  {'upstream partition':>18s}")
    totals = []
    for label, control, value in steps(ex):
        t = time.perf_counter()
        ex.controls[control].value = value
        total = time.perf_counter() - t
        totals.append(total)
        tm = ex.timings
        part = ex.partition
        sub = str(part.stats["subgraphs"]) if part is not None else "invalid"
        up = ""
        if upstream and part is not None and control not in ("view",) and not label.startswith("back"):
            s = upstream_seconds(gm, part.config)
            up = "n/a" if s is None else f"{s * 1000:.0f} ms"
        flag = "" if total <= TARGET_S else "  SLOW"
        print(f"{label:44s} {total * 1000:7.0f}ms {tm.get('partition', 0) * 1000:9.1f}ms "
              f"{tm.get('render', 0) * 1000:7.0f}ms {tm.get('tables', 0) * 1000:7.1f}ms "
              f"{tm.get('panels', 0) * 1000:7.1f}ms {sub:>9s}  {up:>18s}{flag}")
        if ex.internal_errors:
            raise SystemExit(f"internal error in the Explorer: {ex.internal_errors[-1]!r}")
    first_back = next(i for i, (label, _, _) in enumerate(steps(ex)) if label.startswith("back"))
    cold, warm = totals[:first_back], totals[first_back:]
    print(f"{name}: cold changes median {statistics.median(cold) * 1000:.0f} ms, max {max(cold) * 1000:.0f} ms; "
          f"warm (cached) median {statistics.median(warm) * 1000:.0f} ms, max {max(warm) * 1000:.0f} ms; "
          f"target <= {TARGET_S * 1000:.0f} ms: {'met' if max(totals) <= TARGET_S else 'MISSED'}")
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,bert")
    parser.add_argument("--no-upstream", action="store_true", help="skip the upstream partitioner column")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TORCHINDUCTOR_DISABLE_PROGRESS", "1")
    print(f"hierviz Explorer update latency (no measuring), {os.cpu_count()} CPU cores")
    worst = 0.0
    for name in args.models.split(","):
        totals = bench(name.strip(), upstream=not args.no_upstream)
        worst = max(worst, max(totals))
    print(f"\nworst single change: {worst * 1000:.0f} ms (target {TARGET_S * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
