"""hv.source_ops on the torch_compile path: each graph dynamo compiled keeps, for every lowered
node, the aten op the model called before Torch-TensorRT's decompositions, so
`torch_executed_ops=hv.source_ops("aten.silu.default")` forces the sigmoid and mul a SiLU became
in every graph (it forced nothing graph by graph: the lowered graphs kept no provenance)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import hierviz as hv
from hierviz.capturing.provenance import source_op


class SiluBreak(torch.nn.Module):
    """A SiLU on each side of a graph break, and a plain sigmoid and mul besides."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(F.silu(x)) * torch.sigmoid(x)
        torch._dynamo.graph_break()
        return F.silu(y) + 1


def _by_op(mp: hv.MultiGraphPartition) -> dict[tuple[str, str], str]:
    """(op, source op) -> the backend of its nodes, over every graph (each key's nodes agree)."""
    seen: dict[tuple[str, str], set[str]] = {}
    for part in mp:
        for node in part.graph.graph.nodes:
            if node.op == "call_function":
                key = (str(node.target), str(source_op(node)))
                seen.setdefault(key, set()).add(part.backend_of(node.name))
    assert all(len(b) == 1 for b in seen.values()), seen
    return {key: next(iter(b)) for key, b in seen.items()}


def _check(mp: hv.MultiGraphPartition) -> None:
    assert len(mp) == 2
    in_torch = [n.target for part in mp for n in part.graph.graph.nodes
                if n.op == "call_function" and part.backend_of(n.name) == "torch"]
    assert sorted(map(str, in_torch)) == ["aten.mul.Tensor", "aten.mul.Tensor",
                                          "aten.sigmoid.default", "aten.sigmoid.default"]
    silu = "torch.ops.aten.silu.default"
    got = _by_op(mp)
    assert got[("aten.sigmoid.default", silu)] == "torch"
    assert got[("aten.mul.Tensor", silu)] == "torch"
    # the model's own sigmoid and mul stay accelerated
    assert got[("aten.sigmoid.default", "torch.ops.aten.sigmoid.default")] == "tensorrt"
    assert got[("aten.mul.Tensor", "torch.ops.aten.mul.Tensor")] == "tensorrt"
    forced = [part.reason_of(n.name) for part in mp for n in part.graph.graph.nodes
              if n.op == "call_function" and source_op(n) == silu]
    assert len(forced) == 4 and all("forced from aten.silu" in r for r in forced), forced


def test_source_ops_force_the_silu_nodes_in_every_graph() -> None:
    torch.manual_seed(0)
    model, x = SiluBreak().eval(), torch.randn(2, 8)
    _check(hv.partition(model, (x,), ir="torch_compile", min_block_size=1,
                        torch_executed_ops=hv.source_ops("aten.silu.default")))


def test_a_capture_read_from_the_disk_cache_keeps_the_source_ops(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    x = torch.randn(2, 8)
    torch.manual_seed(0)
    hv.capture(SiluBreak().eval(), (x,), ir="torch_compile")
    torch.manual_seed(0)
    cap = hv.capture(SiluBreak().eval(), (x,), ir="torch_compile")  # another object: read from disk
    assert any("from the disk cache" in n for n in cap.notes), cap.notes
    _check(hv.partition(cap, min_block_size=1, torch_executed_ops=hv.source_ops("aten.silu.default")))


class SoftmaxLinear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.softmax(x, -1))


@pytest.mark.parametrize("entry, shown", [("aten.softmax.int", "aten.softmax.int"),
                                          ("aten.linear.default", "aten.linear"),
                                          ("aten.softmax", "aten.softmax.int")])
def test_a_source_op_torch_decomposes_first_is_refused_graph_by_graph(entry: str, shown: str) -> None:
    """softmax.int and linear are CompositeImplicitAutograd: torch decomposes them before the
    lowering traces a graph, so no node records them; the entry would force nothing."""
    model, x = SoftmaxLinear().eval(), torch.randn(2, 8)
    with pytest.raises(hv.ConfigError) as got:
        hv.partition(model, (x,), ir="torch_compile", min_block_size=1, torch_executed_ops=hv.source_ops(entry))
    assert got.value.setting == "torch_executed_ops"
    assert f"{shown} (CompositeImplicitAutograd)" in str(got.value)
    assert "cannot be applied graph by graph" in str(got.value) and "ir='dynamo'" in str(got.value)
    # torch.export keeps the op: there the same entry forces its nodes
    part = hv.partition(model, (x,), ir="dynamo", min_block_size=1, torch_executed_ops=hv.source_ops(entry))
    assert any(part.backend_of(n.name) == "torch" for n in part.graph.graph.nodes if n.op == "call_function")
