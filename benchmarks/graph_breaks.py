"""Graph by graph (issue 35): hierviz's capture-and-partition of a model torch.export refuses,
beside the real `torch.compile(model, backend="torch_tensorrt", options={"dryrun": True})` run
to its partitioner, in the same run; then re-partitioning the captured model for a new setting.

    python benchmarks/graph_breaks.py [--model fasterrcnn_mobilenet_v3_large_320_fpn] [--size 320]

The model is torchvision's, with random weights (weights=None, weights_backbone=None), on one
3 x size x size image. Printed, in one process:

- hierviz: `hv.capture(model, x, ir="torch_compile")` (dynamo's run with a recording backend,
  each graph lowered by Torch-TensorRT's own front half) and `hv.partition(cap, engine=...)`
  for engines fast (what torch.compile partitions) and hierviz;
- upstream: `torch.compile(model, backend="torch_tensorrt", dynamic=False, options={"dryrun":
  True})` on a CPU, the CUDA queries answered, each graph's `compile_module` run to its
  partitioner and stopped there (the partition recorded, the lowered graph run eagerly so the
  model's run goes on): hierviz.trt.stopped_at_partitioner, as tests/partitioner use it, traced
  for the device hv.capture traces for (target_device, "cuda" by default). The
  graphs it reached, and those whose lowering failed on a CPU, are counted;
- re-partitioning the captured multi-graph model for settings not seen before
  (`hv.partition(cap, min_block_size=...)`, engine hierviz and fast), each timed; target
  <= 0.3 s for fasterrcnn (the explorer's interactive budget).

Dynamo's caches are reset before each timed part, so each starts cold (imports are done first,
for both sides).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_S = 0.3


def load(name: str, size: int):
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None).eval()
    return model, ([torch.rand(3, size, size)],)


def upstream_dryrun(model, inputs) -> tuple[float, list[dict], int]:
    """(seconds, per graph reached {partitioner, blocks}, graphs handed to the backend): the real
    torch.compile path with the torch_tensorrt backend, on a CPU, stopped at each partitioner."""
    from hierviz import trt
    from hierviz.capturing.target_device import DEFAULT_TARGET, lowering_for

    with trt.stopped_at_partitioner() as graphs:
        start = time.perf_counter()
        trt.compile_dryrun(model, inputs, lowering=lowering_for(DEFAULT_TARGET))
        seconds = time.perf_counter() - start
    reached = [{"partitioner": run[0] if run else None,
                "blocks": sum(1 for n, _ in run[1].named_children() if n.startswith("_run_on_acc")) if run else 0}
               for g in graphs if g.reached for run in g.runs]
    return seconds, reached, len(graphs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="fasterrcnn_mobilenet_v3_large_320_fpn")
    ap.add_argument("--size", type=int, default=320, help="image side (default 320)")
    args = ap.parse_args()

    import logging

    import torch

    import hierviz as hv
    from hierviz import trt

    logging.getLogger("torch_tensorrt").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    if not trt.available():
        print("needs torch_tensorrt (its torch.compile backend is the reference)")
        return 1
    trt.require()  # both sides start with torch_tensorrt imported (it registers the torch_tensorrt backend)
    import torch_tensorrt
    model, x = load(args.model, args.size)
    print(f"{args.model} (random weights), one 3x{args.size}x{args.size} image; torch {torch.__version__}, "
          f"torch_tensorrt {torch_tensorrt.__version__}, {torch.get_num_threads()} threads")

    theirs_s, reached, handed = upstream_dryrun(model, x)

    torch._dynamo.reset()
    start = time.perf_counter()
    cap = hv.capture(model, x, ir="torch_compile")
    capture_s = time.perf_counter() - start
    times = {}
    for engine in ("fast", "hierviz"):
        start = time.perf_counter()
        part = hv.partition(cap, engine=engine)
        times[engine] = time.perf_counter() - start
    s = part.stats
    print()
    print(f"{'':44} {'seconds':>8}  graphs")
    print(f"{'hierviz capture (ir=torch_compile)':44} {capture_s:8.2f}  {len(cap.graphs)} graphs, "
          f"{len(cap.breaks)} breaks")
    for engine, t in times.items():
        print(f"{'  + partition, engine=' + engine:44} {t:8.2f}  (capture + partition: {capture_s + t:.2f} s)")
    ok = sum(1 for r in reached if r["partitioner"] is not None)
    print(f"{'torch.compile(backend=torch_tensorrt, dryrun)':44} {theirs_s:8.2f}  {handed} graphs handed over, "
          f"{len(reached)} reached compile_module, {ok} partitioned"
          + (f" ({handed - len(reached)} failed on a CPU before partitioning)" if handed > len(reached) else ""))
    print(f"hierviz (engine=hierviz): {s['subgraphs']} subgraphs {s['subgraphs_by_backend']}, "
          f"{s['graphs_left_whole']} graph(s) left whole")

    print()
    print(f"re-partitioning the captured model for a new setting (target <= {TARGET_S} s):")
    for engine in ("hierviz", "fast"):
        seen = []
        for mbs in (3, 7, 2, 9, 4):
            start = time.perf_counter()
            hv.partition(cap, engine=engine, min_block_size=mbs)
            seen.append(time.perf_counter() - start)
        worst = max(seen)
        print(f"  engine={engine:8} min_block_size 3,7,2,9,4: median {statistics.median(seen):.3f} s, "
              f"max {worst:.3f} s  {'OK' if worst <= TARGET_S else 'OVER TARGET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
