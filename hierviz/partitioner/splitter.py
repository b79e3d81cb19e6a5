"""The split GraphModule (`Partition.module`): one submodule per subgraph, guarded by the capture.

The split module is built straight from the partitioned graph, which is only read, so the
user's graph is never touched. Its first node checks the call's inputs against what the graph
was captured for (shapes, dtypes, Python scalars, dynamic-dimension ranges; see
hierviz/capturing/inputs.py) and raises `hv.CaptureError` instead of computing with inputs the capture
did not allow.

The split is torch.fx's `split_by_tags` split, made in one pass: the same submodules, node
names, placeholders, outputs and generated code (tests/partitioner/test_split_codegen.py
compares them), without its tagged copy of the whole graph. Each submodule is a torch.fx lazy
GraphModule: its Python code is generated once, when it is first called or its `.code` read,
so the submodules a compiled module replaces by engines never have code generated at all. The
parent is a `SplitModule` (split_module.py), made once with the input check in place.
"""

from __future__ import annotations

import copy
import functools
import operator

import torch
from torch.fx import Graph, GraphModule, Node
from torch.fx._lazy_graph_module import _LazyGraphModule
from torch.fx.node import map_arg
from torch.fx.passes.utils.common import HolderModule

from hierviz.foundation.gcpause import gc_paused
from hierviz.capturing.graph_codec import fetch_attr
from hierviz.capturing.input_spec import spec_of
from hierviz.capturing.inputs import check_call, check_inputs
from hierviz.partitioner.engine.plan import EngineResult
from hierviz.partitioner.split_module import SplitModule


class _Part:
    """One subgraph being copied out: its graph and what crosses its boundary."""

    __slots__ = ("name", "order", "graph", "inputs", "placeholders", "outputs", "attrs")

    def __init__(self, name: str, order: int) -> None:
        self.name, self.order, self.graph = name, order, Graph()
        self.inputs: list[Node] = []  # nodes of the partitioned graph that come in
        self.placeholders: dict[Node, Node] = {}  # such a node -> its placeholder here
        self.outputs: list[Node] = []  # nodes of the partitioned graph that go out
        self.attrs: dict[Node, Node] = {}  # get_attr of the partitioned graph -> its copy here


def build_split_module(gm: GraphModule, result: EngineResult,
                       original: GraphModule | None = None) -> GraphModule:
    """Split `gm` by the result's subgraphs, with the input check in front (that of `original`,
    the captured graph, when `gm` is a pruned copy of it)."""
    with gc_paused():  # a few objects per node, all kept: the collector's rescans cost more
        return _split(gm, result, original)


def _split(gm: GraphModule, result: EngineResult, original: GraphModule | None) -> GraphModule:
    parts = [_Part(tag, k) for k, tag in enumerate(result.tags)]
    names = result.index.names
    part_of_name = {names[i]: parts[k] for k, sg in enumerate(result.subgraphs) for i in sg.nodes}
    part_of: dict[Node, _Part] = {}
    copied: dict[Node, Node] = {}  # node of gm -> its copy in its part
    used_outside: dict[Node, None] = {}  # in order of first use by another part or the output
    main = Graph()
    in_main: dict[Node, Node] = {}
    output = None

    for node in gm.graph.nodes:
        op = node.op
        if op == "output":
            output = node
            continue
        if op == "placeholder":
            in_main[node] = main.placeholder(node.name, type_expr=node.type)
            in_main[node].meta = copy.copy(node.meta)
            continue
        if op == "get_attr":
            continue
        part = part_of_name.get(node.name)
        if part is None:
            raise AssertionError(f"split module: node {node.name} is in no subgraph")
        part_of[node] = part

        def remap(x: Node, part: _Part = part) -> Node:
            if x.op == "get_attr":
                attr = part.attrs.get(x)
                if attr is None:
                    attr = part.attrs[x] = part.graph.get_attr(str(x.target), type_expr=x.type)
                    attr.meta = copy.copy(x.meta)
                return attr
            if x.op != "placeholder":
                source = part_of[x]
                if source is part:
                    return copied[x]
                if source.order > part.order:
                    raise AssertionError(f"split module: subgraph {part.name} uses {x.name} of the later "
                                         f"subgraph {source.name}")
            placeholder = part.placeholders.get(x)
            if placeholder is None:
                placeholder = part.placeholders[x] = part.graph.placeholder(x.name, type_expr=x.type)
                placeholder.meta = copy.copy(x.meta)
                part.inputs.append(x)
                used_outside[x] = None
            return placeholder

        made = part.graph.node_copy(node, remap)
        made.tag = part.name
        copied[node] = made

    if output is None:
        raise AssertionError("split module: the graph has no output node")
    returned: list[Node] = []
    map_arg(output.args[0], returned.append)
    for x in returned:
        if x.op == "get_attr":
            in_main[x] = main.get_attr(x.name, type_expr=x.type)
        else:
            used_outside[x] = None
    for x in used_outside:
        if x.op != "placeholder":
            part_of[x].outputs.append(x)

    check = _insert_check(main, original if original is not None else gm)

    children: dict[str, torch.nn.Module | None] = {}
    for part in parts:
        outs = [copied[x] for x in part.outputs]
        part.graph.output(outs[0] if len(outs) == 1 else tuple(outs))
        # lazy: its code is generated when it first runs; it holds the weights and modules of gm it
        # reads, copied by target (as torch.fx's lift_subgraph_as_module does)
        children[part.name] = _LazyGraphModule(gm, part.graph, "GraphModule")
        call = main.call_module(part.name, args=tuple(in_main[x] for x in part.inputs))
        if len(outs) == 1:
            in_main[part.outputs[0]] = call
        else:
            for i, x in enumerate(part.outputs):
                in_main[x] = main.call_function(operator.getitem, (call, i))
    main.output(map_arg(output.args[0], in_main.__getitem__))

    codegen = gm.graph._codegen
    main._codegen = copy.deepcopy(codegen) if type(codegen) is not torch.fx.graph.CodeGen else codegen
    root = HolderModule(children)
    for x in returned:
        if x.op == "get_attr":
            setattr(root, x.name, fetch_attr(gm, str(x.target)))
    return _guarded(SplitModule(root, main), check)


def _insert_check(graph: Graph, gm: GraphModule) -> str | None:
    """Put the node checking the inputs against what `gm` was captured for right after
    `graph`'s placeholders; its spec text, or None (no node) when the inputs carry no metadata
    or do not line up with the placeholders."""
    spec = spec_of(gm)
    placeholders = list(graph.find_nodes(op="placeholder"))
    if all(a.kind == "any" for a in spec.args) or len(placeholders) != len(spec.args):
        return None
    text = spec.to_json()
    with graph.inserting_after(placeholders[-1]):
        graph.create_node("call_function", check_inputs, (text, *placeholders), {}, name="_check_inputs")
    return text


def _guarded(split: SplitModule, check: str | None) -> SplitModule:
    """`split` checking each call's arguments first (Python scalars, structure) when `check`."""
    if check is not None:
        split.register_forward_pre_hook(functools.partial(check_call, check), with_kwargs=True)
    return split


def with_input_check(split: GraphModule, gm: GraphModule) -> GraphModule:
    """`split` (a SplitModule over it, when it is another GraphModule: upstream's) with a first
    node that checks its inputs against what `gm` was captured for (nothing is added when no
    input of gm carries metadata)."""
    if not isinstance(split, SplitModule):
        split = SplitModule(split, split.graph, class_name=type(split).__name__)
    check = _insert_check(split.graph, gm)
    split.recompile()
    return _guarded(split, check)


__all__ = ["build_split_module", "with_input_check"]
