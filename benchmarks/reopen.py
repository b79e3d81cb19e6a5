"""A notebook re-opened: what a new process waits for before its first picture, the capture
cached (issue 38), beside the import of Torch-TensorRT it no longer needs.

    python benchmarks/reopen.py [--models qwen2_6,llama] [--repeat 1]

For each model, in a fresh temporary HIERVIZ_CACHE_DIR (never the user's own cache):
1. one process captures the model (a miss: export, Torch-TensorRT's lowering, its validated
   verdicts) and stores it;
2. one process times `import torch_tensorrt` alone, through hierviz's GPU-free loader
   (`hierviz.trt.load()`), after torch, transformers and hierviz are imported;
3. `--repeat` new processes each time, with the capture cached: `hv.partition(model, x,
   min_block_size=3)` until the Partition, then its first SVG (`save("x.svg")`), then
   `hv.explore(model, x, min_block_size=3)` until its first diagram (`Explorer.svg`), and say
   whether torch_tensorrt is in `sys.modules` after the partition and after the explorer.

Models: "qwen2_6" (transformers' Qwen2, 6 layers, hidden 128, random weights; benchmarks/llm.py)
and "llama" (the zoo's). Target: the re-opened partition <= 0.25x the import alone, and no
torch_tensorrt import. Process start and the imports of torch, transformers and hierviz are
not part of any figure.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from cache_child import run_child  # benchmarks/cache_child.py, beside this script

HERE = Path(__file__).resolve().parent
TARGET = 0.25

BUILD = r"""
import sys
sys.path.insert(0, HERE)
import torch, transformers
import hierviz as hv
def build(name):
    if name == "qwen2_6":
        import llm
        return llm.qwen2(6, 128)
    return hv.zoo.load(name)
model, x = build(MODEL)
"""

CAPTURE = BUILD + r"""
gm = hv.capture(model, x)
print(json.dumps({"nodes": len(gm.graph.nodes)}))
"""

IMPORT = BUILD + r"""
import time
from hierviz import trt
start = time.perf_counter()
trt.load()
print(json.dumps({"import_s": time.perf_counter() - start, "ok": trt.available()}))
"""

REOPEN = BUILD + r"""
import os, time
t0 = time.perf_counter()
part = hv.partition(model, x, min_block_size=3)
t1 = time.perf_counter()
after_partition = "torch_tensorrt" in sys.modules
part.save(os.path.join(TMP, "first.svg"))
t2 = time.perf_counter()
ex = hv.explore(model, x, min_block_size=3)
drawn = ex.svg is not None
t3 = time.perf_counter()
print(json.dumps({"partition_s": t1 - t0, "svg_s": t2 - t1, "explore_s": t3 - t2, "drawn": drawn,
                  "cached": any("disk cache" in n for n in part.notes), "subgraphs": part.stats["subgraphs"],
                  "trt_after_partition": after_partition, "trt_after_explore": "torch_tensorrt" in sys.modules,
                  "errors": sorted(ex.controller.errors)}))
"""


def child(code: str, cache_dir: str) -> dict:
    return run_child("import json\n" + code, cache_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="qwen2_6,llama")
    parser.add_argument("--repeat", type=int, default=1, help="re-opened processes timed per model (best kept)")
    args = parser.parse_args(argv)
    print(f"{'model':8} {'nodes':>6} {'import trt s':>12} {'partition s':>12} {'/import':>8} {'1st svg s':>10} "
          f"{'explore s':>10} {'trt imported':>13}")
    ok = True
    for model in args.models.split(","):
        with tempfile.TemporaryDirectory(prefix="hierviz-bench-reopen-") as tmp:
            head = f"HERE, MODEL, TMP = {str(HERE)!r}, {model!r}, {tmp!r}\n"
            nodes = child(head + CAPTURE, tmp)["nodes"]
            imported = child(head + IMPORT, tmp)
            runs = [child(head + REOPEN, tmp) for _ in range(args.repeat)]
        best = min(runs, key=lambda r: r["partition_s"])
        assert all(r["cached"] and r["drawn"] for r in runs), runs
        ratio = best["partition_s"] / imported["import_s"]
        trt_seen = any(r["trt_after_partition"] or r["trt_after_explore"] for r in runs)
        ok = ok and ratio <= TARGET and not trt_seen
        print(f"{model:8} {nodes:>6} {imported['import_s']:>12.2f} {best['partition_s']:>12.3f} {ratio:>7.2f}x "
              f"{best['svg_s']:>10.3f} {best['explore_s']:>10.3f} {'yes' if trt_seen else 'no':>13}", flush=True)
    print(f"target: re-opened partition <= {TARGET}x the import alone, torch_tensorrt not imported: "
          f"{'met' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
