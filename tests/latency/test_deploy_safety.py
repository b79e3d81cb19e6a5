"""A compiled-model folder is safe to be sent: loading it runs nothing from it (three crafted
payloads, each live when unpickled the unsafe way, run none), TorchInductor's saved code runs only
with trusted=True, and every missing or damaged file is one HiervizError naming it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
import shutil
import warnings
from pathlib import Path

import pytest
import torch

import hierviz as hv
from hierviz.latency.deploy import load

RELU = "torch.ops.aten.relu.default"


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> dict:
        y = torch.relu(self.conv(x)) * 2
        return {"logits": self.fc(torch.sigmoid(y).mean((2, 3))), "features": y}


class Payload:
    """A pickle that writes `marker` when it is unpickled."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(model, inputs, folder): the net compiled (TorchInductor + eager) and saved once."""
    torch.manual_seed(0)
    model, inputs = Net().eval(), (torch.randn(1, 3, 8, 8),)
    part = hv.partition(model, inputs, priority=("inductor",), support={"inductor": hv.support.inductor()},
                        min_block_size=1, torch_executed_ops={RELU})
    folder = part.compile(example_inputs=inputs).save(tmp_path_factory.mktemp("saved") / "net")
    return model, inputs, folder


def copy_of(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / "copy"))


def test_a_saved_folder_holds_data_only(saved) -> None:
    _, inputs, folder = saved
    assert sorted(p.name for p in folder.iterdir()) == [
        "artifacts", "graph.json", "hierviz.json", "inputs.json", "inputs.pt", "weights.pt"]
    meta = json.loads((folder / "hierviz.json").read_text())
    assert meta["format"] == "hierviz-compiled-v2" and meta["config"]["torch_executed_ops"] == [RELU]
    assert json.loads((folder / "graph.json").read_text())["format"] == "hierviz-graph/1"
    weights = torch.load(folder / "weights.pt", weights_only=True)
    assert sorted(t.shape for t in weights.values()) == sorted(
        t.shape for t in (Net().conv.weight, Net().conv.bias, Net().fc.weight, Net().fc.bias))
    torch.testing.assert_close(torch.load(folder / "inputs.pt", weights_only=True), inputs)


def _live(marker: Path, unpickle) -> bool:
    """Whether the payload runs when unpickled the unsafe way (so not running it means something)."""
    unpickle()
    ran = marker.exists()
    marker.unlink(missing_ok=True)
    return ran


def test_pickles_under_the_old_file_names_and_in_inputs_pt_run_nothing(saved, tmp_path) -> None:
    _, _, folder = saved
    markers = {name: tmp_path / f"ran-{name}" for name in ("config.pkl", "graph.pkl", "inputs.pt")}
    # a folder of the first format, whose files were pickles: refused unopened
    old = tmp_path / "old"
    old.mkdir()
    (old / "hierviz.json").write_text(json.dumps({"format": "hierviz-compiled-v1"}))
    for name in ("config.pkl", "graph.pkl"):
        (old / name).write_bytes(pickle.dumps(Payload(markers[name])))
    torch.save(Payload(markers["inputs.pt"]), old / "inputs.pt")
    with pytest.raises(hv.MeasureError, match="older hierviz .*pickles that run code when loaded") as info:
        load(old)
    assert str(old) in str(info.value)
    # today's format with the same pickles beside it: never opened; inputs.pt of a payload refused
    new = copy_of(folder, tmp_path)
    for name in ("config.pkl", "graph.pkl"):
        shutil.copy(old / name, new / name)
    shutil.copy(old / "inputs.pt", new / "inputs.pt")
    with pytest.raises(hv.MeasureError, match="holds more than tensors") as info:
        load(new)
    assert f"{new / 'inputs.pt'} holds more than tensors" in str(info.value)
    assert "ran nothing" in str(info.value) and "save the model again" in str(info.value)
    assert not [m for m in markers.values() if m.exists()]
    # each payload is live: the old loader's pickle.loads / torch.load(weights_only=False) would have run it
    assert _live(markers["config.pkl"], lambda: pickle.loads((old / "config.pkl").read_bytes()))
    assert _live(markers["graph.pkl"], lambda: pickle.loads((old / "graph.pkl").read_bytes()))
    assert _live(markers["inputs.pt"], lambda: torch.load(old / "inputs.pt", weights_only=False))


LOAD = """
    import json, warnings
    import torch
    from hierviz.latency.deploy import load

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load({folder!r}, trusted={trusted})
    said = [str(w.message) for w in caught if "were not run" in str(w.message)]
    out = model(torch.ones(1, 3, 8, 8))["logits"]
    print(json.dumps({{"status": {{t: r.status for t, r in model.records.items()}}, "said": said,
                      "logits": out.tolist()}}))
"""


def crafted_inductor_artifact(path: Path, marker: Path) -> None:
    """Rewrite a TorchInductor artifact (standalone_compile's binary format) so that its
    AOTAutograd entry is a Payload: loading it (CompiledArtifact.load) writes `marker`. Its
    record's length and SHA-256 are rewritten too, as anyone who can write the folder can (the
    digests catch damage, not a writer: docs/safety.md)."""
    from torch.compiler._cache import CacheArtifactManager, _serialize_single_cache
    from torch.utils._appending_byte_serializer import AppendingByteSerializer, BytesReader, BytesWriter

    reader = BytesReader(path.read_bytes())
    header, torch_key, key, blob = reader.read_bytes(), reader.read_bytes(), reader.read_str(), reader.read_bytes()
    artifacts = CacheArtifactManager.deserialize(blob)
    artifacts["aot_autograd"] = [dataclasses.replace(a, content=pickle.dumps(Payload(marker)))
                                 for a in artifacts["aot_autograd"]]
    serializer = AppendingByteSerializer(serialize_fn=_serialize_single_cache)
    serializer.extend(artifacts.items())
    writer = BytesWriter()
    writer.write_bytes(header)
    writer.write_bytes(torch_key)
    writer.write_str(key)
    writer.write_bytes(serializer.to_bytes())
    crafted = writer.to_bytes()
    path.write_bytes(crafted)
    record_path = path.with_suffix(".json")
    record = json.loads(record_path.read_text())
    record["files"][path.suffix] = [len(crafted), hashlib.sha256(crafted).hexdigest()]
    record_path.write_text(json.dumps(record))


def _load_in_a_fresh_process(run_python, folder: Path, trusted: bool, inductor_cache: Path) -> dict:
    # TorchInductor's own cache is the child's: a trusted load fills it with the folder's code
    proc = run_python(LOAD.format(folder=str(folder), trusted=trusted),
                      env={"TORCHINDUCTOR_CACHE_DIR": str(inductor_cache)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # fresh processes compile the TorchInductor subgraphs again (their own TorchInductor caches)
def test_a_crafted_torchinductor_artifact_runs_only_when_trusted(saved, tmp_path, run_python) -> None:
    model, _, folder = saved
    copy, marker = copy_of(folder, tmp_path), tmp_path / "ran-inductor"
    artifacts = sorted((copy / "artifacts" / "inductor").rglob("*.bin"))
    assert len(artifacts) == 2
    for artifact in artifacts:
        crafted_inductor_artifact(artifact, marker)
    untrusted = _load_in_a_fresh_process(run_python, copy, False, tmp_path / "cache-untrusted")
    assert not marker.exists()
    assert untrusted["status"] == {"_run_on_acc_inductor_0": "compiled", "_run_on_gpu_1": "eager",
                                   "_run_on_acc_inductor_2": "compiled"}  # compiled again, not read
    assert len(untrusted["said"]) == 1 and "trusted=True" in untrusted["said"][0]
    with torch.no_grad():
        want = model(torch.ones(1, 3, 8, 8))["logits"]
    torch.testing.assert_close(torch.tensor(untrusted["logits"]), want, rtol=1e-4, atol=1e-5)
    _load_in_a_fresh_process(run_python, copy, True, tmp_path / "cache-trusted")
    assert marker.exists()  # the payload is live: trusted=True does run the folder's code


def _nodes_as_text(doc: dict) -> None:
    doc["nodes"] = "3"


def _unknown_op(doc: dict) -> None:
    next(n for n in doc["nodes"] if n["op"] == "call_function")["target"] = {"op": "nosuchlib.op.default"}


def _exec_target(doc: dict) -> None:
    next(n for n in doc["nodes"] if n["op"] == "call_function")["target"] = {"fn": "builtins.exec"}


def _call_method(doc: dict) -> None:
    node = next(n for n in doc["nodes"] if n["op"] == "call_function")
    node["op"], node["target"] = "call_method", "__reduce_ex__"


def _dunder_attr(doc: dict) -> None:
    next(n for n in doc["nodes"] if n["op"] == "get_attr")["target"] = "conv.__class__"


def _edit_json(name: str, edit):
    def damage(folder: Path) -> None:
        doc = json.loads((folder / name).read_text())
        edit(doc)
        (folder / name).write_text(json.dumps(doc))
    return damage


def _cut(name: str):
    def damage(folder: Path) -> None:
        data = (folder / name).read_bytes()
        (folder / name).write_bytes(data[: len(data) // 2])
    return damage


def _remove(name: str):
    return lambda folder: (folder / name).unlink()


def _config_of_wrong_type(doc: dict) -> None:
    doc["config"] = "min_block_size=1"


def _bad_setting(doc: dict) -> None:
    doc["config"]["min_block_size"] = "three"


DAMAGES = {
    "hierviz.json not JSON": ("hierviz.json", _cut("hierviz.json"), hv.MeasureError, "not JSON"),
    "config not an object": ("hierviz.json", _edit_json("hierviz.json", _config_of_wrong_type), hv.MeasureError,
                             "config is not a JSON object"),
    "a setting of the wrong type": ("hierviz.json", _edit_json("hierviz.json", _bad_setting), hv.MeasureError,
                                    "config cannot be read"),
    "graph.json cut short": ("graph.json", _cut("graph.json"), hv.MeasureError, "not JSON"),
    "nodes not a list": ("graph.json", _edit_json("graph.json", _nodes_as_text), hv.MeasureError, "no list of nodes"),
    "an op not registered": ("graph.json", _edit_json("graph.json", _unknown_op), hv.MeasureError,
                             "op nosuchlib.op.default is not registered in this process"),
    "exec as a call target": ("graph.json", _edit_json("graph.json", _exec_target), hv.MeasureError,
                              "'builtins.exec' is not a function a saved graph may call"),
    "a call_method node": ("graph.json", _edit_json("graph.json", _call_method), hv.MeasureError,
                           "op 'call_method' is not one of"),
    "a Python attribute read": ("graph.json", _edit_json("graph.json", _dunder_attr), hv.MeasureError,
                                "reaches a Python attribute"),
    "graph.json missing": ("graph.json", _remove("graph.json"), hv.SavedModelNotFoundError, "is missing"),
    "weights.pt cut short": ("weights.pt", _cut("weights.pt"), hv.MeasureError, "cut short"),
    "inputs.pt cut short": ("inputs.pt", _cut("inputs.pt"), hv.MeasureError, "cut short"),
    "inputs.pt missing": ("inputs.pt", _remove("inputs.pt"), hv.SavedModelNotFoundError, "is missing"),
    "inputs.pt of another shape": ("inputs.pt", lambda f: torch.save((torch.ones(2, 3, 4, 4),), f / "inputs.pt"),
                                   hv.MeasureError, "its inputs do not fit the graph"),
    "inputs.json not a description": ("inputs.json", lambda f: (f / "inputs.json").write_text("[]"),
                                      hv.MeasureError, "not an input description"),
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_file_is_one_error_naming_it(saved, tmp_path, damage) -> None:
    name, make, error, says = DAMAGES[damage]
    folder = copy_of(saved[2], tmp_path)
    make(folder)
    with pytest.raises(hv.HiervizError) as info:
        load(folder)
    assert type(info.value) is error
    message = str(info.value)
    assert str(folder / name) in message and says in message
    assert "save the model again with part.compile().save(folder)" in message


def support_everything(node) -> bool:
    return True


@pytest.mark.slow
def test_a_support_written_as_a_python_function_is_refused_at_save(saved, tmp_path) -> None:
    model, inputs, _ = saved
    part = hv.partition(model, inputs, priority=("inductor",),
                        support={"inductor": hv.support.where(support_everything)}, min_block_size=1)
    compiled = part.compile(example_inputs=inputs)
    with pytest.raises(hv.MeasureError, match="a saved model holds no code"):
        compiled.save(tmp_path / "where")
    assert not (tmp_path / "where").exists()


def test_trusted_takes_a_bool(saved) -> None:
    with pytest.raises(hv.ConfigError, match="trusted= is True or False"):
        load(saved[2], trusted="yes")


def test_an_untrusted_load_warns_once_and_gives_the_models_outputs(saved) -> None:
    model, inputs, folder = saved
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = load(folder)
    said = [str(w.message) for w in caught if issubclass(w.category, hv.MeasureWarning)]
    assert said == [f"{folder}: the saved inductor artifacts are code and were not run; those subgraphs were compiled "
                    "again. Pass trusted=True to use them for a folder you saved yourself or got from someone you "
                    "trust."]
    with torch.no_grad():
        torch.testing.assert_close(again(*inputs)["logits"], model(*inputs)["logits"], rtol=1e-4, atol=1e-5)
