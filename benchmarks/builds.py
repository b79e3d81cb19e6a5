"""Every zoo model's TensorRT engines converted and built on this machine (`part.build()`), and
the same build read back from the build cache in a new process.

    python benchmarks/builds.py                    # every zoo model, min_block_size=3
    python benchmarks/builds.py --models gpt2 bert

For each model, in one process with an empty build cache: `hv.partition` (its time beside the
build's, for scale), then `part.build(fix=False)`: per TensorRT subgraph its stage, layers,
engine bytes, convert and build seconds (Torch-TensorRT's converters and TensorRT's builder,
the work upstream's `torch_tensorrt.compile` does before it loads the engine). Then a second,
fresh process partitions the model again and times `part.build(fix=False)` from the cache (it
imports no torch_tensorrt for a hit). Target (issue 41): the cached build takes at most 0.1x
the first. The children write Python's bytecode cache, as a normal install does (this machine
sets PYTHONDONTWRITEBYTECODE; the first child writes the .pyc files the second reads).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.1

CHILD = r"""
import json, sys, time
import hierviz as hv
from hierviz import zoo
model, inputs = zoo.load(sys.argv[1])
start = time.perf_counter()
part = hv.partition(model, inputs, min_block_size=3)
partition_s = time.perf_counter() - start
start = time.perf_counter()
builds = part.build(fix=False)
build_s = time.perf_counter() - start
rows = [{k: (None if v != v else v) for k, v in r.items()} for r in builds.df.to_dict("records")]
print(json.dumps({"partition_s": partition_s, "build_s": build_s, "rows": rows, "builder": builds.builder,
                  "imported": "torch_tensorrt" in sys.modules}, default=str))
"""


def run(model: str, cache: str) -> dict:
    # Python's own bytecode cache as a normal install has it (this machine sets PYTHONDONTWRITEBYTECODE,
    # which makes every process compile hierviz's sources again, about 10 ms of a cached build)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HIERVIZ_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", CHILD, model], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"{model}: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    from hierviz import zoo

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", default=list(zoo.names()))
    args = ap.parse_args()
    worst = 0.0
    print(f"{'model':<20} {'subgraph':<24} {'stage':<8} {'layers':>6} {'engine bytes':>13} {'convert s':>9} "
          f"{'build s':>8}")
    summary = []
    for model in args.models:
        with tempfile.TemporaryDirectory(prefix="hierviz-builds-") as cache:
            first = run(model, cache)
            second = run(model, cache)
        for r in first["rows"]:
            build_s = "-" if r["build_s"] is None else f"{r['build_s']:.2f}"
            size = "-" if r["engine_bytes"] is None else f"{int(r['engine_bytes']):,}"
            print(f"{model:<20} {r['subgraph']:<24} {r['stage']:<8} {r['layers'] or '-':>6} {size:>13} "
                  f"{r['convert_s']:>9.2f} {build_s:>8}" + (f"  {r['error'][:90]}" if r["error"] else ""))
        ratio = second["build_s"] / first["build_s"] if first["build_s"] else 0.0
        worst = max(worst, ratio)
        cached = all(r["cached"] for r in second["rows"])
        summary.append((model, first["partition_s"], first["build_s"], second["build_s"], ratio, cached,
                        second["imported"]))
    from hierviz import trt

    trt.load()
    print(f"\nbuilt with {first['builder']}; TensorRT's own timing/runtime caches: {trt.build_state()} "
          "(hierviz's builds do not use them)")
    print(f"{'model':<20} {'hv.partition s':>14} {'first build s':>13} {'cached build s':>14} {'ratio':>6}  "
          f"{'all cached':>10}  torch_tensorrt imported when cached")
    for model, part_s, first_s, second_s, ratio, cached, imported in summary:
        print(f"{model:<20} {part_s:>14.2f} {first_s:>13.2f} {second_s:>14.3f} {ratio:>6.3f}  {str(cached):>10}  "
              f"{imported}")
    print(f"\nworst cached/first: {worst:.3f} (target <= {TARGET}): {'OK' if worst <= TARGET else 'MISSED'}")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
