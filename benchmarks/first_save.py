"""The 50k-node synthetic graph's first `save("x.svg")` in a fresh process, and its split
(issue 38: <= 3 s on a quiet machine; 3.4-3.7 s on main 809bd39: the per-node record 0.74 s,
dot 1.35 s, imports 0.64 s).

    python benchmarks/first_save.py [--nodes 50000] [--repeat 2]

Each run is two new Python processes, each doing `import hierviz`, `hv.zoo.synthetic(nodes)` and
`hv.partition(gm)` first (not part of the figure), then `p.save("x.svg")`: the first times the
save as a user meets it (the figure); the second runs it under cProfile (which slows Python code
down, so its total is longer) for the split, in shares of the profiled total applied to the
figure: the per-node record (`Partition.records`), laying the diagram out with graphviz's `dot`,
the imports done on the way (graphviz, pandas, drawing), and the rest (building the DOT text).
Printed beside the machine's load average: the target is for a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import cProfile, json, os, pstats, sys, time
import hierviz as hv
gm = hv.zoo.synthetic(NODES)
p = hv.partition(gm)
prof = cProfile.Profile()
start = time.perf_counter()
if PROFILE:
    prof.enable()
p.save(os.path.join(TMP, "x.svg"))
prof.disable()
total = time.perf_counter() - start
if not PROFILE:
    print(json.dumps({"total": total, "nodes": len(gm.graph.nodes)}))
    sys.exit(0)
stats = pstats.Stats(prof).stats
def cum(pred):
    return max((v[3] for k, v in stats.items() if pred(k)), default=0.0)
record = cum(lambda k: k[2] == "records" and k[0].endswith("result.py"))
dot = cum(lambda k: k[2] in ("run", "communicate") and "subprocess" in k[0])
imports = cum(lambda k: k[2] == "_find_and_load")
print(json.dumps({"total": total, "record": record, "dot": dot, "imports": imports,
                  "nodes": len(gm.graph.nodes)}))
"""


def _child(nodes: int, profile: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        code = f"NODES, TMP, PROFILE = {nodes}, {tmp!r}, {profile}\n" + CHILD
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    print(f"{'run':>4} {'nodes':>7} {'first save s':>13} {'record s':>9} {'dot s':>7} {'imports s':>10} "
          f"{'rest s':>7}  load average")
    for i in range(args.repeat):
        plain, profiled = (_child(args.nodes, profile) for profile in (False, True))
        total = plain["total"]
        share = {k: profiled[k] / profiled["total"] * total for k in ("record", "dot", "imports")}
        rest = total - sum(share.values())
        print(f"{i:>4} {plain['nodes']:>7} {total:>13.2f} {share['record']:>9.2f} {share['dot']:>7.2f} "
              f"{share['imports']:>10.2f} {rest:>7.2f}  {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
