"""Issue 42: torch.compile's captures (ir="torch_compile") are kept on disk, keyed like the export
path's (hierviz.capturing.disk_cache): a second process reads the capture back without running
torch.compile; a change to the weights, a plain attribute, the code or the inputs captures again;
an unreadable entry is a CacheWarning and a fresh capture (not an error); a graph run eagerly
after Torch-TensorRT's backend failed on it is kept too; `hierviz cache info|clear` cover them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch

import hierviz as hv
from hierviz.capturing.by_graph import cached_graphs
from hierviz.capturing.by_graph import dynamo_capture
from hierviz.capturing.disk_cache import CacheWarning, CaptureStore

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parents[1]))
from dynamo_models import Prints  # noqa: E402


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture()
def counted(monkeypatch):
    """How many times torch.compile ran (capture_by_graph_break)."""
    calls = {"n": 0}
    real = cached_graphs.capture_by_graph_break

    def counting(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(cached_graphs, "capture_by_graph_break", counting)
    return calls


def _model(seed: int = 0) -> tuple[torch.nn.Module, tuple]:
    torch.manual_seed(seed)
    return Prints().eval(), (torch.randn(2, 16),)


def _same(a, b) -> None:
    assert len(a.graphs) == len(b.graphs) and len(a.breaks) == len(b.breaks)
    for g, h in zip(a.graphs, b.graphs):
        assert (g.ops, g.inputs, g.outputs, g.function, g.line, g.calls, g.starts, g.fell_back, g.sources) == \
            (h.ops, h.inputs, h.outputs, h.function, h.line, h.calls, h.starts, h.fell_back, h.sources)
        assert [n.name for n in g.graph.graph.nodes] == [n.name for n in h.graph.graph.nodes]
        assert len(g.example_inputs) == len(h.example_inputs)
        for x, y in zip(g.example_inputs, h.example_inputs):
            if isinstance(x, torch.Tensor):
                torch.testing.assert_close(x, y)
    assert [b.reason for b in a.breaks] == [b.reason for b in b.breaks]
    assert a.input_specs == b.input_specs and a.model == b.model


def test_a_new_instance_of_the_same_model_reads_the_capture_from_disk(cache_dir, counted) -> None:
    model, x = _model()
    first = hv.capture(model, x, ir="torch_compile")
    assert counted["n"] == 1 and len(CaptureStore().entries()) == 1
    again_model, _ = _model()  # equal weights, another object: not in memory
    again = hv.capture(again_model, x, ir="torch_compile")
    assert counted["n"] == 1
    _same(first, again)
    assert any("from the disk cache" in n for n in again.notes)
    assert again.graphs[0].ended_by is again.breaks[0]
    # weights the capture shares with the model are the model's own, as in a fresh capture
    params = {id(p) for p in again_model.parameters()}
    assert any(id(t) in params for g in again.graphs for t in g.example_inputs)
    mp = hv.partition(again)
    assert mp.stats == hv.partition(first).stats
    assert any("from the disk cache" in n for n in mp.notes)


def test_a_changed_model_or_input_is_captured_again(cache_dir, counted) -> None:
    model, x = _model()
    hv.capture(model, x, ir="torch_compile")
    other, _ = _model(seed=1)  # other weights
    hv.capture(other, x, ir="torch_compile")
    assert counted["n"] == 2
    attr, _ = _model()
    attr.a[3].eps = 1e-3  # a plain attribute (LayerNorm's eps)
    hv.capture(attr, x, ir="torch_compile")
    assert counted["n"] == 3
    hv.capture(_model()[0], (torch.randn(3, 16),), ir="torch_compile")  # another input shape
    assert counted["n"] == 4
    hv.capture(_model()[0], x, ir="torch_compile", cache=False)  # cache off
    assert counted["n"] == 5
    hv.capture(_model()[0], x, ir="dynamo")  # the export path keeps its own entry
    assert len(CaptureStore().entries()) == 5


def test_an_unreadable_entry_is_captured_again_with_a_warning(cache_dir, counted) -> None:
    model, x = _model()
    first = hv.capture(model, x, ir="torch_compile")
    (entry,) = [p for p, _, _ in CaptureStore().entries()]
    entry.write_bytes(b"not a pickle")
    with pytest.warns(CacheWarning, match="could not be read"):
        again = hv.capture(_model()[0], x, ir="torch_compile")
    assert counted["n"] == 2
    _same(first, again)
    assert not any("from the disk cache" in n for n in again.notes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hv.capture(_model()[0], x, ir="torch_compile")  # written again, read back
    assert counted["n"] == 2


def test_a_real_failure_is_not_cached_and_not_blamed_on_the_cache(cache_dir) -> None:
    torch.manual_seed(0)
    model = Prints().eval()
    with pytest.raises(hv.CaptureError) as info:
        hv.capture(model, (torch.randn(2, 7),), ir="torch_compile")  # a wrong input width
    assert "cache" not in str(info.value).splitlines()[0]
    assert CaptureStore().entries() == []


def test_a_graph_run_eagerly_is_kept_on_disk(cache_dir, counted, monkeypatch) -> None:
    real = dynamo_capture.lowered
    calls = {"n": 0}

    def lowered(gm, sample_inputs, target):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("no lowering for this op")
        return real(gm, sample_inputs, target)

    monkeypatch.setattr(dynamo_capture, "lowered", lowered)
    model, x = _model()
    first = hv.capture(model, x, ir="torch_compile")
    again = hv.capture(_model()[0], x, ir="torch_compile")
    assert counted["n"] == 1
    _same(first, again)
    said = "runs eagerly: Torch-TensorRT's backend failed on it (RuntimeError: no lowering for this op)"
    assert again.graphs[1].fell_back == said
    mp = hv.partition(again)
    assert mp.stats["graphs_run_eagerly"] == 1 and said in mp.graphs[1].report()
    # the graph run eagerly reads back with its shapes and dtypes: the same tables in both processes
    import pandas as pd

    pd.testing.assert_frame_equal(mp.nodes(), hv.partition(first).nodes())


def test_cache_info_and_clear_cover_graph_by_graph_captures(cache_dir, capsys) -> None:
    from hierviz.cli.commands import main

    model, x = _model()
    hv.capture(model, x, ir="torch_compile")
    assert main(["cache", "info"]) == 0
    assert "1 entry" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 1 cached capture(s)" in capsys.readouterr().out
    assert CaptureStore().entries() == []


SCRIPT = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, {tests!r})
    import hierviz as hv
    from hierviz.capturing.by_graph import cached_graphs
    from dynamo_models import Prints
    if sys.argv[1] == "second":
        def refuse(*a, **k):
            raise SystemExit("torch.compile ran again")
        cached_graphs.capture_by_graph_break = refuse
    torch.manual_seed(0)
    model = Prints().eval()
    torch.manual_seed(1)
    mp = hv.partition(model, (torch.randn(2, 16),), ir="torch_compile")
    print("REPORT", repr(mp), mp.stats["subgraphs"], len(mp.capture.breaks))
""")


@pytest.mark.slow
def test_a_second_process_reads_the_capture_back_without_torch_compile(tmp_path) -> None:
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(tests=str(Path(__file__).parents[1])))
    env = {**os.environ, "HIERVIZ_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    first = subprocess.run([sys.executable, str(script), "first"], env=env, capture_output=True, text=True,
                           timeout=300)
    assert first.returncode == 0, first.stderr
    second = subprocess.run([sys.executable, str(script), "second"], env=env, capture_output=True, text=True,
                            timeout=300)
    assert second.returncode == 0, second.stderr
    line = [ln for ln in first.stdout.splitlines() if ln.startswith("REPORT")]
    assert line and line == [ln for ln in second.stdout.splitlines() if ln.startswith("REPORT")]


def test_a_change_in_a_traced_file_the_key_does_not_cover_captures_again(cache_dir, counted, tmp_path,
                                                                          monkeypatch) -> None:
    """The key covers the model's classes' files; a function its forward calls from another file
    is covered by the entry's record of the files dynamo traced: changed, the entry is stale."""
    import importlib

    (tmp_path / "hv_helper.py").write_text("import torch\n\ndef act(x):\n    return torch.relu(x)\n")
    (tmp_path / "hv_net.py").write_text(textwrap.dedent("""
        import torch
        import hv_helper

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(8, 8)
                self.b = torch.nn.Linear(8, 8)

            def forward(self, x):
                h = hv_helper.act(self.a(x))
                print("between")
                return hv_helper.act(self.b(h))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import hv_helper
    import hv_net

    def net():
        torch.manual_seed(0)
        return hv_net.Net().eval()

    x = (torch.randn(2, 8),)
    first = hv.capture(net(), x, ir="torch_compile")
    assert first.graphs[0].traced_files == tuple(sorted({hv_net.__file__, hv_helper.__file__}))
    assert any("from the disk cache" in n for n in hv.capture(net(), x, ir="torch_compile").notes)
    assert counted["n"] == 1
    (tmp_path / "hv_helper.py").write_text("import torch\n\ndef act(x):\n    return torch.tanh(x)  # changed\n")
    importlib.reload(hv_helper)
    again = hv.capture(net(), x, ir="torch_compile")
    assert counted["n"] == 2
    assert any("stale" in n and "hv_helper.py changed" in n for n in again.notes)
    assert "torch.ops.aten.tanh.default" in again.graphs[0].ops
    assert "torch.ops.aten.relu.default" in first.graphs[0].ops
