"""How long `Partition.blockers()` takes, beside the same re-partitions done by hand, in the same run.

    python benchmarks/blockers_speed.py            # 1.7k-node graph: hierviz and fast engines
    python benchmarks/blockers_speed.py --quick    # hierviz engine only

The graph is `hv.zoo.synthetic(1700)` (branches, skip connections, views, four ops with no
TensorRT converter, small blocks that get demoted): about 200 subgraphs at the default
settings and 8 causes. "blockers" is `part.blockers()` (every row and the combined row);
"by hand" partitions the graph once per row with the row's `config`, as a user would, and checks
that the counts agree. Target (issue 30): all rows in <= 2 s on a 1.7k-node model.
"""

from __future__ import annotations

import argparse
import time
import warnings

import hierviz as hv

TARGET_S = 2.0


def run(engine: str, gm) -> None:
    hv.partition(gm, engine=engine).blockers()  # warm: imports, the converter registry, validators
    part = hv.partition(gm, engine=engine)  # a fresh partition: blockers() keeps its table, so time a new one
    t = time.perf_counter()
    table = part.blockers()
    blockers_s = time.perf_counter() - t
    t = time.perf_counter()
    for row in table.itertuples():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fixed = hv.partition(gm, row.config, engine=engine)
        assert fixed.stats["subgraphs"] == row.subgraphs_if_fixed, row
    hand_s = time.perf_counter() - t
    verdict = "meets" if blockers_s <= TARGET_S else "misses"
    print(f"{engine:>8} engine: {len(gm.graph.nodes):,} nodes, {part.stats['subgraphs']} subgraphs, {len(table)} rows: "
          f"blockers {blockers_s:.2f} s (by hand {hand_s:.2f} s, same counts); {verdict} the {TARGET_S:.0f} s target")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the hierviz engine only")
    parser.add_argument("--nodes", type=int, default=1700)
    args = parser.parse_args()
    gm = hv.zoo.synthetic(args.nodes)
    run("hierviz", gm)
    if not args.quick and hv.trt.available():
        run("fast", gm)


if __name__ == "__main__":
    main()
