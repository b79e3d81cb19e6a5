#!/usr/bin/env python
"""How many nodes validated TensorRT support moves, per zoo model (docs/partitioning.md).

    python benchmarks/validation_moves.py

For each zoo model, with TensorRT only (priority=("tensorrt",)) at min_block_size 1 and the
default 5: nodes whose capability validator rejects them (reason validator_rejected), nodes
whose backend differs between `hv.support.tensorrt()` (validated, the default) and
`hv.support.tensorrt(validate=False)` (op names only, as upstream's hierarchical partitioner
checks), the TensorRT subgraph counts of both, and the validated partition's time. Also
squeezenet1_1 from torchvision (not in the zoo), whose ceil-mode pools a validator rejects."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main() -> None:
    import hierviz as hv

    names_only = {"tensorrt": hv.support.tensorrt(validate=False)}
    print("model                mbs  nodes  rejected  moved  trt(validated)  trt(names only)  validate_s")
    import torch

    models = [(name, lambda name=name: hv.zoo.load(name)) for name in hv.zoo.names()]
    try:
        import torchvision

        models.append(("squeezenet1_1", lambda: (torchvision.models.squeezenet1_1().eval(),
                                                 (torch.randn(1, 3, 224, 224),))))
    except ImportError:
        pass
    for name, load in models:
        torch.manual_seed(0)
        model, inputs = load()
        gm = hv.capture(model, inputs)
        for mbs in (1, 5):
            t0 = time.perf_counter()
            ours = hv.partition(gm, priority=("tensorrt",), min_block_size=mbs)
            seconds = time.perf_counter() - t0
            plain = hv.partition(gm, priority=("tensorrt",), min_block_size=mbs, support=names_only)
            nodes = ours.nodes()
            rejected = int((nodes["reason_code"] == "validator_rejected").sum())
            moved = int((nodes["backend"] != plain.nodes()["backend"]).sum())
            print(f"{name:20s} {mbs:3d} {ours.stats['nodes']:6d} {rejected:9d} {moved:6d} "
                  f"{ours.stats['subgraphs_by_backend']['tensorrt']:15d} "
                  f"{plain.stats['subgraphs_by_backend']['tensorrt']:16d}  {seconds:9.3f}", flush=True)


if __name__ == "__main__":
    main()
