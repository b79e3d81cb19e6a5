"""MultiGraphPartition.blockers(): graph breaks ranked with each graph's op causes; a break's
figures equal partitioning the model with that break removed from its code, an op cause's equal
re-partitioning every graph without it."""

from __future__ import annotations

import pytest

import hierviz as hv
from hierviz.partitioner.blockers.blocker_causes import COLUMNS, VERDICTS
from hierviz.partitioner.blockers.multi_blockers import BREAK_KIND
from tests.dynamo_models import ThreeBreaks, break_line, three_breaks

RELU = "torch.ops.aten.relu.default"
SETTINGS = [{"min_block_size": 3}, {"min_block_size": 3, "torch_executed_ops": {RELU}},
            {"min_block_size": 5, "torch_executed_ops": {RELU}}, {"min_block_size": 7}]


@pytest.fixture(scope="module")
def captures():
    model, inputs = three_breaks()
    plain, _ = three_breaks(breaks=False)  # the same weights, without the print
    return hv.capture(model, inputs, ir="torch_compile"), hv.capture(plain, inputs, ir="torch_compile")


def _print_row(table):
    return table[(table.kind == BREAK_KIND) & (table.op == "Failed to trace builtin operator")].iloc[0]


def test_columns_breaks_and_their_places(captures) -> None:
    cap, _ = captures
    table = hv.partition(cap, min_block_size=3).blockers()
    assert list(table.columns) == ["graph", *COLUMNS]
    breaks = table[table.kind == BREAK_KIND]
    assert len(breaks) == 3 == len(cap.breaks)
    assert set(breaks.graph) == {"g0, g1", "g1, g2", "g2, g3"}
    row = _print_row(table)
    line = break_line(ThreeBreaks, "print")
    assert row.graph == "g0, g1"
    assert f"dynamo_models.py:{line}" in row.change and 'print("a done")' in row.change
    assert cap.breaks[0].hints[0] in row.note  # dynamo's hint
    assert (row.nodes, row.config) == (0, None)


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_a_break_gives_what_the_model_without_it_partitions_to(captures, settings) -> None:
    cap, plain = captures
    part = hv.partition(cap, **settings)
    by_hand = hv.partition(plain, **settings)  # the print removed from the model's code
    assert len(by_hand.graphs) == len(part.graphs) - 1
    row = _print_row(part.blockers())
    assert row.subgraphs_if_fixed == by_hand.stats["subgraphs"]
    assert row.subgraphs_saved == part.stats["subgraphs"] - by_hand.stats["subgraphs"]
    assert row.accelerated_ops_gained == by_hand.stats["accelerated_ops"] - part.stats["accelerated_ops"]


def test_a_break_between_two_tensorrt_blocks_costs_an_engine(captures) -> None:
    cap, _ = captures
    part = hv.partition(cap, min_block_size=3)
    g0, g1 = part.graphs[0].subgraphs, part.graphs[1].subgraphs
    assert g0[-1].backend == "tensorrt" and g1[0].backend == "tensorrt"
    row = _print_row(part.blockers())
    assert row.subgraphs_saved >= 1 and row.verdict == "improvement"


def test_an_op_cause_is_one_row_for_every_graph_it_is_in(captures) -> None:
    cap, _ = captures
    part = hv.partition(cap, min_block_size=3, torch_executed_ops={RELU})
    table = part.blockers()
    forced = table[table.kind == "forced"]
    assert len(forced) == 1
    row = forced.iloc[0]
    relu_graphs = [k for k, g in enumerate(cap.graphs) if RELU in g.ops]
    assert row.graph == ", ".join(f"g{k}" for k in relu_graphs) and len(relu_graphs) > 1
    assert row.nodes == sum(cap.graphs[k].ops.count(RELU) for k in relu_graphs)
    fixed = hv.partition(cap, config=row.config)  # by hand: every graph without the cause
    assert RELU not in row.config.torch_executed_ops
    assert row.subgraphs_if_fixed == fixed.stats["subgraphs"]
    assert row.subgraphs_saved == part.stats["subgraphs"] - fixed.stats["subgraphs"]
    assert row.accelerated_ops_gained == fixed.stats["accelerated_ops"] - part.stats["accelerated_ops"]


def test_rows_are_ranked_together(captures) -> None:
    cap, _ = captures
    table = hv.partition(cap, min_block_size=3, torch_executed_ops={RELU}).blockers(top=0)
    assert set(table.kind) >= {BREAK_KIND, "forced", "demoted"}
    order = [(VERDICTS.index(r.verdict), -r.subgraphs_saved, -r.accelerated_ops_gained) for r in table.itertuples()]
    assert order == sorted(order)
    kinds = list(table.kind)
    assert kinds.index(BREAK_KIND) < kinds.index("demoted")  # a break that saves engines outranks no-gain rows


def test_kind_filter_and_errors(captures) -> None:
    cap, _ = captures
    part = hv.partition(cap, min_block_size=3)
    only = part.blockers(kind="graph_break")
    assert set(only.kind) == {BREAK_KIND} and len(only) == 3
    assert set(part.blockers(kind="demoted").kind) == {"demoted"}
    with pytest.raises(hv.ConfigError, match="'graph break'"):
        part.blockers(kind="bogus")
    with pytest.raises(hv.ConfigError, match=r"part.graphs\[k\].blockers\(measure=True"):
        part.blockers(measure=True)
    before = part.blockers()
    before.loc[0, "nodes"] = 99  # a copy: the kept table is not the user's
    assert part.blockers().loc[0, "nodes"] != 99
