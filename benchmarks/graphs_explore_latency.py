"""How long the graph-by-graph explorer takes to show a setting change (issue 43).

Target: on torchvision's maskrcnn_resnet50_fpn (random weights, one 3x160x160 image; dynamo
makes about 56 graphs), a setting change re-partitions the other graphs in the background,
redraws only the shown graph, and shows it (its counts and its diagram) in <= 0.3 s.

    python benchmarks/graphs_explore_latency.py [--model maskrcnn|three_breaks] [--changes 6]

It opens `hv.explore(model, x, ir="torch_compile")` and sets `min_block_size` of the shown
graph's Explorer to values not seen before, in two modes:

- "kernel": as in a Jupyter kernel: the change is made on a running asyncio event loop, with the
  explorer's default debounce (the debounced update runs on the loop, as ipykernel runs it);
- "debounce 0": each `.value = ...` applies synchronously, as a click does after its debounce;
- "kernel, picture on": as "kernel", with the picture of every graph on ("draw every graph"),
  redrawn in the background after each change (its layout competes with the shown graph's).

In each mode, changes one after the other, each once the previous change's work has ended
("settled"), then a burst with no wait between changes ("burst": the background pass of the
previous change may still run). For each change:

- counts: from the change to the shown graph's stats (its counts) being made for its panel;
- diagram: from the change to the shown graph's diagram being made for its panel;
- kernel free: from the change until the kernel can take the next one (the setter returned and,
  in kernel mode, the loop ran the debounced update);
- totals: from the change to the every-graph totals being current (after the background pass;
  with the picture on, once it is redrawn too).

Beside it, in the same run, the baseline: what the graph-by-graph explorer did on every change
before issue 43, timed alone for the same settings: every graph re-partitioned
(`hv.partition(multi, config=...)`) and the picture of every graph laid out to SVG
(`render().pipe(format="svg")`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_S = 0.3


def load(name: str):
    import torch

    if name == "maskrcnn":
        from torchvision.models.detection import maskrcnn_resnet50_fpn

        torch.manual_seed(0)
        model = maskrcnn_resnet50_fpn(weights=None, weights_backbone=None).eval()
        return model, ([torch.rand(3, 160, 160)],)
    from tests.dynamo_models import three_breaks

    return three_breaks()


def settle(gx, timeout: float = 120.0) -> None:
    """Wait for the explorer's background work of the last change (no-op where there is none)."""
    wait = getattr(gx, "wait", None)
    if wait is not None:
        wait(timeout)


def p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="maskrcnn")
    ap.add_argument("--changes", type=int, default=4)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    import hierviz as hv

    model, x = load(args.model)
    t = time.perf_counter()
    first = hv.explore(model, x, ir="torch_compile")
    settle(first)
    opened = time.perf_counter() - t
    multi = first.multi
    k = first.picker.value
    first.close()
    print(f"{args.model}: {len(multi.graphs)} graphs, {len(multi.breaks)} breaks; shown g{k} "
          f"({len(multi.capture.graphs[k].ops)} ops); opened in {opened:.1f} s (capture included)")
    fresh = iter(range(2, 1000))  # each change to a min_block_size not seen before (cold caches)
    every_row: list[dict[str, float]] = []
    base: list[float] = []
    worst: dict[str, float] = {}
    for mode in ("kernel", "debounce 0", "kernel, picture on"):
        rows = asyncio.run(run_mode(hv, multi, mode, fresh, args.changes, base))
        every_row += rows
        worst[mode] = max(max(r["counts"], r["diagram"]) for r in rows)

    print("\nsummary (seconds), over", len(every_row), "changes:")
    for key in ("counts", "diagram", "free"):
        vals = [r[key] for r in every_row]
        print(f"  {key:8s} p50 {statistics.median(vals):.3f}  p90 {p(vals, 0.9):.3f}  max {max(vals):.3f}")
    print(f"  baseline (every graph re-partitioned and drawn, as before issue 43): p50 {statistics.median(base):.3f}  "
          f"p90 {p(base, 0.9):.3f}")
    for mode, w in worst.items():
        print(f"target ({mode}): the shown graph's counts and diagram <= {TARGET_S} s: "
              f"{'met' if w <= TARGET_S else 'NOT met'} (worst {w:.3f} s)")
    return 0


async def run_mode(hv, multi, mode: str, fresh, n: int, base: list[float]) -> list[dict[str, float]]:
    options = {"debounce": 0} if mode == "debounce 0" else {}
    gx = hv.explore(multi, **options)  # on a running loop: the debounce waits on it, as in a kernel
    if mode.endswith("picture on") and hasattr(gx, "draw_every"):
        gx.draw_every.value = True  # the picture of every graph, redrawn in the background after each change
    settle(gx)
    ex = gx.explorer
    stamps: dict[str, float] = {}

    def stamped(key: str, fn):  # the panel is set from what fn returns, at once
        def call(*a, **kw):
            got = fn(*a, **kw)
            if threading.current_thread() is threading.main_thread():  # not the compile-today line's thread
                stamps.setdefault(key, time.perf_counter())
            return got
        return call

    ex.controller.stats = stamped("counts", ex.controller.stats)
    ex.controller.diagram = stamped("diagram", ex.controller.diagram)

    async def change(value: int, wait: bool) -> dict[str, float]:
        stamps.clear()
        t0 = time.perf_counter()
        ex.controls["min_block_size"].value = value
        while not {"counts", "diagram"} <= set(stamps) and time.perf_counter() - t0 < 30:
            await asyncio.sleep(0.002)  # the loop runs the debounced update meanwhile
        free = time.perf_counter()
        row = {"counts": stamps.get("counts", free) - t0, "diagram": stamps.get("diagram", free) - t0,
               "free": free - t0}
        if wait:
            settle(gx)
            assert gx.partition.config.min_block_size == value, "the totals are not of the last setting"
            row["totals"] = time.perf_counter() - t0
            await asyncio.sleep(0.3)  # quiet between changes
        return row

    rows = []
    print(f"\n{mode}: {'change':20s} {'counts':>8s} {'diagram':>8s} {'kernel free':>12s} {'totals':>8s}   "
          f"baseline: every graph {'partition':>9s} {'+ svg':>7s}")
    top = ex.controls["min_block_size"].max
    for _ in range(n):
        v = next(fresh)
        if v > top:
            break
        row = await change(v, wait=True)
        tb = time.perf_counter()
        every = hv.partition(multi, config=ex.config)  # the old explorer's work for this change, alone
        tp = time.perf_counter() - tb
        every.render().pipe(format="svg")
        tr = time.perf_counter() - tb
        base.append(tr)
        rows.append(row)
        print(f"{mode}: {'settled: mbs ' + str(v):20s} {row['counts']:8.3f} {row['diagram']:8.3f} "
              f"{row['free']:12.3f} {row['totals']:8.3f}   {'':22s}{tp:9.3f} {tr:7.3f}")
    for _ in range(n):
        v = next(fresh)
        if v > top:
            break
        row = await change(v, wait=False)
        rows.append(row)
        print(f"{mode}: {'burst: mbs ' + str(v):20s} {row['counts']:8.3f} {row['diagram']:8.3f} {row['free']:12.3f}")
    t = time.perf_counter()
    settle(gx)
    print(f"{mode}: after the burst, the totals are current {time.perf_counter() - t:.3f} s later "
          f"(min_block_size {gx.partition.config.min_block_size}); internal errors: {gx.internal_errors}, "
          f"error: {gx.error.value or 'none'}")
    gx.close()
    return rows


if __name__ == "__main__":
    sys.exit(main())
