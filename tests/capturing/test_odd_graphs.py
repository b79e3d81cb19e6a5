"""Odd graphs (issue 35 item 6), as dynamo makes them and as a user may pass them: an aten graph
with no inputs, a module whose forward takes no arguments, graphs whose inputs include SymInts,
and graphs with no ops. Each is partitioned, or reported as "nothing to partition", never an
error: report(), nodes(), summary(), render() and save() work on every one."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

import hierviz as hv
from hierviz.partitioner import NOTHING_TO_PARTITION


class NoArguments(nn.Module):
    """forward() takes nothing: its input is made inside (torch.arange), its weight is its own."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(8, 4)

    def forward(self) -> torch.Tensor:
        return torch.relu(self.fc(torch.arange(16.0).reshape(2, 8)))


class Identity(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class Constant(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("table", torch.arange(6.0))

    def forward(self) -> torch.Tensor:
        return self.table


def scaled(x: torch.Tensor, n: int) -> torch.Tensor:
    return torch.relu(x.reshape(-1) * n) + x.shape[0]


def works_everywhere(p: hv.Partition, tmp_path) -> None:
    """What a user (and the graph-by-graph partition) asks of every partition answers."""
    assert p.report().startswith("+")
    nodes = p.nodes()
    assert len(nodes) == len(p.graph.graph.nodes)
    p.summary(), p.ops()
    source = p.render(view="full").source
    assert all(n.name in source for n in p.graph.graph.nodes if n.op != "output")  # every node drawn
    assert p.save(tmp_path / "odd.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


def nothing(p: hv.Partition) -> bool:
    return (p.stats["nodes"] == 0 and p.subgraphs == [] and NOTHING_TO_PARTITION in repr(p)
            and NOTHING_TO_PARTITION in p.report().lower())


def test_a_module_whose_forward_takes_no_arguments_is_partitioned(tmp_path) -> None:
    model = NoArguments().eval()
    for inputs in ((), None):
        p = hv.partition(model, inputs, min_block_size=1)
        works_everywhere(p, tmp_path)
        torch.testing.assert_close(p.module(), model())
        assert p.stats["nodes"] == 0 or p.stats["subgraphs"] >= 1  # the lowering may fold it to a constant


def test_an_aten_graph_with_no_inputs_is_partitioned(tmp_path) -> None:
    gm = hv.capture(NoArguments().eval(), ())
    p = hv.partition(gm, ())
    works_everywhere(p, tmp_path)
    torch.testing.assert_close(p.module(), NoArguments().eval()())


def test_a_traced_graph_with_no_inputs_is_captured_without_them(tmp_path) -> None:
    traced = torch.fx.symbolic_trace(Constant())  # not aten-level: captured again, with no inputs
    p = hv.partition(traced, ())
    assert nothing(p)
    works_everywhere(p, tmp_path)
    torch.testing.assert_close(p.module(), torch.arange(6.0))


@pytest.mark.parametrize("model", [Identity(), Constant()], ids=["identity", "constant"])
def test_a_graph_with_no_ops_is_nothing_to_partition(model, tmp_path) -> None:
    inputs = (torch.randn(3),) if isinstance(model, Identity) else ()
    p = hv.partition(model, inputs)
    assert nothing(p)
    works_everywhere(p, tmp_path)
    assert p.blockers().empty
    torch.testing.assert_close(p.module(*inputs), model(*inputs))


def test_a_module_that_needs_inputs_says_which() -> None:
    with pytest.raises(hv.CaptureError, match=r"Identity: its forward takes x"):
        hv.capture(Identity(), ())


@pytest.mark.parametrize("config", [{}, {"min_block_size": 1},
                                    {"min_block_size": 1, "torch_executed_ops": {"torch.ops.aten.relu.default"}}])
def test_a_graph_whose_inputs_include_a_symint_is_partitioned(config, tmp_path) -> None:
    gm = make_fx(scaled, tracing_mode="symbolic")(torch.randn(3, 4), 5)
    assert any(isinstance(n.meta.get("val"), torch.SymInt) for n in gm.graph.nodes if n.op == "placeholder")
    p = hv.partition(gm, **config)
    works_everywhere(p, tmp_path)
    x = torch.randn(3, 4)
    torch.testing.assert_close(p.module(x, 5), scaled(x, 5))
    if "torch_executed_ops" in config:
        assert p.backend_of(next(n.name for n in gm.graph.nodes if n.target is torch.ops.aten.relu.default)) == "torch"
        assert p.stats["subgraphs"] >= 2
