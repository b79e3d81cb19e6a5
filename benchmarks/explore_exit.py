"""How long Python takes to exit with the Explorer's "find fastest" running (issue 36), and
whether closing one Explorer leaves another's search going (issue 43).

    python benchmarks/explore_exit.py [--runs 20] [--model resnet18] [--baseline-runs 5]

Each run is a fresh interpreter running a script that opens an Explorer on a zoo model, starts
"find fastest" (a real hv.tune in the Explorer's worker process: TorchInductor on the CPU),
waits until the search is under way (its worker running), and returns. Printed: the exit code
and the seconds from "the script returned" to "the process ended", each run and p50 / max,
beside the same script without the search (what exiting Python with torch, torch_tensorrt and
an Explorer loaded costs on this machine anyway), in one run. Target: code 0 within 5 s in
every run (the worker is ended at once; nothing waits for the search). Before issue 36 the exit
waited up to 30 s for the search's thread.

Each searching run opens two Explorers on the model (they share the worker process), starts
"find fastest" in the second, closes the first while it runs, and checks 2 s later that the
second's search is still going in the same worker process ("other search kept": before issue 43,
closing any Explorer ended the shared worker and failed every other search with "closed").
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 5.0

SCRIPT = """
import sys, time
import hierviz as hv

model, inputs = hv.zoo.load({model!r})
ex = hv.explore(model, inputs, debounce=0)
ex.compile_today_thread.join()
kept = "-"
if {search}:
    other = hv.explore(model, inputs, debounce=0, min_block_size=2)
    other.compile_today_thread.join()
    search = ex.find_fastest(4)
    while ex.controller.long_work.pid is None:  # the search reached the worker
        time.sleep(0.05)
    time.sleep(2.0)  # under way: partitioning, compiling or timing there
    pid = ex.controller.long_work.pid
    other.close()  # the first Explorer closed: the second's search goes on
    time.sleep(2.0)
    kept = search.is_alive() and ex.controller.long_work.pid == pid and "failed" not in ex.panels["fastest"].value
print("returning", kept, flush=True)
"""


def one_run(model: str, search: bool) -> tuple[int, float, str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    code = textwrap.dedent(SCRIPT.format(model=model, search=search))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    start = time.monotonic()
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    took = time.monotonic() - start
    err = proc.stderr.read()
    if not line.startswith("returning"):
        raise SystemExit(f"the script failed before returning:\n{err[-3000:]}")
    return proc.returncode, took, "aborted" if "terminate called" in err else "", line.split()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--baseline-runs", type=int, default=5)
    parser.add_argument("--model", default="resnet18")
    args = parser.parse_args()
    print(f"exit with find fastest running, {args.model}, {os.cpu_count()} CPU cores, "
          f"load {os.getloadavg()[0]:.1f}")
    rows = {}
    for label, search, runs in (("find fastest running", True, args.runs), ("nothing running", False,
                                                                             args.baseline_runs)):
        results = []
        for k in range(runs):
            code, took, note, kept = one_run(args.model, search)
            results.append((code, took, note, kept))
            print(f"  {label:22s} run {k + 1:2d}: exit code {code}, {took:.2f} s, other search kept: {kept} {note}",
                  flush=True)
        rows[label] = results
    print(f"{'':22s} {'runs':>5s} {'code 0':>7s} {'p50 s':>7s} {'max s':>7s}")
    for label, results in rows.items():
        times = [t for _, t, _, _ in results]
        ok = sum(code == 0 and not note for code, _, note, _ in results)
        print(f"{label:22s} {len(results):5d} {ok:7d} {statistics.median(times):7.2f} {max(times):7.2f}")
    searching = rows["find fastest running"]
    met = sum(code == 0 and not note and t <= TARGET_S for code, t, note, _ in searching)
    kept = sum(k == "True" for _, _, _, k in searching)
    print(f"target: code 0 within {TARGET_S:.0f} s with find fastest running: {met} of {len(searching)} runs")
    print(f"closing the other Explorer left the search going: {kept} of {len(searching)} runs")


if __name__ == "__main__":
    main()
