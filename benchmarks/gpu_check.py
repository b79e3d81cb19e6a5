#!/usr/bin/env python
"""GPU check of hv.measure's TensorRT path: one run, at most 5 minutes, on one GPU.

    python benchmarks/gpu_check.py [OUT.json] [--models tiny_conv,resnet18,bert,...] [--budget 270]

Run from the repository root without installing hierviz (the repo is put on sys.path).
In order, so that what matters is measured first:
  1. the environment: Python, torch, Torch-TensorRT variant (standard / RTX), TensorRT version,
     GPU, compute capability, and whether this TensorRT can build for it (and why not);
  2. a TensorRT smoke test on tiny_conv (every TensorRT subgraph must compile and match eager);
  3. per model, small ones first: `tensorrt` (TensorRT only, the rest eager) and `mixed`
     (TensorRT + TorchInductor + eager in one split model), then `inductor` for reference;
  4. with time left: a numerics row (issue 25): resnet18 cast to FP16 under TensorRT (with
     --cpu: BF16 under TorchInductor), measured, then hv.numerics on the same compiled subgraphs:
     compiled again (must be 0), where the error starts, the largest isolated error and its ratio
     to the FP16 tolerance, and the check's time against one measured iteration;
  5. with time left (and unless --no-tune): hv.tune on tiny_conv with TensorRT in its space,
     the best setting compiled (Partition.compile), saved, loaded back and checked (issue 15),
     and "compile today vs best hierarchical": tune's compile_ms baseline (what
     torch_tensorrt.compile runs) beside the best hierarchical setting.
Per model, `compile` is the partition torch_tensorrt.compile makes (engine="fast"), beside
`tensorrt` (hierviz's, TensorRT only).
Each row: subgraphs by the backend that actually RAN, fallbacks, precision (strict FP32 unless
--tf32, the same for every backend), latency against eager, compile time (cold / warm),
outputs match. Results go to OUT.json (rewritten after every row, for the README table).
A config still running when the budget ends is stopped; none starts after it.

Exit status: 0 all good; 1 a TensorRT config fell back, failed, was stopped or did not match;
2 hierviz or torch cannot be imported; 3 no CUDA device (nothing to measure: the environment
report is still printed and written).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS = ("tiny_conv", "resnet18", "bert", "gpt2", "resnet50", "vit_b_16")
EXIT_OK, EXIT_TRT_PROBLEM, EXIT_IMPORT, EXIT_NO_CUDA = 0, 1, 2, 3
ACTIVATIONS = ("torch.ops.aten.relu.default", "torch.ops.aten.gelu.default", "torch.ops.aten.silu.default")
EAGER_OPS = ("torch.ops.aten._native_batch_norm_legit_no_training.default", "torch.ops.aten.native_layer_norm.default",
             "torch.ops.aten._softmax.default", "torch.ops.aten.add.Tensor")


logger = logging.getLogger("gpu_check")


class Stopped(Exception):
    """The time budget ended while a config was running."""


def _on_alarm(signum, frame):
    raise Stopped("time budget spent while this config was running")


def environment() -> dict:
    """Versions, GPU and the TensorRT verdict, without needing a GPU."""
    from importlib.metadata import PackageNotFoundError, version

    env: dict = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in ("torch", "torchvision", "transformers", "torch-tensorrt", "torch-tensorrt-rtx",
                 "tensorrt", "tensorrt-rtx"):
        try:
            env[dist] = version(dist)
        except PackageNotFoundError:
            env[dist] = None
    import torch

    env["cuda"] = torch.cuda.is_available()
    env["cuda_version"] = torch.version.cuda
    if env["cuda"]:
        env["gpu"] = torch.cuda.get_device_name(0)
        env["capability"] = "SM{}{}".format(*torch.cuda.get_device_capability(0))
    from hierviz import trt

    env["tensorrt"] = trt.info().to_dict()
    return env


def _pick(gm, names: tuple[str, ...]) -> str | None:
    present = {f"torch.ops.{n.target}" for n in gm.graph.nodes if n.op == "call_function"}
    return next((op for op in names if op in present), None)


def configs(hv, gm, trt_ok: bool) -> list[tuple[str, dict]]:
    """(name, partition settings): TensorRT-only and mixed first, then TorchInductor alone."""
    out = []
    if trt_ok:
        out.append(("tensorrt", dict(priority=("tensorrt",))))
        # what torch_tensorrt.compile runs with the same settings (its fast partitioner)
        out.append(("compile", dict(priority=("tensorrt",), engine="fast")))
        act, eager = _pick(gm, ACTIVATIONS), _pick(gm, EAGER_OPS)
        mixed = dict(priority=("inductor", "tensorrt"), min_block_size=1,
                     support={"inductor": hv.support.ops([act] if act else []), "tensorrt": hv.support.tensorrt()})
        if eager:
            mixed["torch_executed_ops"] = {eager}
        out.append(("mixed", mixed))
    out.append(("inductor", dict(priority=("inductor",), support={"inductor": hv.support.inductor()},
                                 min_block_size=1)))
    return out


def row_of(model: str, config: str, m) -> dict:
    ran = m.per_subgraph["backend"].value_counts().to_dict()
    fell = m.per_subgraph.loc[m.per_subgraph["status"] == "fallback"]
    return {"model": model, "config": config, "ran": {k: int(v) for k, v in ran.items()},
            "fallbacks": len(m.fallbacks), "fallback_detail": [
                {"tag": r.tag, "asked": r.asked, "error": r.error} for r in fell.itertuples()],
            "precision": "tf32" if m.precision.get("tf32") else "fp32", "precision_detail": m.precision,
            "median_ms": m.median_ms, "p10_ms": m.p10_ms, "p90_ms": m.p90_ms, "cv": m.cv,
            "eager_ms": m.baseline_ms, "speedup": m.speedup, "compile_s": m.compile_s,
            "compile_state": m.compile_state, "outputs_match": m.outputs_match,
            "max_abs_error": m.max_abs_error, "warnings": m.warnings}


def trt_problem(row: dict) -> bool:
    """A TensorRT config that fell back, failed, was stopped or did not match."""
    uses_trt = row["config"] in ("smoke", "tensorrt", "compile", "mixed")
    return uses_trt and ("error" in row or row.get("fallbacks", 0) > 0 or row.get("outputs_match") is not True)


def table(rows: list[dict]) -> str:
    head = ["model", "config", "ran", "fallbacks", "precision", "median_ms", "eager_ms", "speedup",
            "compile_s", "match", "max_abs_err"]
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append([r["model"], r["config"], "ERROR: " + r["error"][:90]] + [""] * (len(head) - 3))
            continue
        ran = ",".join(f"{k}:{v}" for k, v in sorted(r["ran"].items()))
        state = ",".join(sorted(set(r["compile_state"].values()))) or "-"
        lines.append([r["model"], r["config"], ran, str(r["fallbacks"]), r["precision"], f"{r['median_ms']:.3f}",
                      "-" if r["eager_ms"] is None else f"{r['eager_ms']:.3f}",
                      "-" if r["speedup"] is None else f"{r['speedup']:.2f}",
                      f"{r['compile_s']:.1f} ({state})", str(r["outputs_match"]),
                      "-" if r["max_abs_error"] is None else f"{r['max_abs_error']:.2g}"])
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    out = ["  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", default="gpu_check.json", help="JSON file to write")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated zoo names, run in this order")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--budget", type=float, default=270.0, help="seconds for the whole run (default 270)")
    ap.add_argument("--tf32", action="store_true", help="allow TF32 on every backend (default: strict FP32)")
    ap.add_argument("--no-tune", action="store_true", help="skip the hv.tune + compile/save/load check at the end")
    ap.add_argument("--cpu", action="store_true",
                    help="without a GPU: run the loop on CPU with TorchInductor only (tests this script)")
    args = ap.parse_args(argv)
    start = time.time()
    out_path = Path(args.out)
    report: dict = {"results": [], "skipped": []}

    def write() -> None:
        report["elapsed_s"] = round(time.time() - start, 1)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(report, indent=1, default=str))

    try:
        import torch

        import hierviz as hv
        from hierviz.latency import CompileCache, MeasureWarning
        report["environment"] = env = environment()
    # a package that is not installed or whose native library does not load; torch's CUDA set-up
    except (ImportError, OSError, RuntimeError) as exc:
        report["error"] = f"cannot import torch / hierviz: {type(exc).__name__}: {exc}"
        print(report["error"])
        write()
        return EXIT_IMPORT
    info = env["tensorrt"]
    print("environment:")
    for key in ("python", "torch", "torch-tensorrt", "torch-tensorrt-rtx", "cuda_version", "gpu", "capability"):
        print(f"  {key:20s} {env.get(key)}")
    print(f"  {'tensorrt':20s} {info['summary']}")
    if not env["cuda"] and not args.cpu:
        report["verdict"] = "no CUDA device"
        print("\nno CUDA device: gpu_check needs an NVIDIA GPU; nothing was measured "
              f"(exit {EXIT_NO_CUDA}). Partitioning works here; run this on a GPU machine.")
        write()
        print(f"wrote {out_path}")
        return EXIT_NO_CUDA
    trt_ok = bool(info["can_build"]) and not args.cpu
    device = "cpu" if args.cpu else "cuda"
    report["verdict"] = "TensorRT can build here" if trt_ok else f"TensorRT cannot build here: {info['reason']}"
    print(f"verdict: {report['verdict']}\n")
    warnings.simplefilter("ignore", MeasureWarning)  # they are in the rows and the JSON
    signal.signal(signal.SIGALRM, _on_alarm)
    cache = CompileCache()
    settings = dict(device=device, warmup=args.warmup, iters=args.iters, cache=cache, on_error="fallback",
                    tf32=args.tf32)
    report["settings"] = {k: v for k, v in settings.items() if k != "cache"} | {"budget_s": args.budget}

    def run(model: str, config: str, gm, inputs, cfg: dict) -> None:
        left = args.budget - (time.time() - start)
        if left < 5:
            report["skipped"].append({"model": model, "config": config, "why": "time budget spent"})
            print(f"  {config}: skipped, time budget spent")
            return
        t0 = time.time()
        signal.alarm(max(1, int(left)))
        try:
            cfg = dict(cfg)
            m = hv.measure(hv.partition(gm, engine=cfg.pop("engine", "hierviz"), **cfg), inputs, **settings)
            row = row_of(model, config, m)
        except (Exception, Stopped) as exc:  # the check's boundary: one failing config must not stop it
            logger.error("%s %s failed", model, config, exc_info=True)
            row = {"model": model, "config": config, "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc(limit=6)}
        finally:
            signal.alarm(0)
        row["wall_s"] = round(time.time() - t0, 1)
        report["results"].append(row)
        write()
        if "error" in row:
            print(f"  {config}: ERROR {row['error'][:300]}")
        else:
            speedup = "-" if row["speedup"] is None else f"{row['speedup']:.2f}"
            print(f"  {config}: {row['median_ms']:.3f} ms, speedup {speedup}, ran {row['ran']}, "
                  f"fallbacks {row['fallbacks']}, match {row['outputs_match']} [{row['wall_s']} s]")

    first = True
    for name in args.models.split(","):
        if time.time() - start > args.budget - 5:
            report["skipped"].append({"model": name, "why": "time budget spent"})
            continue
        signal.alarm(max(1, int(args.budget - (time.time() - start))))
        try:
            model, inputs = hv.zoo.load(name)
            model = model.eval().to(device)
            inputs = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs)
            gm = hv.capture(model, inputs)
        except (Exception, Stopped) as exc:  # the check's boundary: torchvision missing, a capture failure ...
            logger.error("%s skipped", name, exc_info=True)
            report["skipped"].append({"model": name, "why": f"{type(exc).__name__}: {exc}"})
            print(f"skip {name}: {type(exc).__name__}: {exc}")
            continue
        finally:
            signal.alarm(0)
        print(f"{name}: {len(gm.graph.nodes)} nodes")
        if first and trt_ok:  # the smoke test: every TensorRT subgraph compiles and matches
            run(name, "smoke", gm, inputs, dict(priority=("tensorrt",), min_block_size=1))
            first = False
        for config, cfg in configs(hv, gm, trt_ok):
            run(name, config, gm, inputs, cfg)
        del model, gm
        cache.clear()  # frees the engines' GPU memory before the next model

    left = args.budget - (time.time() - start)
    if left > 30:
        signal.alarm(max(1, int(left - 5)))
        try:
            report["numerics"] = numerics_row(hv, device, trt_ok, cache)
        except Stopped as exc:
            report["numerics"] = {"error": f"Stopped: {exc}"}
        finally:
            signal.alarm(0)
        cache.clear()
        write()
    else:
        report["skipped"].append({"model": "resnet18", "config": "numerics", "why": "time budget spent"})
    if "error" in report.get("numerics", {}) or report.get("numerics", {}).get("compiled_again"):
        report["skipped"].append({"model": "resnet18", "config": "numerics",
                                  "why": report["numerics"].get("error") or "hv.numerics compiled again"})

    left = args.budget - (time.time() - start)
    if trt_ok and not args.no_tune and left > 60:
        report["tune"] = tune_check(out_path.with_suffix(".tune"), device, budget_s=left - 10)
        write()
        if not report["tune"].get("ok"):
            problems_tune = report["tune"].get("problem", "hv.tune check failed")
            report["skipped"].append({"model": "tiny_conv", "config": "tune", "why": problems_tune})
    elif trt_ok and not args.no_tune:
        report["skipped"].append({"model": "tiny_conv", "config": "tune", "why": "time budget spent"})

    print()
    print(table(report["results"]))
    for s in report["skipped"]:
        print(f"skipped {s['model']}{'/' + s['config'] if 'config' in s else ''}: {s['why']}")
    problems = [f"{r['model']}/{r['config']}" for r in report["results"] if trt_problem(r)]
    if "tune" in report and not report["tune"].get("ok"):
        problems.append(f"tune: {report['tune'].get('problem')}")
    if trt_ok and ("error" in report.get("numerics", {}) or report.get("numerics", {}).get("compiled_again")):
        problems.append("numerics: " + str(report["numerics"].get("error") or "hv.numerics compiled again"))
    if not trt_ok:
        problems.insert(0, "TensorRT was not measured: " + str(info["reason"]))
    report["trt_problems"] = problems
    write()
    print(f"\nwrote {out_path} ({report['elapsed_s']} s)")
    if problems:
        print("TensorRT problems: " + "; ".join(problems))
        return EXIT_TRT_PROBLEM
    return EXIT_OK


# ----------------------------------------------------------------------------- issue 25: numerics
def numerics_row(hv, device: str, trt_ok: bool, cache, model_name: str = "resnet18", size: int | None = None) -> dict:
    """`model_name` cast to FP16 and partitioned for TensorRT (BF16 and TorchInductor where
    TensorRT cannot build), measured, then checked with hv.numerics on the same compile cache.
    `size`: the image side for image models (default: the zoo's; the CPU test uses a small one).
    Returns a JSON-able dict (with `error` when something failed)."""
    import torch

    half = torch.float16 if trt_ok else torch.bfloat16
    out: dict = {"model": model_name, "dtype": str(half).replace("torch.", ""),
                 "backend": "tensorrt" if trt_ok else "inductor"}
    started = time.time()
    try:
        model, inputs = hv.zoo.load(model_name)
        if size is not None:
            inputs = tuple(torch.randn(*t.shape[:-2], size, size) if t.dim() == 4 else t for t in inputs)
        model = model.eval().to(device=device, dtype=half)
        inputs = tuple(t.to(device=device, dtype=half) if t.is_floating_point() else t.to(device) for t in inputs)
        cfg = (dict(priority=("tensorrt",)) if trt_ok else
               dict(priority=("inductor",), support={"inductor": hv.support.inductor()}))
        part = hv.partition(model, inputs, **cfg)
        m = hv.measure(part, inputs, device=device, cache=cache, warmup=1, iters=5, per_subgraph=False,
                       on_error="fallback")
        r = hv.numerics(part, inputs, device=device, cache=cache, on_error="fallback")
        t = r.per_subgraph
        worst = t.loc[t["isolated_ratio"].idxmax()] if len(t) else None
        out.update(subgraphs=len(t), ran={k: int(v) for k, v in t["backend"].value_counts().items()},
                   fallbacks=len(r.fallbacks), culprit=r.culprit, failing=len(r.failing),
                   outputs_match=r.outputs_match, max_abs_error=r.max_abs_error,
                   worst_tag=None if worst is None else worst["tag"],
                   worst_isolated_max_abs=None if worst is None else float(worst["isolated_max_abs"]),
                   worst_ratio=None if worst is None else float(worst["isolated_ratio"]),
                   tolerance=None if worst is None else worst["tolerance"],
                   compiled_again=r.cache_misses, check_ms=round(r.check_s * 1e3, 2),
                   iteration_ms=round(m.median_ms, 3), measure_outputs_match=m.outputs_match)
        print(f"\nnumerics: {model_name} {out['dtype']} under {out['backend']}: {r!r}\n"
              f"  compiled again {r.cache_misses}, check {out['check_ms']} ms "
              f"vs one iteration {out['iteration_ms']} ms")
    except Exception as exc:  # the check's boundary: reported in the JSON, never stops the check
        logger.error("the numerics check failed", exc_info=True)
        out.update(error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=6))
        print(f"\nnumerics check failed: {out['error'][:300]}")
    out["wall_s"] = round(time.time() - started, 1)
    return out


# ----------------------------------------------------------------------------- issue 15: tune + deploy
def tune_check(folder: Path, device: str, budget_s: float, model_name: str = "tiny_conv") -> dict:
    """hv.tune with TensorRT in its space on `model_name`, then the best setting compiled,
    saved to `folder`, loaded back and checked against the model. Returns a JSON-able dict
    with `ok` (and `problem` when not)."""
    import torch

    import hierviz as hv
    from hierviz.latency.deploy import load

    out: dict = {"model": model_name}
    started = time.time()
    try:
        model, inputs = hv.zoo.load(model_name)
        model = model.eval().to(device)
        inputs = tuple(t.to(device) for t in inputs)
        res = hv.tune(model, inputs, budget=8, timeout=max(10.0, budget_s * 0.6), device=device,
                      measure={"warmup": 5, "iters": 30}, progress=False)
        t = res.trials
        out["trials"] = t[["trial", "priority", "min_block_size", "subgraphs", "median_ms", "outputs_match",
                           "fallbacks", "status"]].to_dict("records")
        out["best"] = res.best.label() if res.best else None
        out["tensorrt_tried"] = bool(t["priority"].str.contains("tensorrt").any())
        print(f"\nhv.tune on {model_name} ({device}):\n{res}")
        # compile today vs best hierarchical: torch_tensorrt.compile's fast partition (tune's
        # compile_ms baseline) beside the best setting hv.tune found
        best_ms = getattr(res.best_measurement, "median_ms", None)
        out["compile_today_ms"], out["best_hierarchical_ms"] = res.baselines.get("compile_ms"), best_ms
        out["compile_today_vs_best"] = (round(res.baselines["compile_ms"] / best_ms, 3)
                                        if res.baselines.get("compile_ms") and best_ms else None)
        print(f"compile today vs best hierarchical: torch_tensorrt.compile {out['compile_today_ms']} ms, "
              f"best hierarchical ({out['best']}) {best_ms} ms, ratio {out['compile_today_vs_best']}")
        if res.best is None:
            out.update(ok=False, problem="no trial qualified as best")
            return out
        compiled = hv.partition(model, inputs, res.best).compile(device, example_inputs=inputs)
        saved = compiled.save(folder)
        again = load(saved, device=device)
        with torch.no_grad():
            want = model(*inputs)
            ok = torch.allclose(again(*inputs), want, rtol=1e-3, atol=1e-3) and \
                torch.allclose(compiled(*inputs), want, rtol=1e-3, atol=1e-3)
        out["loaded_from_artifacts"] = {tag: r.status for tag, r in again.records.items()}
        out["ok"] = bool(ok) and out["tensorrt_tried"]
        if not out["ok"]:
            out["problem"] = "reloaded model does not match" if not ok else "TensorRT was not in the space"
        print(f"best {out['best']}: compiled, saved to {saved}, reloaded ({out['loaded_from_artifacts']}), "
              f"outputs match: {ok}")
    except Exception as exc:  # the check's boundary: reported in the JSON, never stops the check
        logger.error("the hv.tune check failed", exc_info=True)
        out.update(ok=False, problem=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=6))
        print(f"hv.tune check failed: {out['problem']}")
    out["wall_s"] = round(time.time() - started, 1)
    return out


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
