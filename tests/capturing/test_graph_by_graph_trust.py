"""Graph by graph, trusted (issue 42): a model that fails under torch.compile says why on the
first line (dynamo wraps the model's own error in its fake-tensor errors; the message names the
model's error), and a model that runs entirely in Python, or accelerates nothing, is never
called "coverage 100%"."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from tests.dynamo_models import BreakInALoop

CONV = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).eval()
LINEAR = torch.nn.Sequential(torch.nn.Linear(16, 4), torch.nn.ReLU()).eval()
HEAD = "running Sequential under torch.compile (as torch_tensorrt.compile(ir='torch_compile') does) failed: "


@pytest.mark.parametrize(("model", "x", "cause"), [
    (CONV, torch.randn(1, 4, 16, 16), "RuntimeError: Given groups=1, weight of size [8, 3, 3, 3], expected "
                                      "input[1, 4, 16, 16] to have 3 channels, but got 4 channels instead"),
    (CONV, torch.randn(1, 3, 16, 16, dtype=torch.float64),
     "RuntimeError: Input type (double) and bias type (float) should be the same"),
    (LINEAR, torch.randn(2, 12), "RuntimeError: a and b must have same reduction dim, but got [2, 12] X [16, 4]."),
], ids=["channels", "float64", "linear"])
def test_the_models_own_error_is_on_the_first_line(model, x, cause):
    with pytest.raises(hv.CaptureError) as err:
        hv.partition(model, (x,), ir="torch_compile")
    assert str(err.value).splitlines()[0] == HEAD + cause


class ItemLoop(torch.nn.Module):
    """A `.item()` branch inside a Python loop: dynamo runs the whole frame in Python."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(3):
            if x.sum().item() > 0:
                x = self.lin(x)
        return x


class PrintEveryGraph(torch.nn.Module):
    """A print between every two ops: each graph has fewer ops than min_block_size."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.a(x)
        print("between")
        return self.b(x)


def test_nothing_captured_is_not_called_100_percent():
    mp = hv.partition(ItemLoop().eval(), (torch.randn(2, 4),), ir="torch_compile")
    s = mp.stats
    assert s["graphs"] == 0 and s["nothing_captured"]
    assert (s["coverage"], s["accelerated_coverage"]) == (0.0, 0.0)
    assert repr(mp).startswith("<hv.MultiGraphPartition ItemLoop: nothing captured: the whole forward runs in "
                               "Python (1 graph breaks), accelerated 0%")
    with pytest.raises(hv.PartitionCheckError) as err:
        hv.check(mp, min_coverage=0.99)
    assert "nothing captured: the whole forward runs in Python: dynamo made no graph" in str(err.value)
    with pytest.raises(hv.PartitionCheckError):
        hv.check(mp, max_subgraphs=10)  # no limit passes a model that runs entirely in Python
    row = mp.blockers().iloc[0]
    assert row.kind == "graph break" and row.verdict != "no gain"
    assert row.note.startswith("nothing captured: the whole forward runs in Python, because of this break")
    assert "Nothing captured: the whole forward runs in Python: dynamo made no graph" in mp.report()


def test_a_model_with_nothing_accelerated_says_accelerated_0_percent(capsys):
    mp = hv.partition(PrintEveryGraph().eval(), (torch.randn(2, 4),), ir="torch_compile")
    capsys.readouterr()
    s = mp.stats
    assert s["graphs"] == 2 and s["accelerated_ops"] == 0 and s["accelerated_coverage"] == 0.0
    assert repr(mp).endswith(", accelerated 0%>")
    assert "accelerated (0.00%)" in mp.report()


def test_the_explorer_and_diff_take_a_capture_with_nothing_in_it():
    model, x = ItemLoop().eval(), (torch.randn(2, 4),)
    mp = hv.partition(model, x, ir="torch_compile")
    assert hv.diff(mp, mp).empty  # the same partition: no difference, not "different models"
    gx = hv.explore(model, x, ir="torch_compile")
    try:
        assert gx.explorer is None and gx.picker.disabled and not gx.internal_errors
        shown = gx.holder.children[0].value
        assert "Nothing captured: the whole forward runs in Python" in shown and "test_graph_by_graph_trust.py" in shown
        assert repr(gx).endswith("0 graphs, nothing captured>")
    finally:
        gx.close()


class Identity(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def test_diff_of_graphs_with_nothing_to_partition_is_empty():
    a = hv.partition(Identity(), (torch.randn(2, 4),))
    b = hv.partition(Identity(), (torch.randn(2, 4),), min_block_size=1)
    assert hv.diff(a, b).empty


class SetsItsScalesOnFirstCall(torch.nn.Module):
    """As torchvision's MultiScaleRoIAlign: the first call sets a plain attribute the later
    calls read, so the graph changes after the model ran once."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scales: list[float] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.scales is None:
            self.scales = [2.0]
            return self.lin(x)
        return (self.lin(x) * self.scales[0]).relu()


@pytest.mark.parametrize("ir", ["dynamo", "torch_compile"])
def test_a_model_whose_own_state_changed_is_captured_again(ir):
    model, x = SetsItsScalesOnFirstCall().eval(), (torch.randn(2, 4),)
    before = hv.partition(model, x, ir=ir, min_block_size=1)
    assert model.scales is None  # capturing ran a private copy
    model(*x)
    after = hv.partition(model, x, ir=ir, min_block_size=1)
    assert after.stats["nodes"] == before.stats["nodes"] + 2  # the mul and the relu
    fresh = hv.partition(model, x, ir=ir, min_block_size=1)
    assert fresh.stats == after.stats


def test_a_loaded_graph_by_graph_partition_advises_the_path_that_works(tmp_path, capsys):
    model, x = PrintEveryGraph().eval(), (torch.randn(2, 4),)
    saved = hv.partition(model, x, ir="torch_compile", min_block_size=1).save(tmp_path / "mp.json")
    capsys.readouterr()
    loaded = hv.load_partition(saved)
    with pytest.raises(hv.SavedPartitionError) as err:
        hv.measure(loaded, x, model=model, device="cpu")
    assert "hv.partition(model, inputs, config, ir='torch_compile')" in str(err.value)


def test_a_saved_file_whose_counts_disagree_is_refused(tmp_path, capsys):
    import json

    model, x = PrintEveryGraph().eval(), (torch.randn(2, 4),)
    saved = hv.partition(model, x, ir="torch_compile", min_block_size=1).save(tmp_path / "mp.json")
    capsys.readouterr()
    doc = json.loads(saved.read_text())
    doc["breaks"] = doc["breaks"] * 2
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(hv.SavedPartitionError, match="its stats say 1 graph breaks, but it holds 2"):
        hv.load_partition(tmp_path / "bad.json")


def test_len_index_recommend_and_compile_today_across_graphs(capsys):
    model, x = PrintEveryGraph().eval(), (torch.randn(2, 4),)
    mp = hv.partition(model, x, ir="torch_compile", min_block_size=1)
    capsys.readouterr()
    assert len(mp) == 2 and mp[1] is mp.graphs[1] and mp["g0"] is mp.graphs[0]
    with pytest.raises(hv.ConfigError, match="no graph 5: this model has 2 graph"):
        mp[5]
    table = mp.recommend([1, 3]).set_index("min_block_size")
    for size in (1, 3):
        again = hv.partition(model, x, ir="torch_compile", min_block_size=size)
        assert table.loc[size, "subgraphs"] == again.stats["subgraphs"]
        assert table.loc[size, "tensorrt"] == again.stats["subgraphs_by_backend"]["tensorrt"]
    capsys.readouterr()
    today = mp.compile_today()
    assert [t.partition.stats["subgraphs"] for t in today] == [g.compile_today().partition.stats["subgraphs"]
                                                               for g in mp.graphs]


class BreakInTheMiddle(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        torch._dynamo.graph_break()
        return self.b(y).relu()


def test_each_new_graph_says_why_it_starts():
    x = (torch.randn(2, 8),)
    looped = hv.partition(BreakInALoop().eval(), x, ir="torch_compile", min_block_size=1)
    assert len(looped.graphs) == 2 and len(looped.breaks) == 1
    first, second = looped.capture.graphs
    assert first.starts == ""
    assert second.starts.startswith("a new frame: forward (") and "tests/dynamo_models.py:" in second.starts
    assert second.starts.endswith("called from Python that dynamo ran eagerly")
    assert f"Starts here: {second.starts}." in looped.report()
    middle = hv.partition(BreakInTheMiddle().eval(), x, ir="torch_compile", min_block_size=1)
    resumed = middle.capture.graphs[1].starts
    assert resumed.startswith("dynamo resumes forward (") and " after the graph break at " in resumed


def test_a_node_of_a_graph_left_whole_says_so(capsys):
    mp = hv.partition(PrintEveryGraph().eval(), (torch.randn(2, 4),), ir="torch_compile", min_block_size=3)
    capsys.readouterr()
    assert mp.left_whole(0)
    why = mp.reason_of("g0/addmm")
    assert why == ("left whole: fewer than min_block_size (3) supported ops in this graph (2), so torch.compile's "
                   "backend returns g0 unchanged and it runs in PyTorch")
    assert mp.reason_of("g0/arg0_1") == "graph input: not partitioned"


def test_the_html_legend_has_a_pytorch_swatch(tmp_path, capsys):
    from hierviz.drawing import palette

    mp = hv.partition(PrintEveryGraph().eval(), (torch.randn(2, 4),), ir="torch_compile", min_block_size=3)
    capsys.readouterr()
    page = mp.save(tmp_path / "mp.html").read_text()
    legend = page.split('<div class="hv-stats">backends:', 1)[1].split("</div>", 1)[0]
    assert f'background:{palette.fill("torch")}' in legend and legend.endswith("torch")


def test_measuring_with_inputs_unlike_the_capture_is_refused(capsys):
    model = PrintEveryGraph().eval()
    mp = hv.partition(model, (torch.randn(2, 4),), ir="torch_compile", min_block_size=1)
    capsys.readouterr()
    with pytest.raises(hv.MeasureError, match=r"these inputs \(float32\[3, 4\]\) are not the ones the model was "
                                              r"captured with \(float32\[2, 4\]\)"):
        hv.measure(mp, (torch.randn(3, 4),), device="cpu", warmup=1, iters=2)
    m = hv.measure(mp, (torch.randn(2, 4),), device="cpu", warmup=1, iters=2, on_error="fallback")  # captured shapes
    assert m.outputs_match
