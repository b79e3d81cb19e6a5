"""A node two torch_executed_ops entries force (a SiLU's sigmoid, forced by a plain
"aten.sigmoid.default" entry and by hv.source_ops("aten.silu.default")) is freed by neither
entry dropped alone: each forced row's `nodes` is what its what-if re-partition frees, the same
live and saved-and-loaded, and the node shows in the combined row and in the rows' notes."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv

TORCH_EXECUTED = "torch_executed_ops"


class SigmoidAndSilu(torch.nn.Module):
    """A plain sigmoid, then a SiLU that Torch-TensorRT's lowering turns into sigmoid * x."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sigmoid(self.a(x))
        return torch.nn.functional.silu(self.b(h)) + 1


SIGMOID = "torch.ops.aten.sigmoid.default"
SILU = "torch.ops.aten.silu.default"


@pytest.fixture(scope="module")
def part() -> hv.Partition:
    teo = {"aten.sigmoid.default"} | hv.source_ops("aten.silu.default")
    return hv.partition(SigmoidAndSilu(), (torch.randn(2, 8),), torch_executed_ops=teo, min_block_size=1)


def forced(p: hv.Partition) -> set[str]:
    t = p.records
    return {t.name[i] for i in range(len(t)) if t.reason_code[i] == TORCH_EXECUTED}


def by_hand(p: hv.Partition, dropped: set[str]) -> tuple[int, int]:
    """(nodes freed from torch_executed_ops, accelerated ops gained) when `dropped` entries go."""
    after = hv.partition(p.graph, p.config.replace(torch_executed_ops=p.config.torch_executed_ops - dropped))
    return len(forced(p) - forced(after)), after.stats["accelerated_ops"] - p.stats["accelerated_ops"]


def entry(op: str, cfg: hv.Config) -> str:
    return op if op in cfg.torch_executed_ops else "source:" + op


def test_a_node_two_entries_force_counts_in_neither_row(part: hv.Partition, tmp_path) -> None:
    assert len(forced(part)) == 3  # both sigmoids and the SiLU's mul
    path = tmp_path / "p.json"
    part.save(str(path))
    loaded = hv.load_partition(str(path))
    live = part.blockers(kind="forced").set_index("op")
    saved = loaded.blockers(kind="forced").set_index("op")
    assert sorted(live.index) == sorted([SIGMOID, SILU, "top 2 together"])
    assert sorted(saved.index) == sorted([SIGMOID, SILU])  # no graph to re-partition: no combined row
    for op in (SIGMOID, SILU):
        freed, gained = by_hand(part, {entry(op, part.config)})
        assert freed == 1, op  # the other entry still forces the SiLU's sigmoid
        assert live.loc[op, "nodes"] == saved.loc[op, "nodes"] == freed, op
        assert live.loc[op, "accelerated_ops_gained"] == gained == 1, op
        assert "also forced by" in live.loc[op, "note"] and "also forced by" in saved.loc[op, "note"], op
    freed, gained = by_hand(part, set(part.config.torch_executed_ops))
    assert live.loc["top 2 together", "nodes"] == freed == 3
    assert live.loc["top 2 together", "accelerated_ops_gained"] == gained


def test_the_shared_node_names_one_entry_everywhere(part: hv.Partition, tmp_path) -> None:
    """The SiLU's sigmoid: forced_from, reason_of, the Ops table and the report name the plain entry
    (the one the partitioner took), live and loaded."""
    path = tmp_path / "p.json"
    part.save(str(path))
    loaded = hv.load_partition(str(path))
    t = part.records
    sigmoids = [t.name[i] for i in range(len(t)) if t.op[i] == SIGMOID]
    assert len(sigmoids) == 2
    for p in (part, loaded):
        r = p.records
        for name in sigmoids:
            assert r.forced_from[r.position[name]] is None
            assert p.reason_of(name) == f"runs in PyTorch: {SIGMOID} is in torch_executed_ops"
        mul = next(i for i in range(len(r)) if r.op[i] == "torch.ops.aten.mul.Tensor")
        assert r.forced_from[mul] == SILU
        assert p.reason_of(r.name[mul]).startswith("runs in PyTorch: forced from aten.silu")
        reasons = dict(zip(p.ops().op, p.ops().reason))
        assert (reasons[SIGMOID], reasons["torch.ops.aten.mul.Tensor"]) == ("in torch_executed_ops",
                                                                           "forced from aten.silu")
        report = p.report()
        assert f" {SIGMOID}: 2  [excluded (torch_executed_ops)]" in report
        assert " torch.ops.aten.mul.Tensor: 1  [excluded (forced from aten.silu)]" in report


class SigmoidsAcrossABreak(torch.nn.Module):
    """Two graphs (a print between them): two sigmoids and a mul in the first, a sigmoid in the second."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = (torch.nn.Linear(8, 8) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sigmoid(self.b(torch.sigmoid(self.a(x)))) * x
        print("half way")
        return torch.sigmoid(self.c(h)) + 1


def test_graph_by_graph_rows_count_what_dropping_the_entry_frees(tmp_path) -> None:
    """Two plain entries force every sigmoid (the op and its packet): neither frees one alone."""
    teo = {"aten.sigmoid.default", "aten.sigmoid", "aten.mul.Tensor"}
    part = hv.partition(SigmoidsAcrossABreak(), (torch.randn(2, 8),), ir="torch_compile", torch_executed_ops=teo,
                        min_block_size=1)
    assert len(part.graphs) == 2
    path = tmp_path / "m.json"
    part.save(str(path))
    loaded = hv.load_partition(str(path))

    def by_hand_graphs(dropped: set[str]) -> tuple[int, int]:
        after = hv.partition(part, config=part.config.replace(
            torch_executed_ops=part.config.torch_executed_ops - dropped))
        was = sum(len(forced(g)) for g in part.graphs)
        return was - sum(len(forced(g)) for g in after.graphs), (after.stats["accelerated_ops"]
                                                                  - part.stats["accelerated_ops"])

    live = part.blockers(kind="forced").set_index("op")
    saved = loaded.blockers(kind="forced").set_index("op")
    for op, nodes in ((SIGMOID, 0), ("torch.ops.aten.sigmoid", 0), ("torch.ops.aten.mul.Tensor", 1)):
        n, gained = by_hand_graphs({op})
        assert live.loc[op, "nodes"] == saved.loc[op, "nodes"] == n == nodes, op
        assert live.loc[op, "accelerated_ops_gained"] == gained, op
        assert saved.loc[op, "note"].startswith(live.loc[op, "note"]), op  # + "a saved partition: counts only"
        if op != "torch.ops.aten.mul.Tensor":
            assert live.loc[op, "note"].startswith("3 more node(s) also forced by torch.ops.aten.sigmoid"), op
            assert live.loc[op, "graph"] == "g0, g1", op
    n, gained = by_hand_graphs(set(part.config.torch_executed_ops))
    assert live.loc["top 3 together", "nodes"] == n == 4
    assert live.loc["top 3 together", "accelerated_ops_gained"] == gained
