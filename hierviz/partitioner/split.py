"""The split GraphModule (`Partition.module`): one submodule per subgraph, guarded by the capture.

The split module is built on a copy of the partitioned graph, so the user's graph is never
touched. Its first node checks the call's inputs against what the graph was captured for
(shapes, dtypes, Python scalars, dynamic-dimension ranges; see hierviz/inputs.py) and raises
`hv.CaptureError` instead of computing with inputs the capture did not allow.

Each submodule's code is generated once, when torch.fx's `split_by_tags` makes it: the copy
that is split is a lazy GraphModule (its code, which never runs, is never generated), and the
split module is a `SplitModule`, whose recompile (when it is made, and after the input check
is added) generates its own code only, not its submodules' again as GraphModule.recompile does.
"""

from __future__ import annotations

import copy
import functools

import torch
from torch.fx import GraphModule

from hierviz.inputs import check_call, check_inputs, spec_of
from hierviz.partitioner.plan import EngineResult
from hierviz.partitioner.result import copy_graph_module


class SplitModule(GraphModule):
    """A GraphModule whose submodules are final when it is made: `recompile()` regenerates
    this module's code, not theirs (recompile a submodule itself after changing its graph)."""

    def _recompile_submodules(self) -> list:
        return []


def build_split_module(gm: GraphModule, result: EngineResult,
                       original: GraphModule | None = None) -> GraphModule:
    """Split a copy of `gm` by subgraph tags, with the input check in front (that of
    `original`, the captured graph, when `gm` is a pruned copy of it)."""
    from torch.fx.passes.split_utils import split_by_tags

    work = copy_graph_module(gm, lazy=True)
    copies = {n.name: n for n in work.graph.nodes}
    names = result.index.names
    for k, sg in enumerate(result.subgraphs):
        for i in sg.nodes:
            copies[names[i]].tag = result.tags[k]
    split = split_by_tags(work, list(result.tags), GraphModuleCls=SplitModule)
    codegen = getattr(gm.graph, "_codegen", None)
    if codegen is not None and type(codegen) is not torch.fx.graph.CodeGen:
        split.graph._codegen = copy.deepcopy(codegen)
    return with_input_check(split, original if original is not None else gm)


def with_input_check(split: GraphModule, gm: GraphModule) -> GraphModule:
    """`split` (a SplitModule over it, when it is another GraphModule: upstream's) with a first
    node that checks its inputs against what `gm` was captured for (nothing is added when no
    input of gm carries metadata)."""
    if not isinstance(split, SplitModule):
        split = SplitModule(split, split.graph, class_name=type(split).__name__)
    spec = spec_of(gm)
    placeholders = list(split.graph.find_nodes(op="placeholder"))
    if all(a.kind == "any" for a in spec.args) or len(placeholders) != len(spec.args):
        split.recompile()
        return split
    text = spec.to_json()
    with split.graph.inserting_after(placeholders[-1]):
        split.graph.create_node("call_function", check_inputs, (text, *placeholders), {}, name="_check_inputs")
    split.recompile()
    split.register_forward_pre_hook(functools.partial(check_call, text), with_kwargs=True)
    return split


__all__ = ["SplitModule", "build_split_module", "with_input_check"]
