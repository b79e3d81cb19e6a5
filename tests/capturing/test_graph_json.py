"""A captured graph as JSON and tensors (hierviz.capturing.graph_json): read back, it partitions
and computes as the capture does; what the format cannot hold is refused when written, and a
document that names anything but registered ops and Python's arithmetic is refused when read."""

from __future__ import annotations

import io
import json

import pytest
import torch

import hierviz as hv
from hierviz.capturing.graph_json import graph_from_json, graph_json, restore_tensor_meta
from hierviz.capturing.input_spec import spec_of
from hierviz.latency.deploy import recorded_meta


def read_back(gm: torch.fx.GraphModule, inputs: tuple) -> torch.fx.GraphModule:
    """`gm` through JSON text and a torch.save file read with weights_only=True, as a saved model is."""
    doc, tensors = graph_json(gm)
    buffer = io.BytesIO()
    torch.save(tensors, buffer)
    again = graph_from_json(json.loads(json.dumps(doc)), torch.load(io.BytesIO(buffer.getvalue()), weights_only=True))
    recorded_meta(again, spec_of(gm), inputs)
    restore_tensor_meta(again)
    return again


def subgraphs(part) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(s.tag, s.backend, tuple(s.nodes)) for s in part.subgraphs]


@pytest.mark.parametrize("name", ["resnet18", "bert"])
def test_a_graph_read_back_partitions_and_computes_as_captured(zoo_cache, name) -> None:
    model, inputs = zoo_cache.load(name)
    gm = zoo_cache.capture(name)
    again = read_back(gm, inputs)
    assert [n.name for n in again.graph.nodes] == [n.name for n in gm.graph.nodes]
    for settings in ({"min_block_size": 3, "torch_executed_ops": {"torch.ops.aten.relu.default"}},
                     {"priority": ("inductor",), "support": {"inductor": hv.support.inductor()}, "min_block_size": 1}):
        assert subgraphs(hv.partition(again, **settings)) == subgraphs(hv.partition(gm, **settings))
    with torch.no_grad():
        torch.testing.assert_close(again(*inputs), gm(*inputs))
    stacks = [n.meta.get("nn_module_stack") for n in gm.graph.nodes if n.op == "call_function"]
    assert [n.meta.get("nn_module_stack") for n in again.graph.nodes if n.op == "call_function"] == [
        {k: (path, cls if isinstance(cls, str) else f"{cls.__module__}.{cls.__qualname__}") for k, (path, cls)
         in stack.items()} if stack else None for stack in stacks]


def test_a_graph_that_calls_a_module_is_refused_when_written() -> None:
    gm = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2)))
    with pytest.raises(ValueError, match="is a call_module node; only aten graphs"):
        graph_json(gm)


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))[:, :2]


@pytest.fixture(scope="module")
def tiny_doc():
    gm = hv.capture(Tiny().eval(), (torch.randn(2, 4),))
    return graph_json(gm)


def _first(doc: dict, op: str) -> dict:
    return next(n for n in doc["nodes"] if n["op"] == op)


def _later_reference(doc: dict) -> None:
    _first(doc, "call_function")["args"] = [{"node": "output"}]


def _placeholder_code(doc: dict) -> None:
    _first(doc, "placeholder")["target"] = "x=__import__('os')"


def _getattr_op(doc: dict) -> None:
    _first(doc, "call_function")["target"] = {"op": "aten.__class__"}


def _untagged_dict(doc: dict) -> None:
    _first(doc, "call_function")["kwargs"] = {"node": "x", "extra": 1}


def _attr_without_tensor(doc: dict) -> None:
    doc["attrs"][0]["tensor"] = "t999"


REFUSED = {
    "a reference to a later node": (_later_reference, "not an earlier node"),
    "code as a placeholder name": (_placeholder_code, "is not a name"),
    "a Python attribute as an op": (_getattr_op, "is not an operator"),
    "an object that is not a tagged value": (_untagged_dict, "is not one this format writes"),
    "an attribute without its tensor": (_attr_without_tensor, "names no tensor of the weights file"),
}


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_a_document_off_the_format_is_refused_when_read(tiny_doc, case) -> None:
    edit, says = REFUSED[case]
    doc, tensors = json.loads(json.dumps(tiny_doc[0])), tiny_doc[1]
    edit(doc)
    with pytest.raises(ValueError, match=says):
        graph_from_json(doc, tensors)
