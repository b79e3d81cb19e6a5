"""One name for the eager baseline (issue 58 item 5): hv.measure's verdict and repr, the `verdict`
column of hv.sweep and hv.tune tables and the explorer's stats line call it "eager PyTorch" as
hv.tune does, and say what ran in the same brackets: your nn.Module, or the captured graph when
there is no nn.Module (a bare graph). Timings are scripted (tests.small_net.ScriptedClock)."""

from __future__ import annotations

import html
import re

import hierviz as hv
from hierviz.compare.tune_result import EAGER_MODULE as TUNE_EAGER_MODULE
from hierviz.latency.baseline_names import EAGER, EAGER_MODULE, GRAPH_EAGER
from hierviz.partitioner.graph_copy import copy_graph_module
from hierviz.widget.panels import latency_html

from tests.small_net import SCRIPTED_COMPILERS

EVERY_CALL = hv.support.where(lambda node: node.op == "call_function", name="every op")
SUPPORT = {"fast": EVERY_CALL, "same": EVERY_CALL}
MEASURE = {"warmup": 0, "iters": 20, "compilers": SCRIPTED_COMPILERS}


def _shown(text: str) -> str:
    """What the page shows of an HTML line: its text without tags."""
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def _measure(graph, inputs):
    part = hv.partition(graph, priority=("fast",), support=SUPPORT, min_block_size=1)
    return hv.measure(part, inputs, per_subgraph=False, **MEASURE)


def test_measure_says_which_eager_pytorch_it_was_compared_with(small, scripted_timing):
    model, inputs, gm = small
    # a copy of the captured graph is a bare graph: no nn.Module behind it
    by_model, by_graph = _measure(gm, inputs), _measure(copy_graph_module(gm), inputs)
    assert TUNE_EAGER_MODULE == EAGER_MODULE == "eager PyTorch (your nn.Module)"  # hv.tune's words are these
    for m, name in ((by_model, EAGER_MODULE), (by_graph, GRAPH_EAGER)):
        assert m.against == name
        assert m.verdict == f"faster than {name}"
        assert re.search(rf"; {re.escape(name)} [\d.]+ ms, speedup [\d.]+x \(95% CI [\d.-]+x: faster than "
                         rf"{re.escape(name)}\);", repr(m)), repr(m)
        assert m.to_dict()["verdict"] == m.verdict
        line = latency_html(m)
        assert f"{m.speedup:.3g}× vs eager PyTorch (95% CI" in _shown(line)
        assert ": faster than eager PyTorch)" in _shown(line)
        assert f'title="{html.escape(name)}"' in line  # the long form in the tooltip
    assert re.search(rf"; {re.escape(GRAPH_EAGER)} [\d.]+ ms;", repr(by_model))  # the graph's own figure beside it
    assert repr(by_graph).count(GRAPH_EAGER) == 2  # its figure and the verdict: the same timing is not said twice


def test_the_sweep_and_tune_tables_name_the_baseline_as_the_measurement_does(small, scripted_timing):
    model, inputs, gm = small
    base = hv.Config(priority=("same",), support=SUPPORT, min_block_size=1)
    for source, name in ((model, EAGER_MODULE), (copy_graph_module(gm), GRAPH_EAGER)):
        table = hv.sweep(source, inputs, {"priority": [("same",), ("fast",)]}, base=base, measure=MEASURE,
                         progress=False)
        verdicts = dict(zip(table["priority"], table["verdict"]))
        assert verdicts == {"same": f"no clear difference from {name}", "fast": f"faster than {name}"}
        res = hv.tune(source, inputs, {"priority": [("same",), ("fast",)]}, base=base, measure=MEASURE,
                      pruning=False, progress=False)
        assert res.against == name
        trials = dict(zip(res.trials["priority"], res.trials["verdict"]))
        assert trials == {"same": f"no clear difference from {name}", "fast": f"faster than {name}"}


def test_a_measurement_without_a_baseline_says_so_in_the_same_words(small, scripted_timing):
    _, inputs, gm = small
    part = hv.partition(gm, priority=("fast",), support=SUPPORT, min_block_size=1)
    m = hv.measure(part, inputs, per_subgraph=False, baseline=False, **MEASURE)
    assert m.against is None and m.verdict == f"not compared with {EAGER}"
