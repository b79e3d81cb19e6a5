"""Partition.module generates each submodule's code once, when it first runs: no code for copies
that never run, no second and third generation when the parent is made and when the input check
is added; and the code, weights and outputs are those of a split made the plain torch.fx way
(split_by_tags)."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch.fx import GraphModule
from torch.fx.passes.split_utils import split_by_tags

import hierviz as hv
from hierviz.partitioner.graph_copy import copy_graph_module
from hierviz.partitioner.splitter import with_input_check
from hierviz.partitioner.split_module import SplitModule


@contextlib.contextmanager
def counting_recompiles():
    """GraphModule.recompile calls (a lazy GraphModule's real code generation included)."""
    calls = []
    original = GraphModule.recompile

    def counted(self):
        calls.append(self)
        return original(self)

    GraphModule.recompile = counted
    try:
        yield calls
    finally:
        GraphModule.recompile = original


def plain_split(p: hv.Partition) -> GraphModule:
    """The split the plain torch.fx way: split_by_tags on a compiled copy of the graph."""
    work = copy_graph_module(p.graph)
    for node in work.graph.nodes:
        if node.op not in ("placeholder", "output", "get_attr"):
            node.tag = p.tag_of(node.name)
    return split_by_tags(work, [s.tag for s in p.subgraphs])


def children(gm: GraphModule) -> dict[str, str]:
    return {name: mod.code for name, mod in gm.named_children()}


@pytest.fixture(scope="module")
def branchy() -> hv.Partition:
    return hv.partition(hv.zoo.synthetic(1500, seed=3))


@pytest.fixture(scope="module")
def resnet(zoo_cache) -> hv.Partition:
    return hv.partition(zoo_cache.capture("resnet18"), priority=("tensorrt", "inductor"),
                        torch_executed_ops={"torch.ops.aten.relu.default"}, min_block_size=1)


@pytest.mark.parametrize("which", ["branchy", "resnet"])
def test_each_submodule_is_generated_once(request, zoo_cache, which) -> None:
    """Building `.module` generates the parent's code only; the first call generates each
    submodule's code once (torch.fx's lazy GraphModule), and later calls none."""
    p = request.getfixturevalue(which)
    fresh = hv.partition(p.graph, config=p.config)  # its split module not built yet
    with counting_recompiles() as calls:
        module = fresh.module
    assert len(p.subgraphs) > 20
    assert calls == [module]
    assert isinstance(module, SplitModule)
    inputs = hv.zoo.synthetic_inputs(p.graph) if which == "branchy" else zoo_cache.load("resnet18")[1]
    with counting_recompiles() as calls:
        module(*inputs)
    assert sorted(id(c) for c in calls) == sorted(id(c) for c in module.children())
    assert len(calls) == len(p.subgraphs)
    with counting_recompiles() as calls:
        module(*inputs)
    assert calls == []


def test_submodules_hold_the_same_weights_as_the_plain_split(resnet) -> None:
    plain = plain_split(resnet)
    for name, child in resnet.module.named_children():
        theirs = getattr(plain, name)
        assert dict(child.named_parameters()).keys() == dict(theirs.named_parameters()).keys()
        assert dict(child.named_buffers()).keys() == dict(theirs.named_buffers()).keys()
        for key, value in child.state_dict(keep_vars=True).items():
            assert value is theirs.state_dict(keep_vars=True)[key]  # shared with the model, not copied
    assert resnet.module.state_dict().keys() == plain.state_dict().keys()


@pytest.mark.parametrize("which", ["branchy", "resnet"])
def test_code_and_outputs_equal_the_plain_split(request, zoo_cache, which) -> None:
    p = request.getfixturevalue(which)
    plain = plain_split(p)
    assert children(p.module) == children(plain)
    assert p.module.code == with_input_check(plain, p.graph).code
    if which == "branchy":
        inputs = hv.zoo.synthetic_inputs(p.graph)
    else:
        inputs = zoo_cache.load("resnet18")[1]
    torch.testing.assert_close(p.module(*inputs), plain(*inputs), rtol=0, atol=0)
    torch.testing.assert_close(p.module(*inputs), p.graph(*inputs), rtol=0, atol=0)


def test_recompiling_the_split_module_keeps_its_submodules(branchy) -> None:
    """SplitModule.recompile regenerates the parent only; the submodules stay as made."""
    module = branchy.module
    inputs = hv.zoo.synthetic_inputs(branchy.graph)
    module(*inputs)
    with counting_recompiles() as calls:
        module.recompile()
    assert calls == [module]
    torch.testing.assert_close(module(*inputs), branchy.graph(*inputs), rtol=0, atol=0)
