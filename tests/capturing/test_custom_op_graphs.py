"""Graphs holding custom ops registered outside torch, read back in another process
(hierviz.capturing.custom_op_sources through graph_codec): a user's op from an importable module
and Torch-TensorRT's own `tensorrt::conv_asym_pad` come back from the capture cache in a fresh
interpreter without a second capture; an op defined in `__main__` is named where it cannot be had."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.capturing.aten_capture import capture_notes
from hierviz.capturing.disk_cache import CacheWarning, CaptureStore
from hierviz.capturing.graph_codec import pack_graph, unpack_graph
from hierviz.errors import CustomOpUnavailable
from tests.custom_op_models import MAIN_OP, MYSIN, PadConv, SinNet, example, main_cell_model, seeded

ROOT = Path(__file__).resolve().parents[2]
FROM_CACHE = "from the disk cache"
needs_trt = pytest.mark.skipif(not trt.available(), reason="Torch-TensorRT's lowering makes tensorrt::conv_asym_pad")

@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HIERVIZ_CACHE", raising=False)
    return tmp_path


def _ops(gm: torch.fx.GraphModule) -> set[str]:
    return {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}


def test_the_packed_graph_names_the_module_that_registers_each_custom_op() -> None:
    gm = hv.capture(seeded(SinNet), example(SinNet), cache=False)
    assert pack_graph(gm)["ops"] == {MYSIN: ("tests.custom_op_models", str(ROOT))}
    packed = pack_graph(hv.capture(*main_cell_model(), cache=False))
    assert packed["ops"] == {MAIN_OP: (None, None)}  # __main__: no other process can import it


@needs_trt
def test_torch_tensorrt_s_own_op_is_named_with_its_module() -> None:
    gm = hv.capture(seeded(PadConv), example(PadConv), cache=False)
    assert "tensorrt.conv_asym_pad.default" in _ops(gm)
    (module, _), = pack_graph(gm)["ops"].values()
    assert module.startswith("torch_tensorrt.")


@pytest.mark.slow  # a fresh interpreter: seconds of CPU
@pytest.mark.parametrize("cls", [SinNet, pytest.param(PadConv, marks=needs_trt)], ids=lambda c: c.__name__)
def test_a_custom_op_graph_comes_back_from_the_disk_cache_in_a_fresh_process(cache_dir, run_python, cls) -> None:
    model, x = seeded(cls), example(cls)
    hv.capture(model, x)
    assert CaptureStore().info()["entries"] == 1
    code = f"""
        import warnings
        warnings.simplefilter("always")
        import torch
        import hierviz as hv
        from hierviz.capturing.aten_capture import capture_notes
        from tests.custom_op_models import {cls.__name__}, example, seeded
        model, x = seeded({cls.__name__}), example({cls.__name__})
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            gm = hv.capture(model, x)
        print("NOTES", capture_notes(gm))
        print("WARNINGS", [type(w.message).__name__ for w in seen])
        print("OPS", sorted(str(n.target) for n in gm.graph.nodes if n.op == "call_function"))
        torch.save((gm(*x), model(*x)), {str(cache_dir / "out.pt")!r})
    """
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line[:5] in ("NOTES", "WARNI", "OPS ["))
    assert FROM_CACHE in lines["NOTES"], proc.stdout
    assert "CacheWarning" not in lines["WARNINGS"]
    assert lines["OPS"] == str(sorted(str(n.target) for n in hv.capture(model, x, cache=False).graph.nodes
                                      if n.op == "call_function"))
    got, expected = torch.load(cache_dir / "out.pt")
    graph_out = got[0] if isinstance(got, (tuple, list)) else got
    torch.testing.assert_close(graph_out, expected)
    torch.testing.assert_close(graph_out, model(*x))


@pytest.mark.slow  # a fresh interpreter: seconds of CPU
def test_an_op_defined_in_main_is_named_where_it_cannot_be_had(run_python, tmp_path) -> None:
    (tmp_path / "graph.pkl").write_bytes(pickle.dumps(pack_graph(hv.capture(*main_cell_model(), cache=False))))
    code = f"""
        import pickle
        from hierviz.capturing.graph_codec import unpack_graph
        from hierviz.errors import CustomOpUnavailable
        try:
            unpack_graph(pickle.load(open({str(tmp_path / "graph.pkl")!r}, "rb")))
        except CustomOpUnavailable as exc:
            print("OP", exc.op)
            print("SAYS", exc)
    """
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line[:3] in ("OP ", "SAY"))
    assert said["OP"] == MAIN_OP
    assert said["SAYS"].startswith(f"the graph's custom op {MAIN_OP} is defined in __main__")


def test_a_graph_whose_op_module_does_not_import_says_which_op(monkeypatch) -> None:
    packed = pack_graph(hv.capture(seeded(SinNet), example(SinNet), cache=False))
    packed["ops"] = {"hvtest_gone::op": ("hvtest_no_such_module", None)}
    with pytest.raises(CustomOpUnavailable, match="hvtest_gone::op is registered by module hvtest_no_such_module, "
                                                  "which does not import here") as got:
        unpack_graph(packed)
    assert (got.value.op, got.value.module) == ("hvtest_gone::op", "hvtest_no_such_module")


def test_a_cache_entry_whose_op_cannot_be_had_is_a_note_not_a_warning(cache_dir, monkeypatch) -> None:
    model, x = seeded(SinNet), example(SinNet)
    hv.capture(model, x)
    from hierviz.capturing import graph_codec

    real = graph_codec.pack_graph

    def losing_the_op(gm):  # as if the entry had been written where the op came from a module gone since
        packed = real(gm)
        packed["ops"] = {**packed["ops"], "hvtest_gone::op": ("hvtest_no_such_module", None)}
        return packed
    (key,) = [p.stem for p, _, _ in CaptureStore().entries()]
    store = CaptureStore()
    gm, meta = store.load(key, model)
    with monkeypatch.context() as patch:
        patch.setattr("hierviz.capturing.disk_cache.pack_graph", losing_the_op)
        store.save(key, gm, meta, model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        again = hv.capture(seeded(SinNet), x)
        (note,) = capture_notes(again)
        assert note.startswith("capture: the cached capture was not used (the graph's custom op hvtest_gone::op "
                               "is registered by module hvtest_no_such_module")
        assert note.endswith("so the model was captured again")
        torch.testing.assert_close(again(*x), model(*x))
        third = hv.capture(seeded(SinNet), x)  # the capture again wrote an entry this process reads: no loop
    assert FROM_CACHE in capture_notes(third)[0]


@pytest.mark.slow  # a transformers MoE capture and a fresh interpreter: seconds of CPU
def test_a_library_s_op_is_read_back_where_the_library_was_not_imported(run_python, tmp_path) -> None:
    """transformers' MoE experts call its own op transformers::grouped_mm_fallback (registered by
    transformers.integrations.moe): a process that never imported transformers reads and runs the graph."""
    transformers = pytest.importorskip("transformers")
    config = transformers.MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                                        num_experts_per_tok=2, max_position_embeddings=64, use_cache=False)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = transformers.MixtralForCausalLM(config).eval()
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(0))
    gm = hv.capture(model, (ids,), cache=False)
    packed = pack_graph(gm)
    assert packed["ops"]["transformers::grouped_mm_fallback"][0] == "transformers.integrations.moe"
    (tmp_path / "graph.pkl").write_bytes(pickle.dumps(packed))
    torch.save((ids, model(ids).logits), tmp_path / "io.pt")
    code = f"""
        import pickle, sys
        import torch
        from hierviz.capturing.graph_codec import unpack_graph
        print("BEFORE", "transformers" in sys.modules)
        gm = unpack_graph(pickle.load(open({str(tmp_path / "graph.pkl")!r}, "rb")))
        ids, expected = torch.load({str(tmp_path / "io.pt")!r})
        torch.testing.assert_close(gm(ids).logits, expected)  # the model's own output type
        print("SAME")
    """
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["BEFORE", "False", "SAME"]
