"""What `import hierviz` costs on top of `import torch`, from `python -X importtime`.

    python benchmarks/import_time.py            # 5 fresh interpreters, medians
    python benchmarks/import_time.py --runs 9

Each run is a fresh interpreter doing `import torch; import hierviz`; -X importtime reports
every module's own and cumulative import time. Printed, median over the runs:

- torch:                 `import torch` itself, for scale
- hierviz (cumulative):  everything `import hierviz` triggers after torch (its own modules plus
                         whatever they import that torch had not), the figure the target is on
- hierviz's own modules: the self time of hierviz.* modules alone
- heavy modules:         which of pandas, ipywidgets, tqdm, graphviz, matplotlib `import hierviz`
                         added (none: they load on first use)

Beside them, in the same run, upstream: `import torch_tensorrt` on top of torch (wall clock,
through hierviz.trt, which answers its CUDA queries on a machine without a GPU; hierviz defers
it until TensorRT support is first asked for), and pandas' import, which hierviz now defers
to the first table (`ops()`, `nodes()`, `summary()`).
Target (issue 13): hierviz adds at most 0.3 s on top of `import torch`.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 0.3
HEAVY = ("pandas", "ipywidgets", "tqdm", "graphviz", "matplotlib")
LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def importtime(code: str) -> dict[str, tuple[float, float, int]]:
    """module -> (self s, cumulative s, nesting depth) from one fresh interpreter running `code`."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {code}\n{proc.stderr[-3000:]}")
    out: dict[str, tuple[float, float, int]] = {}
    for line in proc.stderr.splitlines():
        m = LINE.match(line)
        if m:
            out[m.group(4)] = (int(m.group(1)) / 1e6, int(m.group(2)) / 1e6, len(m.group(3)))
    return out


def wall(code: str) -> float:
    """The number `code` prints last, from a fresh interpreter (a wall-clock time it measured)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {code}\n{proc.stderr[-3000:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def heavy_added() -> list[str]:
    code = ("import sys, torch; before = set(sys.modules); import hierviz; "
            f"print(','.join(m for m in {HEAVY!r} if m in set(sys.modules) - before))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    return [m for m in proc.stdout.strip().splitlines()[-1].split(",") if m] if proc.stdout.strip() else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    torch_s, cumulative, own, upstream, pandas_s = [], [], [], [], []
    for _ in range(args.runs):
        t = importtime("import torch; import hierviz")
        torch_s.append(t["torch"][1])
        cumulative.append(t["hierviz"][1])
        own.append(sum(s for name, (s, _, _) in t.items() if name == "hierviz" or name.startswith("hierviz.")))
        upstream.append(wall("import torch, hierviz.trt as trt, time; t = time.perf_counter(); "
                             "trt.available(); print(time.perf_counter() - t)"))
        p = importtime("import torch, hierviz; import pandas")
        pandas_s.append(p["pandas"][1] if "pandas" in p else 0.0)
    med = statistics.median
    heavy = heavy_added()
    print(f"import time, median of {args.runs} fresh interpreters (python {sys.version.split()[0]})")
    print(f"  import torch                               {med(torch_s):6.3f} s")
    print(f"  import hierviz on top (cumulative)         {med(cumulative):6.3f} s   target <= {TARGET_S} s")
    print(f"  hierviz's own modules (self time)          {med(own):6.3f} s")
    print(f"  heavy modules import hierviz added         {', '.join(heavy) or 'none'}")
    print(f"  upstream: import torch_tensorrt on top     {med(upstream):6.3f} s")
    print(f"  pandas, loaded on first table instead      {med(pandas_s):6.3f} s")
    ok = med(cumulative) <= TARGET_S and not heavy
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
