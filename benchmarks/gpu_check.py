#!/usr/bin/env python
"""GPU check of hv.measure: zoo models under three configs each, TorchInductor against eager,
and TensorRT where torch_tensorrt is importable with a CUDA device.

    python benchmarks/gpu_check.py [OUT.json] [--models resnet50,bert,vit_b_16] [--iters 50]

Run from the repository root without installing hierviz (the repo is put on sys.path). Made
for one GPU in under 5 minutes: no new config starts after --budget seconds. Works with the
machine's own PyTorch, without torch_tensorrt, without network, and skips (and says so) models
whose packages (torchvision, transformers) are missing. Without CUDA it runs a small CPU smoke
check (tiny_conv) instead.

Configs per model:
  all_inductor        every op TorchInductor supports in one backend (min_block_size 1)
  inductor_split      the same with one common op (gelu / add / relu) forced to eager PyTorch
  inductor_split_mbs8 the split with min_block_size 8 (small inductor blocks demoted to eager)
  tensorrt            TensorRT first, then TorchInductor (only with torch_tensorrt and CUDA)
Each row gives the split model's latency (median, p10, p90, coefficient of variation), the eager
model's, the speedup, compile time and cache hits, and whether the outputs match eager.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

GPU_MODELS = ("resnet50", "bert", "vit_b_16")
CPU_MODELS = ("tiny_conv",)
SPLIT_OPS = ("torch.ops.aten.gelu.default", "torch.ops.aten.add.Tensor", "torch.ops.aten.relu.default")


def _versions() -> dict:
    out: dict = {"python": platform.python_version(), "platform": platform.platform()}
    for name in ("torch", "torchvision", "transformers", "pandas", "torch_tensorrt"):
        try:
            from importlib.metadata import version

            out[name] = version(name if name != "torch_tensorrt" else "torch-tensorrt")
        except Exception:  # noqa: BLE001 - absent is a fine answer
            out[name] = None
    return out


def _environment() -> dict:
    env = _versions()
    try:
        import torch

        env["cuda"] = torch.cuda.is_available()
        if env["cuda"]:
            env["gpu"] = torch.cuda.get_device_name(0)
            env["cuda_version"] = torch.version.cuda
        env["threads"] = torch.get_num_threads()
    except Exception as exc:  # noqa: BLE001
        env["torch_error"] = repr(exc)
    return env


def _configs(hv, gm, trt_ok: bool) -> list[tuple[str, dict]]:
    inductor = {"inductor": hv.support.inductor()}
    ops = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    present = [op for op in SPLIT_OPS if op.replace("torch.ops.", "") in ops]
    split = present[0] if present else None
    configs = [("all_inductor", dict(priority=("inductor",), support=inductor, min_block_size=1))]
    if split:
        label = split.split(".")[-2]
        configs.append((f"inductor_split[{label}]", dict(priority=("inductor",), support=inductor,
                                                          min_block_size=1, torch_executed_ops={split})))
        configs.append((f"inductor_split[{label}]_mbs8", dict(priority=("inductor",), support=inductor,
                                                               min_block_size=8, torch_executed_ops={split})))
    else:
        configs.append(("inductor_mbs8", dict(priority=("inductor",), support=inductor, min_block_size=8)))
    if trt_ok:
        configs.append(("tensorrt", dict(priority=("tensorrt", "inductor"), min_block_size=5,
                                         support={"tensorrt": hv.support.tensorrt(), **inductor})))
    return configs


def _row(model: str, config: str, part, m) -> dict:
    by = part.stats.get("subgraphs_by_backend", {})
    row = {"model": model, "config": config, "subgraphs": part.stats.get("subgraphs"),
           "by_backend": {k: v for k, v in by.items() if v}, **m.to_dict()}
    table = m.per_subgraph.sort_values("median_ms", ascending=False)
    row["per_subgraph_top"] = json.loads(table.head(15).to_json(orient="records"))
    return row


def _fmt(x, spec: str = ".3f") -> str:
    if x is None:
        return "-"
    try:
        return format(x, spec)
    except (TypeError, ValueError):
        return str(x)


def _table(rows: list[dict]) -> str:
    head = ["model", "config", "subgraphs", "median_ms", "p10_ms", "p90_ms", "cv%", "eager_ms",
            "eager_cv%", "speedup", "compile_s", "hits/miss", "match", "max_abs_err"]
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append([r["model"], r["config"], "ERROR: " + r["error"][:70]] + [""] * (len(head) - 3))
            continue
        by = ",".join(f"{k[:3]}{v}" for k, v in r["by_backend"].items())
        lines.append([
            r["model"], r["config"], f"{r['subgraphs']} ({by})", _fmt(r["median_ms"]), _fmt(r["p10_ms"]),
            _fmt(r["p90_ms"]), _fmt(100 * r["cv"], ".1f"), _fmt(r["baseline_ms"]),
            _fmt(None if r["baseline_cv"] is None else 100 * r["baseline_cv"], ".1f"),
            _fmt(r["speedup"], ".2f"), _fmt(r["compile_s"], ".1f"), f"{r['cache_hits']}/{r['cache_misses']}",
            str(r["outputs_match"]), _fmt(r["max_abs_error"], ".2g"),
        ])
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    out = []
    for k, line in enumerate(lines):
        out.append("  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", default="gpu_check.json", help="JSON file to write")
    ap.add_argument("--models", default=None, help="comma-separated zoo names")
    ap.add_argument("--iters", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--budget", type=float, default=200.0,
                    help="seconds after which no new config is started (default 200)")
    args = ap.parse_args(argv)
    start = time.time()
    report: dict = {"environment": _environment(), "results": [], "skipped": []}
    out_path = Path(args.out)

    def finish(code: int) -> int:
        report["elapsed_s"] = round(time.time() - start, 1)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(report, indent=1, default=str))
        print(f"\nwrote {out_path} ({report['elapsed_s']} s)")
        return code

    try:
        import torch

        import hierviz as hv
        from hierviz.latency import CompileCache, MeasureWarning
    except Exception as exc:  # noqa: BLE001
        report["error"] = f"cannot import torch / hierviz: {type(exc).__name__}: {exc}"
        print(report["error"])
        return finish(2)
    warnings.simplefilter("ignore", MeasureWarning)  # they are in the table and the JSON

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    trt_info = hv.trt.info()
    trt_ok = bool(trt_info.available and cuda)
    report["environment"]["tensorrt"] = str(trt_info)
    models = tuple(args.models.split(",")) if args.models else (GPU_MODELS if cuda else CPU_MODELS)
    iters = args.iters or (50 if cuda else 5)
    warmup = args.warmup if args.warmup is not None else (10 if cuda else 1)
    report["settings"] = {"device": device, "models": list(models), "iters": iters, "warmup": warmup,
                          "budget_s": args.budget, "tensorrt": trt_ok}
    print(f"hierviz gpu_check: device {device}"
          + (f" ({report['environment'].get('gpu')})" if cuda else " (no CUDA: CPU smoke check)")
          + f", torch {torch.__version__}, iters {iters}, warmup {warmup}")
    print(f"TensorRT: {'measured' if trt_ok else 'skipped'} ({trt_info})")

    cache = CompileCache()
    for name in models:
        if time.time() - start > args.budget:
            report["skipped"].append({"model": name, "why": f"time budget of {args.budget:.0f} s spent"})
            continue
        try:
            model, inputs = hv.zoo.load(name)
        except Exception as exc:  # noqa: BLE001 - missing torchvision / transformers, unknown name
            why = f"{type(exc).__name__}: {exc}"
            report["skipped"].append({"model": name, "why": why})
            print(f"skip {name}: {why}")
            continue
        try:
            model = model.to(device)
            inputs = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs)
            t0 = time.time()
            gm = hv.capture(model, inputs)
            print(f"{name}: captured {len(gm.graph.nodes)} nodes in {time.time() - t0:.1f} s")
        except Exception as exc:  # noqa: BLE001
            why = f"capture failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            report["skipped"].append({"model": name, "why": why})
            print(f"skip {name}: {why}")
            continue
        for config, cfg in _configs(hv, gm, trt_ok):
            if time.time() - start > args.budget:
                report["skipped"].append({"model": name, "config": config,
                                          "why": f"time budget of {args.budget:.0f} s spent"})
                print(f"skip {name}/{config}: time budget spent")
                continue
            t0 = time.time()
            try:
                part = hv.partition(gm, **cfg)
                m = hv.measure(part, inputs, device=device, warmup=warmup, iters=iters, cache=cache,
                               on_error="fallback")
                row = _row(name, config, part, m)
                row["wall_s"] = round(time.time() - t0, 1)
                print(f"  {config}: {m!r} [{row['wall_s']} s]")
            except Exception as exc:  # noqa: BLE001 - one failing config must not stop the check
                row = {"model": name, "config": config, "error": f"{type(exc).__name__}: {exc}",
                       "traceback": traceback.format_exc(limit=8), "wall_s": round(time.time() - t0, 1)}
                print(f"  {config}: ERROR {row['error'][:300]}")
            report["results"].append(row)
        del model, gm
        if cuda:
            torch.cuda.empty_cache()

    print()
    print(_table(report["results"]))
    for s in report["skipped"]:
        print(f"skipped {s['model']}{'/' + s['config'] if 'config' in s else ''}: {s['why']}")
    noisy = [f"{r['model']}/{r['config']}" for r in report["results"]
             if "cv" in r and (r["cv"] > 0.05 or (r.get("baseline_cv") or 0) > 0.05)]
    if noisy:
        print(f"noisy timings (cv > 5%): {', '.join(noisy)}")
    failed = any("error" in r for r in report["results"])
    return finish(1 if failed else 0)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
