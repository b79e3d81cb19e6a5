"""Re-opening a model: hv.partition in a new process, first capture (a miss) against a capture
from the disk cache (a hit), in the same run.

    python benchmarks/capture_cache.py [--models llama,qwen2] [--repeat 2]

Each measurement is a new Python process with a fresh temporary HIERVIZ_CACHE_DIR (never the
user's own cache): it imports torch, transformers, hierviz and Torch-TensorRT and builds the
model (random weights, no download; benchmarks/llm.py), then times `hv.partition(model, x)`:
that time, "beyond imports", is what a notebook restart or a CLI call waits for. The first
process of each model captures (export + Torch-TensorRT's lowering) and stores the capture;
the next ones take it from the cache (hash the weights, read the entry, run it once against
the model's outputs) and partition.

Targets (issue 29): a 24-layer Llama (hidden 256) <= 0.5 s beyond imports on a hit (was 5.7 s:
a capture every time); a 12-layer Qwen2 <= 0.25x its first capture.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from cache_child import run_child  # benchmarks/cache_child.py, beside this script

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, sys, time
sys.path.insert(0, {here!r})
import torch, transformers
import hierviz as hv
from hierviz import trt
trt.load()  # Torch-TensorRT imported too: an import, not part of the wait
import llm
model, inputs = llm.MODELS[{model!r}]()
start = time.perf_counter()
part = hv.partition(model, inputs)
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "nodes": len(part.graph.graph.nodes),
                  "subgraphs": part.stats["subgraphs"],
                  "cached": any("disk cache" in n for n in part.notes)}}))
"""


def run(model: str, cache_dir: str) -> dict:
    return run_child(CHILD.format(here=str(HERE), model=model), cache_dir, f"{model}: the child process")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama,qwen2")
    parser.add_argument("--repeat", type=int, default=2, help="cache hits measured per model")
    args = parser.parse_args(argv)
    print(f"{'model':8} {'nodes':>6} {'subgraphs':>9} {'first (miss) s':>15} {'hit s':>8} {'hit/first':>10}")
    for model in args.models.split(","):
        with tempfile.TemporaryDirectory(prefix="hierviz-bench-cache-") as cache_dir:
            first = run(model, cache_dir)
            hits = [run(model, cache_dir) for _ in range(args.repeat)]
        assert not first["cached"] and all(h["cached"] for h in hits), (first, hits)
        best = min(h["seconds"] for h in hits)
        print(f"{model:8} {first['nodes']:>6} {first['subgraphs']:>9} {first['seconds']:>15.2f} {best:>8.3f} "
              f"{best / first['seconds']:>9.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
