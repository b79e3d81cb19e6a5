"""The stand-in for the ops outside a repro's engine (`hierviz_repro::outside`).

Torch-TensorRT's partitioner judges a node in the whole graph, where ops make its inputs and use
its output; its converters see the subgraph it split off, where those are the engine's inputs
(placeholders) and outputs. Some converters are chosen by that: `aten._to_copy` that is the only
op on an engine input and an engine output has only a converter without dynamic-shape support,
so the partitioner takes it into an engine (in the model its input was made, or its output used,
by another op) that then fails to convert. A part saved alone has the program's inputs and
outputs there instead, so `torch_tensorrt.dynamo.compile` leaves such a node to PyTorch and
builds. repro.pt2 keeps that context: each input of the part that an op of the model made (not
the model's own input) and each output that an op uses (not one the model returns) passes through
`hierviz_repro::outside`, an identity op with no converter, which Torch-TensorRT runs in PyTorch:
ops make and use them there too (in the model: ops run in PyTorch or other engines, or nodes of
the same engine the search left out of the part). repro.py defines the op (torch alone) before it
loads the program.
"""

from __future__ import annotations

from typing import Any

import torch

OP_NAME = "hierviz_repro::outside"

# repro.py's definition of the op, the same as below: torch alone
SOURCE = '''
def _outside_defined():
    """hierviz_repro::outside: an identity op with no TensorRT converter. repro.pt2 passes through it each
    input that an op of the model made and each output that an op of the model uses, so that Torch-TensorRT's
    partitioner sees them made and used by ops it runs in PyTorch, as in the model, not as the program's own
    inputs and outputs."""
    if hasattr(torch.ops.hierviz_repro, "outside"):
        return

    @torch.library.custom_op("hierviz_repro::outside", mutates_args=())
    def outside(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @outside.register_fake
    def _(x):
        return torch.empty_like(x)


_outside_defined()
'''


def _defined() -> None:
    """Define `hierviz_repro::outside` in this process (once)."""
    if hasattr(torch.ops.hierviz_repro, "outside"):
        return

    @torch.library.custom_op(OP_NAME, mutates_args=())
    def outside(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @outside.register_fake
    def _(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)


def outside(value: Any) -> Any:
    """`value` through the stand-in op (a copy of it); each tensor of a tuple, the rest as it is."""
    if isinstance(value, (tuple, list)):
        return type(value)(outside(v) for v in value)
    if not isinstance(value, torch.Tensor):
        return value
    _defined()
    return torch.ops.hierviz_repro.outside(value)


def made_by_ops(part: torch.fx.GraphModule, model_inputs: set[str]) -> tuple[str, ...]:
    """The part's tensor inputs that an op of the model made, in order: every placeholder whose
    value is a tensor and whose name is none of the model graph's inputs (`model_inputs`)."""
    return tuple(n.name for n in part.graph.nodes
                 if n.op == "placeholder" and n.name not in model_inputs
                 and isinstance(n.meta.get("val"), torch.Tensor))


def results(part: torch.fx.GraphModule) -> list[str]:
    """The names of the part's outputs, in the order its graph returns them."""
    (out,) = [n for n in part.graph.nodes if n.op == "output"]
    values = out.args[0] if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
    return [v.name for v in values if isinstance(v, torch.fx.Node)]


def used_by_ops(part: torch.fx.GraphModule, model_outputs: set[str]) -> tuple[str, ...]:
    """The part's outputs that an op of the model uses (none the model returns), in order."""
    return tuple(name for name in results(part) if name not in model_outputs)


def inputs_and_outputs(graph: torch.fx.GraphModule) -> tuple[set[str], set[str]]:
    """(the names of the model graph's inputs, of the values it returns)."""
    inputs = {n.name for n in graph.graph.nodes if n.op == "placeholder"}
    returned: set[str] = set()
    for n in graph.graph.nodes:
        if n.op == "output":
            torch.fx.map_arg(n.args, lambda a: returned.add(a.name))
    return inputs, returned


__all__ = ["OP_NAME", "SOURCE", "inputs_and_outputs", "made_by_ops", "outside", "results", "used_by_ops"]
