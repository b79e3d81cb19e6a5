"""What checking a cached engine costs: the build cache checks an engine's SHA-256 each time it
reads it (EngineStore.load for a cached part.build(), EngineStore.engine for hv.measure and
part.compile()). This measures SHA-256's throughput here and the check of an engine file of a
1.1B-parameter bf16 model's size (2.2 GB, random bytes) kept by an EngineStore in a temporary
folder: read from the page cache (just written) and, with --cold, after dropping the page cache
(root only: the disk's read speed then counts).

    python benchmarks/engine_digest.py [--gb 2.2] [--repeat 3] [--cold]

It prints wall and CPU seconds of each check and the machine's load average (on a shared
machine the wall time is the CPU's share of it).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from pathlib import Path

from hierviz.building.engine_store import EngineStore
from hierviz.trt.engine_build import EngineBuild


def _timed(call) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def _keep(store: EngineStore, size: int, block: bytes) -> None:
    """An engine of `size` bytes (`block` repeated) kept under "k"."""
    engine = bytearray(size)
    for at in range(0, size, len(block)):
        piece = block[: size - at]
        engine[at:at + len(piece)] = piece
    assert store.save("k", EngineBuild("built", 1, 0.0, 0.0, engine=memoryview(engine),
                                       runtime={"input_binding_names": ["x"]})) is None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=2.2, help="the engine's size in GB (default 2.2)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="drop the page cache before each check (root only)")
    args = parser.parse_args()

    block = os.urandom(256 * 2**20)
    wall, cpu = _timed(lambda: hashlib.sha256(block).hexdigest())
    print(f"SHA-256 of 256 MiB in memory: {wall:.3f} s wall, {cpu:.3f} s CPU: {len(block) / cpu / 1e9:.2f} GB/s "
          "per core of CPU time")

    size = int(args.gb * 1e9)
    with tempfile.TemporaryDirectory(prefix="hierviz-engine-digest-") as folder:
        store = EngineStore(Path(folder), max_bytes=4 * size)
        wall, _ = _timed(lambda: _keep(store, size, block))
        print(f"kept a {size / 1e9:.2f} GB engine in {wall:.1f} s (hashed and written)")
        for i in range(args.repeat):
            if args.cold:
                os.sync()
                Path("/proc/sys/vm/drop_caches").write_text("3\n")
            wall, cpu = _timed(lambda: store.load("k"))
            print(f"check {i + 1} ({'cold' if args.cold else 'page cache'}): load() {wall:.2f} s wall, {cpu:.2f} s CPU "
                  f"({size / wall / 1e9:.2f} GB/s)")
        assert store.load("k") is not None
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
