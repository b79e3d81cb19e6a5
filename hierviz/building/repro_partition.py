"""What Torch-TensorRT's partitioner makes of a saved repro (`left_to_pytorch`): the context a repro
that did not reproduce lacks, when it is the partition.

hierviz built the part as one engine, as Torch-TensorRT's partitioner split it off the model.
repro.py compiles repro.pt2 with `torch_tensorrt.dynamo.compile`, which lowers and partitions it
again, on its own: where the partitioner leaves some of the part's ops to PyTorch there (its
converters' validators judge them otherwise without the model around them), repro.py builds a
different engine, and the failure cannot show.
"""

from __future__ import annotations

import torch

from hierviz import trt
from hierviz.building.repro_outside import OP_NAME
from hierviz.foundation.opnames import CALLABLE_OPS, qualname

_STAND_IN = "torch.ops." + OP_NAME.replace("::", ".") + ".default"


def left_to_pytorch(gm: torch.fx.GraphModule, torch_executed_ops: set[str]) -> tuple[str, ...]:
    """The ops (qualified names, sorted, each once) of `gm`, repro.pt2 lowered as
    torch_tensorrt.dynamo.compile lowers it (changed: pass a copy), that Torch-TensorRT's
    partitioner leaves to PyTorch with repro.py's settings (min_block_size=1 and the part's
    `torch_executed_ops`); the stand-in for the ops around the part is none of them."""
    ops = {n.name: qualname(n.target) for n in gm.graph.nodes
           if n.op in CALLABLE_OPS and qualname(n.target) != _STAND_IN}
    made = trt.run_compile_partitioner(gm, fast=True, min_block_size=1, torch_executed_ops=set(torch_executed_ops),
                                       require_full_compilation=False)
    if made.early_return is not None:  # no op it takes: the whole program runs in PyTorch
        left = set(ops)
    else:
        taken = {name for names in made.acc for name in names}
        left = {name for name in ops if name not in taken and name not in made.removed}
    return tuple(sorted({ops[name] for name in left if not ops[name].startswith("_operator.")}))


__all__ = ["left_to_pytorch"]
