"""Two consecutive dynamo graphs joined into one aten graph: the graph dynamo would have made had
the graph break between them not been there.

A graph break splits a model's run in two graphs; the eager Python between them reads some of
the first graph's outputs and hands values to the second. hv.capture(..., ir="torch_compile")
records, for each input of a graph, whether its value was the very tensor an earlier graph
returned (`DynamoGraph.sources`). `join` wires those inputs of the second graph to the first
graph's outputs; every other input of the second graph (a weight, the user's input, a value the
eager Python made) stays an input of the joined graph. The joined graph returns both graphs'
outputs, so everything after it still has its values. Partitioning it is what removing the
break gives (MultiGraphPartition.blockers()).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch.fx import Graph, GraphModule, Node
from torch.utils._pytree import tree_flatten, tree_leaves

from hierviz.capturing.graph_codec import fetch_attr


def _outputs(gm: GraphModule) -> list[Any]:
    """The graph's returned values (its output node's leaves, in dynamo's output order)."""
    out = next(n for n in gm.graph.nodes if n.op == "output")
    return tree_leaves(out.args[0])


def join(first: GraphModule, second: GraphModule, sources: Sequence[Any], first_index: int) -> GraphModule:
    """`first` then `second` in one GraphModule: each input of `second` whose source (see
    DynamoGraph.sources) is output `j` of graph `first_index` reads that output; the rest are
    inputs. Returns the outputs of both. Neither graph is changed."""
    outs = _outputs(first)
    root = torch.nn.Module()
    graph = Graph()
    names: dict[str, int] = {}

    def placeholder(node: Node, prefix: str) -> Node:
        new = graph.placeholder(_unique(f"{prefix}_{node.name}", names))
        new.meta = dict(node.meta)
        return new

    def copy_nodes(gm: GraphModule, prefix: str, inputs: dict[Node, Any]) -> list[Any]:
        env: dict[Node, Any] = dict(inputs)
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                if node not in env:
                    env[node] = placeholder(node, prefix)
            elif node.op == "get_attr":
                name = _unique(f"{prefix}_{node.target.replace('.', '_')}", names)
                setattr(root, name, fetch_attr(gm, node.target))
                env[node] = graph.get_attr(name)
                env[node].meta = dict(node.meta)
            elif node.op == "output":
                leaves, _ = tree_flatten(node.args[0])
                return [env[x] if isinstance(x, Node) else x for x in leaves]
            else:
                env[node] = graph.node_copy(node, lambda x: env[x])
        return []

    wired: dict[Node, Any] = {}
    firsts = copy_nodes(first, f"g{first_index}", {})
    holders = [n for n in second.graph.nodes if n.op == "placeholder"]
    if len(outs) == len(firsts) and len(sources) == len(holders):
        for node, source in zip(holders, sources):
            if source is not None and source[0] == first_index and source[1] < len(firsts) \
                    and isinstance(firsts[source[1]], Node):
                wired[node] = firsts[source[1]]
    seconds = copy_nodes(second, f"g{first_index + 1}", wired)
    graph.output(tuple(x for x in (*firsts, *seconds) if isinstance(x, Node)))
    return GraphModule(root, graph, class_name="JoinedGraphs")


def _unique(name: str, seen: dict[str, int]) -> str:
    n = seen.get(name, 0)
    seen[name] = n + 1
    return name if n == 0 else f"{name}_{n}"


def wired_inputs(gm_second: GraphModule, sources: Sequence[Any], first_index: int) -> int:
    """How many inputs of the second graph read the first graph's outputs (for the blockers' note)."""
    holders = [n for n in gm_second.graph.nodes if n.op == "placeholder"]
    return sum(1 for s in sources[:len(holders)] if s is not None and s[0] == first_index)


__all__ = ["join", "wired_inputs"]
