"""How many modules one min_block_size change passes through before the picture changes.

    python benchmarks/slider_hops.py [--model resnet18] [--value 3]

Builds an Explorer (debounce=0, so `.value = ...` applies synchronously, as a click does after
its debounce) on a zoo model, warms the setting's partition and picture (so the count is of the
explorer's own path, not the partitioner's or graphviz's first run; --cold: not warmed), then traces (sys.setprofile)
every Python function entered between the slider's change and the diagram panel's write.
Printed: the hierviz modules entered, in the order first entered, their count, and the number of
module-to-module hops (a call whose caller is in another hierviz module).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import hierviz as hv
from hierviz import zoo


def trace_change(ex: Any, value: int) -> tuple[list[str], int]:
    modules: list[str] = []
    hops = 0
    done = False

    def on_diagram(_change: Any) -> None:
        nonlocal done
        done = True

    ex.panels["diagram"].observe(on_diagram, names="value")

    def profile(frame: Any, event: str, _arg: Any) -> None:
        nonlocal hops
        if done or event != "call":
            return
        mod = frame.f_globals.get("__name__", "")
        if not mod.startswith("hierviz"):
            return
        caller = frame.f_back
        caller_mod = caller.f_globals.get("__name__", "") if caller is not None else ""
        if caller_mod != mod and caller_mod.startswith("hierviz"):
            hops += 1
        if mod not in modules:
            modules.append(mod)

    sys.setprofile(profile)
    try:
        ex.controls["min_block_size"].value = value
    finally:
        sys.setprofile(None)
    return modules, hops


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--value", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="a setting not seen before (partition and layout made)")
    args = ap.parse_args()
    model, inputs = zoo.load(args.model)
    ex = hv.explore(model, inputs, debounce=0)
    start = ex.controls["min_block_size"].value
    if not args.cold:
        ex.controls["min_block_size"].value = args.value  # warm: partition and picture cached
        ex.controls["min_block_size"].value = start
    modules, hops = trace_change(ex, args.value)
    for m in modules:
        print(m)
    print(f"{len(modules)} hierviz modules, {hops} module-to-module calls, before the diagram changed")
    ex.close()


if __name__ == "__main__":
    main()
