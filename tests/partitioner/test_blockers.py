"""Partition.blockers(): every row equals the re-partition a user would do by hand (built here
independently from the row's op and kind), on models built in the test and on zoo models, for
several engines; ranking, the kind filter, the combined row and bad arguments."""

from __future__ import annotations

import re

import pytest
import torch

import hierviz as hv
from hierviz import trt
from tests.drawing.helpers import dot_statements

needs_trt = pytest.mark.skipif(not trt.available(),
                               reason="engine='fast'/'torch_tensorrt' run torch_tensorrt's partitioners")


class Blocked(torch.nn.Module):
    """Linear layers with ops that have no TensorRT converter (hypot, copysign) between them,
    a SiLU the lowering turns into sigmoid + mul, and short runs that get demoted."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = (torch.nn.Linear(8, 8) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        y = torch.hypot(h, x)
        y = torch.nn.functional.silu(self.b(y)) * 2 + 1
        z = torch.copysign(y, h)
        z = torch.tanh(z) + torch.hypot(z, y)
        return torch.sigmoid(self.c(z)).sum(-1)


def by_hand(cfg: hv.Config, row) -> hv.Config:
    """The setting a user writes for a row, from its op and kind alone."""
    if row.kind in ("no converter", "validator rejected"):
        return cfg.replace(support={"tensorrt": hv.support.any_chain(hv.support.tensorrt(), hv.support.ops([row.op]))})
    if row.kind == "forced":
        entry = row.op if row.op in cfg.torch_executed_ops else "source:" + row.op
        return cfg.replace(torch_executed_ops=cfg.torch_executed_ops - {entry})
    if row.kind == "demoted":
        return cfg.replace(min_block_size=int(row.op.split(":")[0].split()[-1]))
    raise AssertionError(f"unexpected kind {row.kind}")


def assert_rows_by_hand(gm: torch.fx.GraphModule, part: hv.Partition, engine: str) -> set[str]:
    table = part.blockers()
    base = part.stats
    for row in table.itertuples():
        if row.kind == "combined":
            continue
        fixed = hv.partition(gm, by_hand(part.config, row), engine=engine).stats
        assert row.subgraphs_if_fixed == fixed["subgraphs"], row
        assert row.subgraphs_saved == base["subgraphs"] - fixed["subgraphs"], row
        assert row.accelerated_ops_gained == fixed["accelerated_ops"] - base["accelerated_ops"], row
    return set(table.kind)


@pytest.mark.parametrize("engine", ["hierviz", pytest.param("fast", marks=needs_trt),
                                    pytest.param("torch_tensorrt", marks=needs_trt)])
def test_rows_equal_hand_repartition(graph: torch.fx.GraphModule, engine: str) -> None:
    part = hv.partition(graph, engine=engine, min_block_size=3, torch_executed_ops={"aten.tanh.default"})
    kinds = assert_rows_by_hand(graph, part, engine)
    assert {"no converter", "forced"} <= kinds


@pytest.mark.slow  # over 5 s of CPU: left out of make check, run by make test
def test_rows_equal_hand_repartition_zoo_source_op(zoo_cache) -> None:
    gm = zoo_cache.capture("efficientnet_b0")
    cfg = dict(torch_executed_ops=hv.source_ops("aten.silu_.default") | {"aten.add.Tensor"}, min_block_size=8)
    part = hv.partition(gm, **cfg)
    kinds = assert_rows_by_hand(gm, part, "hierviz")
    assert {"forced", "demoted", "combined"} <= kinds
    table = part.blockers()
    silu = table[table.op == "torch.ops.aten.silu_.default"].iloc[0]
    forced = sum(1 for n in part.nodes().itertuples() if n.reason.startswith("runs in PyTorch: forced from"))
    assert silu.nodes == forced
    assert "hv.source_ops('aten.silu_')" in silu.change


def test_demoted_rows_and_ranking(graph: torch.fx.GraphModule) -> None:
    part = hv.partition(graph, min_block_size=6)
    table = part.blockers()
    assert "demoted" in set(table.kind)
    assert_rows_by_hand(graph, part, "hierviz")
    ranked = table[table.kind != "combined"]
    keys = list(zip(ranked.subgraphs_saved, ranked.accelerated_ops_gained))
    assert keys == sorted(keys, reverse=True)


def test_combined_row_is_the_top_rows_together(graph: torch.fx.GraphModule) -> None:
    part = hv.partition(graph, min_block_size=3, torch_executed_ops={"aten.tanh.default"})
    table = part.blockers(top=2)
    last = table.iloc[-1]
    assert last.kind == "combined" and last.op == "top 2 together"
    cfg = part.config
    for row in table.iloc[:2].itertuples():
        cfg = by_hand(cfg, row) if row.kind != "no converter" else cfg.replace(
            support={"tensorrt": hv.support.any_chain(cfg.support_for("tensorrt"), hv.support.ops([row.op]))})
    assert last.subgraphs_if_fixed == hv.partition(graph, cfg).stats["subgraphs"]
    assert "combined" not in set(part.blockers(top=0).kind)


def test_combined_row_names_one_min_block_size(graph: torch.fx.GraphModule) -> None:
    """Two demoted causes together are the smaller size alone: the change says that one."""
    from hierviz.partitioner.blockers.blocker_causes import combine, find_causes

    part = hv.partition(graph, min_block_size=6)
    demoted = [c for c in find_causes(part) if c.kind == "demoted"]
    sizes = sorted(c.block_size for c in demoted)
    assert len(sizes) >= 2
    together = combine(demoted, part.config)
    assert together.change == f"min_block_size={sizes[0]} (was 6)" and together.config.min_block_size == sizes[0]


@pytest.mark.parametrize("settings", [
    {"min_block_size": 6, "kind": "demoted"},  # all demotions: together they are the smallest size's row
    {"min_block_size": 6},
    {"min_block_size": 3, "torch_executed_ops": {"aten.tanh.default"}},
    {"min_block_size": 6, "torch_executed_ops": {"aten.tanh.default"}},
    {"min_block_size": 6, "torch_executed_ops": {"aten.tanh.default"}, "top": 5},
])
def test_the_combined_row_never_repeats_a_row(graph: torch.fx.GraphModule, settings: dict) -> None:
    """A combined row is a change no single row makes, with counts no single row has: else it
    only repeats that row (all demotions together are the smallest size's row)."""
    settings = dict(settings)
    kind, top = settings.pop("kind", None), settings.pop("top", 3)
    part = hv.partition(graph, **settings)
    table = part.blockers(kind=kind, top=top)
    rows, combined = table[table.kind != "combined"], table[table.kind == "combined"]
    assert len(combined) == (0 if kind == "demoted" else 1)  # the loop below checks a row: not an empty one
    for row in combined.itertuples():
        assert row.change not in set(rows.change)
        assert (row.subgraphs_if_fixed, row.accelerated_ops_gained) not in set(
            zip(rows.subgraphs_if_fixed, rows.accelerated_ops_gained))
    if kind == "demoted":
        assert len(rows) >= 2 and combined.empty  # it was "top 2 together: min_block_size=2 (was 6)" twice
        text = part.report()
        assert "top 2 together" not in text and text.count("min_block_size=2 (was 6)") == 1


@pytest.mark.parametrize("settings", [{"min_block_size": 3, "torch_executed_ops": {"aten.tanh.default"}},
                                      {"min_block_size": 6, "torch_executed_ops": {"aten.tanh.default"}},
                                      {"min_block_size": 6}])
def test_each_verdict_is_what_its_counts_say_and_improvements_rank_first(graph, settings: dict) -> None:
    part = hv.partition(graph, **settings)
    table = part.blockers()
    assert len(table) >= 5  # rows to check (and trade-offs among them, below)
    for row in table.itertuples():
        saved, gained = row.subgraphs_saved, row.accelerated_ops_gained
        if saved >= 0 and gained >= 0 and saved + gained > 0:
            assert row.verdict == "improvement", row
        elif saved > 0 or gained > 0:
            assert row.verdict == "trade-off", row
        else:
            assert row.verdict == "no gain", row
    order = ["improvement", "trade-off", "no gain"]
    ranks = [order.index(v) for v in table[table.kind != "combined"].verdict]
    assert ranks == sorted(ranks) and "trade-off" in set(table.verdict)


def test_what_to_change_lists_as_improvements_only_what_its_numbers_show_are(graph, tmp_path) -> None:
    """Every numbered line of "What to change" has fewer subgraphs without fewer ops accelerated,
    or more ops accelerated without more subgraphs; a trade-off is listed under "Trade-offs"
    (here every single change adds subgraphs: the report listed "1. add hypot ...: 1 subgraph(s)
    more" as the first thing to change)."""
    part = hv.partition(graph, min_block_size=6, torch_executed_ops={"aten.tanh.default"})
    section = part.report().split("-------------------- What to change --------------------")[1]
    lines = [line.strip() for line in section.strip().splitlines()]
    group = None
    seen = {"Improvements": 0, "Trade-offs": 0, "No gain": 0}
    for line in lines[1:]:
        title = next((t for t in seen if line.startswith(t + " (")), None)
        if title:
            group = title
            continue
        more_subgraphs = re.search(r"(\d+) subgraph\(s\) more", line)
        fewer_ops = re.search(r"(\d+) fewer op\(s\) accelerated", line)
        gains = (re.search(r"([1-9]\d*) subgraph\(s\) fewer", line), re.search(r"([1-9]\d*) more op\(s\)", line))
        seen[group] += 1
        if group == "Improvements":
            assert not more_subgraphs and not fewer_ops and any(gains), line
        elif group == "Trade-offs":
            assert (more_subgraphs or fewer_ops) and any(gains), line
            assert line.startswith("- ")
        else:
            assert not any(gains), line
    assert lines[1] == ("Improvements (fewer subgraphs without fewer ops accelerated, or more ops accelerated "
                        "without more subgraphs): no single change is one.")
    assert seen["Trade-offs"] >= 5 and seen["No gain"] == 1
    html = part.save(tmp_path / "r.html").read_text()
    section = html.split('<h2 id="what-to-change">')[1].split("<h2")[0]
    improvements, rest = section.split("<b>Trade-offs (")
    trade_offs, no_gain = rest.split("<b>No gain (")
    table = part.blockers()
    assert "<td>improvement</td>" not in section and "no single change is one" in improvements
    for row in table.itertuples():
        assert f"<td>{row.change}</td>" in (trade_offs if row.verdict == "trade-off" else no_gain), row


def test_a_fewer_ops_row_says_so() -> None:
    from hierviz.partitioner.blockers.blocker_causes import verdict
    from hierviz.partitioner.blockers.blocker_text import saves_text

    row = type("Row", (), {"subgraphs_saved": 2, "accelerated_ops_gained": -3, "subgraphs_if_fixed": 4, "note": ""})
    assert saves_text(row) == "2 subgraph(s) fewer (4 in all), 3 fewer op(s) accelerated"
    assert [verdict(2, -3), verdict(-1, 4), verdict(0, 1), verdict(0, 0), verdict(-1, 0), verdict(None, None)] == [
        "trade-off", "trade-off", "improvement", "no gain", "no gain", None]


def test_kind_filter(graph: torch.fx.GraphModule) -> None:
    part = hv.partition(graph, min_block_size=3, torch_executed_ops={"aten.tanh.default"})
    forced = part.blockers(kind="forced", top=0)
    assert list(forced.kind) == ["forced"] and list(forced.op) == ["torch.ops.aten.tanh.default"]
    both = part.blockers(kind=["forced", "no_converter"], top=0)
    assert set(both.kind) == {"forced", "no converter"}


def test_nothing_blocks_a_fully_accelerated_graph(zoo_cache) -> None:
    table = hv.partition(zoo_cache.capture("resnet18")).blockers()
    assert table.empty and list(table.columns)[:6] == ["op", "kind", "nodes", "subgraphs_if_fixed",
                                                         "subgraphs_saved", "accelerated_ops_gained"]


@pytest.mark.parametrize("kwargs, words", [
    ({"kind": "unsupported"}, "unknown kind 'unsupported'"),
    ({"top": -1}, "blockers(top=...)"),
    ({"kinds": "forced"}, "did you mean 'kind'"),
])
def test_bad_arguments_are_one_line(graph: torch.fx.GraphModule, kwargs: dict, words: str) -> None:
    part = hv.partition(graph)
    with pytest.raises(hv.ConfigError) as err:
        part.blockers(**kwargs)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_measured_what_ifs(graph: torch.fx.GraphModule) -> None:
    """measure=True times the rows that can run (forced, demoted) against the current setting;
    rows with no converter keep their counts and say why (TensorRT subgraphs run eagerly here:
    on_error='fallback', as on any machine without a GPU)."""
    part = hv.partition(graph, min_block_size=3, torch_executed_ops={"aten.tanh.default"})
    table = part.blockers(measure=True, device="cpu", measure_options={"on_error": "fallback", "iters": 3, "warmup": 1})
    assert list(table.columns[-5:]) == ["median_ms", "speedup", "speedup_low", "speedup_high", "measured"]
    plain = part.blockers()
    assert table.drop(columns=table.columns[-5:]).drop(columns="config").equals(plain.drop(columns="config"))
    for row in table.itertuples():
        if row.kind in ("forced", "demoted"):
            assert row.median_ms > 0 and row.speedup > 0 and row.speedup_low <= row.speedup_high, row
            assert row.measured.startswith("measured on cpu against the current setting")
        else:
            assert row.median_ms != row.median_ms and row.measured.startswith("not measured:"), row
    no_converter = table[table.kind == "no converter"].iloc[0]
    assert "no converter" in no_converter.measured and no_converter.subgraphs_if_fixed >= 1


def test_report_says_what_to_change(graph: torch.fx.GraphModule, tmp_path) -> None:
    part = hv.partition(graph, min_block_size=3, torch_executed_ops={"aten.tanh.default"})
    text = part.report()
    section = [line.strip() for line in
               text.split("-------------------- What to change --------------------")[1].strip().splitlines()]
    table = part.blockers()
    causes = table[table.kind != "combined"]
    assert section[0].startswith(f"{len(causes)} cause(s) keep nodes out of the accelerated backends.")
    improvements = causes[causes.verdict == "improvement"]
    assert len(improvements) == 3 and section[1].startswith("Improvements (")
    for line, (k, row) in zip(section[2:], enumerate(improvements.itertuples(), 1)):
        assert line.startswith(f"{k}. {row.change}: ")
        assert (f"{row.subgraphs_saved} subgraph(s) fewer ({row.subgraphs_if_fixed} in all), "
                f"{row.accelerated_ops_gained} more op(s) accelerated") in line
    assert section[5].startswith("top 3 together: 3 subgraph(s) fewer (1 in all)")
    assert section[6].startswith("Trade-offs (")
    assert section[7].startswith("- min_block_size=2 (was 3): 1 subgraph(s) more")
    assert "What to change" not in part.report(what_to_change=False)
    html = part.save(tmp_path / "r.html").read_text()
    assert '<h2 id="what-to-change">What to change</h2>' in html
    for row in causes.head(5).itertuples():
        assert f"<td>{row.change}</td>" in html


def test_highlight_marks_the_nodes_of_the_top_causes(graph: torch.fx.GraphModule) -> None:
    part = hv.partition(graph, min_block_size=3, torch_executed_ops={"aten.tanh.default"})
    source = part.render("full", highlight="blockers").source
    labels = {s.label_head: s.line for s in dot_statements(source) if "label" in s.attrs}
    table = part.blockers(top=0)
    assert len(table) <= 5  # every cause is among the top 5: every node kept out is marked
    kept_out = {n.name: n.op for n in part.nodes().itertuples() if n.backend == "torch"}
    marked = {name for name, line in labels.items() if "<B>blocker: " in line}
    assert marked == set(kept_out)
    assert "<B>blocker: no converter: aten.hypot</B>" in labels["hypot_1"]
    assert "<B>blocker: forced: aten.tanh</B>" in labels["tanh"]
    demoted = {n.name for n in part.nodes().itertuples() if n.reason.startswith("demoted")}
    assert demoted and all(re.search(r"<B>blocker: demoted: blocks of \d+</B>", labels[n]) for n in demoted)
    assert "blockers: 6 node(s) of the top 4 cause(s) marked red" in source
    plain = part.render("full").source
    assert "blocker" not in plain
    with pytest.raises(hv.RenderError, match="highlight='blocker' is not known"):
        part.render(highlight="blocker")


@needs_trt
def test_the_reports_of_a_fast_partition_run_no_partitioner_for_blockers(graph, tmp_path, monkeypatch) -> None:
    """For Torch-TensorRT's engines the HTML report shows the blockers once p.blockers() computed
    them (kept with the partition), and never re-runs the partitioner itself."""
    from hierviz.partitioner.upstream import compile_partitioners as compiled

    part = hv.partition(graph, engine="fast", min_block_size=3)
    real = compiled.partition_compiled

    def forbidden(*_args, **_kwargs):
        raise AssertionError("the HTML report ran a partitioner")

    monkeypatch.setattr(compiled, "partition_compiled", forbidden)
    text = part.save(tmp_path / "r.html").read_text()
    assert "Not computed: <code>p.blockers()</code>" in text and part.blockers(compute=False) is None
    report = part.report()  # the text report follows the same rule
    assert "Not computed: p.blockers() re-runs Torch-TensorRT's fast partitioner once per cause" in report
    monkeypatch.setattr(compiled, "partition_compiled", real)
    table = part.blockers()
    monkeypatch.setattr(compiled, "partition_compiled", forbidden)
    text = part.save(tmp_path / "r.html").read_text()
    assert f"<td>{table.iloc[0].change}</td>" in text
    assert table.iloc[0].change in part.report() and "Not computed" not in part.report()
    assert part.blockers().equals(table) and part.blockers() is not part.blockers()  # copies of the kept table


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_blockers_flags_take_bools_only(graph, value) -> None:
    part = hv.partition(graph, min_block_size=3)
    with pytest.raises(hv.ConfigError, match=r"blockers\(measure=...\) is True or False"):
        part.blockers(measure=value)
    with pytest.raises(hv.ConfigError, match=r"blockers\(compute=...\) is True or False"):
        part.blockers(compute=value)
