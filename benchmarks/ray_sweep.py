"""hv.sweep of 8 measured configurations: here, one at a time, against a local 2-CPU Ray.

Target (issue 15): the Ray sweep, Ray's start-up included, finishes within 1.5x the local
sweep's time, with the same partition columns. Both start cold: each side gets its own empty
TorchInductor cache directory, and the local sweep runs in a fresh process like the Ray
workers do.

    python benchmarks/ray_sweep.py [--model tiny_conv] [--iters 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET = 1.5
GRID = {"min_block_size": [1, 3, 5, 8], "torch_executed_ops": [[], ["torch.ops.aten.relu.default"]]}
PARTITION_COLUMNS = ["priority", "min_block_size", "torch_executed_ops", "subgraphs", "acc_subgraphs",
                     "coverage", "boundary_tensors"]


def sweep(model_name: str, iters: int, executor: str | None, cache_dir: str) -> dict:
    """One sweep in this process (called in a fresh child process); returns its timing and table."""
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    import warnings

    warnings.simplefilter("ignore")
    started = time.perf_counter()
    import hierviz as hv

    model, inputs = hv.zoo.load(model_name)
    base = hv.Config(priority=("inductor",), support={"inductor": hv.support.inductor()})
    ray_start = 0.0
    if executor is not None:
        import ray

        from hierviz.compare.ray_executor import start_ray

        t = time.perf_counter()
        start_ray(ray, num_cpus=2, runtime_env={"env_vars": {"TORCHINDUCTOR_CACHE_DIR": cache_dir}})
        ray_start = time.perf_counter() - t
    t = time.perf_counter()
    df = hv.sweep(model, inputs, GRID, base=base, measure={"warmup": 3, "iters": iters}, executor=executor,
                  progress=False)
    sweep_s = time.perf_counter() - t
    return {"total_s": time.perf_counter() - started, "ray_start_s": ray_start, "sweep_s": sweep_s,
            "table": df[PARTITION_COLUMNS + ["median_ms", "compile_s", "error"]].to_dict("list")}


def child(model: str, iters: int, executor: str | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="hv-inductor-") as cache:
        code = (f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks.ray_sweep import sweep; "
                f"print('JSON' + json.dumps(sweep({model!r}, {iters}, {executor!r}, {cache!r}), default=str))")
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=1800)
        wall = time.perf_counter() - started
    line = next((x for x in out.stdout.splitlines() if x.startswith("JSON")), None)
    if line is None:
        raise SystemExit(f"the {executor or 'local'} sweep failed:\n{out.stderr[-3000:]}")
    result = json.loads(line[4:])
    result["process_s"] = wall
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="tiny_conv")
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    import pandas as pd

    local = child(args.model, args.iters, None)
    remote = child(args.model, args.iters, "ray")
    a, b = pd.DataFrame(local["table"]), pd.DataFrame(remote["table"])
    same = a[PARTITION_COLUMNS].equals(b[PARTITION_COLUMNS])
    print(f"hv.sweep of {len(a)} configurations of {args.model}, measured ({args.iters} timed calls), "
          "inductor + PyTorch on the CPU; each side in a fresh process with an empty TorchInductor cache")
    print(f"{'':34}{'local':>10}{'Ray (2 CPUs)':>14}")
    print(f"{'Ray start-up (ray.init)':34}{'-':>10}{remote['ray_start_s']:>14.1f}")
    print(f"{'sweep call':34}{local['sweep_s']:>10.1f}{remote['sweep_s']:>14.1f}")
    print(f"{'process (imports, capture, all)':34}{local['process_s']:>10.1f}{remote['process_s']:>14.1f}")
    joined = a[["min_block_size", "torch_executed_ops", "subgraphs"]].copy()
    joined["torch_executed_ops"] = joined["torch_executed_ops"].str.replace("torch.ops.aten.", "", regex=False)
    joined["local_ms"], joined["ray_ms"] = a["median_ms"], b["median_ms"]
    joined["local_compile_s"], joined["ray_compile_s"] = a["compile_s"], b["compile_s"]
    print(joined.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    ratio = (remote["ray_start_s"] + remote["sweep_s"]) / local["sweep_s"]
    print(f"partition columns equal: {same}")
    print(f"Ray (start-up + sweep) / local sweep = {ratio:.2f}x (target <= {TARGET}x: "
          f"{'ok' if ratio <= TARGET else 'MISSED'}); whole processes: "
          f"{remote['process_s'] / local['process_s']:.2f}x")
    return 0 if same and ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
