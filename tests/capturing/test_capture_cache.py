"""The capture cache on disk (hierviz.capturing.disk_cache): a model captured once is taken from the
cache in a new process (here: a new model object, so the in-memory cache does not answer),
with the same graph and partition as a fresh capture; a changed model is never served from
it; unreadable entries are captured again with one warning; the size is bounded."""

from __future__ import annotations

import importlib.util
import pickle
import sys
import warnings

import pytest
import torch
from torch import nn
from torch.export import Dim

import hierviz as hv
from hierviz import trt
from hierviz.capturing import disk_cache as capture_cache
from hierviz.capturing.capture_key import capture_key
from hierviz.capturing.disk_cache import CacheWarning, CaptureStore
from hierviz.foundation import cache_folder
from hierviz.capturing.aten_capture import capture_notes
from inplace_models import EMA
from tests.disk_helpers import left_temp

FROM_CACHE = "from the disk cache"


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HIERVIZ_CACHE", raising=False)
    return tmp_path


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean((2, 3))).softmax(-1)


def small(seed_shift: float = 0.0) -> nn.Module:
    model = Small().eval()
    with torch.no_grad():
        model.fc.weight[0, 0] += seed_shift
    return model


X = (torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(1)),)


def entries() -> int:
    return CaptureStore().info()["entries"]


def facts(p: hv.Partition) -> list[tuple]:
    t = p.records
    return [(n.name, p.tag_of(n.name), p.reason_of(n.name), t.module_path[i], t.shape[i], t.dtype[i])
            for i, n in enumerate(p.graph.graph.nodes)]


def test_a_second_capture_comes_from_the_cache_and_partitions_the_same(cache_dir) -> None:
    fresh = hv.partition(small(), X, min_block_size=1, priority=("tensorrt", "inductor"))
    assert entries() == 1 and not any(FROM_CACHE in n for n in fresh.notes)
    cached = hv.partition(small(), X, min_block_size=1, priority=("tensorrt", "inductor"))
    assert any(FROM_CACHE in n for n in cached.notes)
    assert facts(cached) == facts(fresh)
    assert cached.graph.code == fresh.graph.code
    torch.testing.assert_close(cached.module(*X), small()(*X))


def test_zoo_model_from_the_cache_has_the_same_partition(cache_dir) -> None:
    model, inputs = hv.zoo.load("resnet18")  # not the session's model: its capture here keeps no verdicts
    fresh = hv.capture(model, inputs, cache=False)
    assert entries() == 0
    hv.capture(hv.zoo.load("resnet18")[0], inputs)  # stored
    cached = hv.capture(hv.zoo.load("resnet18")[0], inputs)
    assert any(FROM_CACHE in n for n in capture_notes(cached))
    for config in ({}, {"torch_executed_ops": {"torch.ops.aten.relu.default"}, "min_block_size": 2}):
        assert facts(hv.partition(cached, **config)) == facts(hv.partition(fresh, **config))


@pytest.mark.parametrize("change", ["weight", "input shape", "torch_tensorrt version", "train mode"])
def test_a_changed_model_is_never_served_from_the_cache(cache_dir, monkeypatch, change) -> None:
    hv.capture(small(), X)
    model, inputs = small(), X
    if change == "weight":
        model = small(seed_shift=1e-6)
    elif change == "input shape":
        inputs = (torch.randn(3, 3, 8, 8),)
    elif change == "train mode":
        model.train()
    else:
        name, version = trt.installed_distribution() or ("torch-tensorrt", "0")
        monkeypatch.setattr(trt, "installed_distribution", lambda: (name, f"{version}.post1"))
    gm = hv.capture(model, inputs)
    assert capture_notes(gm) == ()
    assert entries() == 2
    if change == "weight":
        assert any(torch.equal(t, model.fc.weight) for t in gm.state_dict().values())


def _module_from(tmp_path, text: str, version: int) -> type:
    path = tmp_path / f"v{version}" / "cached_net.py"
    path.parent.mkdir()
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("cached_net", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["cached_net"] = module
    spec.loader.exec_module(module)
    return module.Net


NET = """
import torch
class Net(torch.nn.Module):
    def forward(self, x):
        return {body}
"""


def test_a_changed_forward_source_is_never_served_from_the_cache(cache_dir, tmp_path) -> None:
    first = _module_from(tmp_path, NET.format(body="torch.relu(x) + 1"), 1)
    hv.capture(first(), X)
    second = _module_from(tmp_path, NET.format(body="torch.sigmoid(x) + 1"), 2)
    gm = hv.capture(second(), X)
    assert capture_notes(gm) == () and entries() == 2
    assert "sigmoid" in gm.code
    sys.modules.pop("cached_net", None)


def test_a_stale_entry_is_captured_again_and_the_notes_say_so(cache_dir) -> None:
    hv.capture(small(), X)
    store = CaptureStore()
    (path, _, _), = store.entries()
    entry = pickle.loads(path.read_bytes())
    attrs = entry["graph"]["attrs"]
    assert "fc.weight" in attrs  # kept as a reference to the model's own weight, not a copy
    changed = small().fc.weight.detach().clone()
    changed[0] += 1.0  # one class's logit: the stored graph is no longer the model's
    attrs["fc.weight"] = changed
    store._write(entry["key"], entry)  # a sound file (its record agrees) holding a graph that is not the model's
    p = hv.partition(small(), X)
    assert any("differed from the model's" in n for n in p.notes)
    torch.testing.assert_close(p.module(*X), small()(*X))
    assert any(FROM_CACHE in n for n in hv.partition(small(), X).notes)  # stored again, now right


@pytest.mark.parametrize("damage", [b"", b"not a pickle", "other format"])
def test_an_unreadable_entry_is_captured_again_with_one_warning(cache_dir, damage) -> None:
    hv.capture(small(), X)
    (path, _, _), = CaptureStore().entries()
    path.write_bytes(pickle.dumps({"format": "something else"}) if damage == "other format" else damage)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gm = hv.capture(small(), X)
    assert [type(w.message) for w in caught if issubclass(w.category, CacheWarning)] == [CacheWarning]
    assert "could not be read" in str(next(w.message for w in caught if w.category is CacheWarning))
    assert capture_notes(gm) == ()
    assert any(FROM_CACHE in n for n in capture_notes(hv.capture(small(), X)))


def test_an_entry_changed_on_disk_is_never_served(cache_dir) -> None:
    """A well-formed entry whose bytes are not the ones written (its meta edited here) is caught
    by its length and SHA-256: one warning, captured again, the edit never reaches the graph."""
    hv.capture(small(), X)
    (path, _, _), = CaptureStore().entries()
    entry = pickle.loads(path.read_bytes())
    entry["meta"] = {"tampered": True}
    path.write_bytes(pickle.dumps(entry))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gm = hv.capture(small(), X)
    said = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(said) == 1 and "could not be read (its capture file" in said[0]
    assert "tampered" not in gm.meta and capture_notes(gm) == ()


def test_turned_off_by_argument_or_environment(cache_dir, monkeypatch) -> None:
    hv.capture(small(), X, cache=False)
    assert entries() == 0
    monkeypatch.setenv("HIERVIZ_CACHE", "0")
    hv.capture(small(), X)
    assert entries() == 0
    assert not list(cache_dir.rglob("*.capture"))


def test_cache_takes_true_or_false() -> None:
    with pytest.raises(hv.ConfigError, match=r"cache=\.\.\.\) is True .* or False, not str 'yes'"):
        hv.capture(small(), X, cache="yes")


def test_dynamic_shape_captures_are_not_stored(cache_dir) -> None:
    gm = hv.capture(small(), X, dynamic_shapes=({0: Dim("batch", min=2, max=8)},))
    assert not capture_cache.storable(gm)
    assert entries() == 0


def test_in_place_update_warnings_are_said_again_on_a_hit(cache_dir) -> None:
    from hierviz.capturing.aten_capture import CaptureWarning

    x = (torch.randn(4, 3),)
    for _ in range(2):
        with pytest.warns(CaptureWarning, match="EMA.forward updates buffer\\(s\\) 'ema' in place"):
            gm = hv.capture(EMA(), x)
    assert any(FROM_CACHE in n for n in capture_notes(gm))


def test_least_recently_used_entries_go_first(tmp_path) -> None:
    graphs = {k: hv.zoo.synthetic(300, seed=k) for k in range(3)}
    store = CaptureStore(tmp_path, max_bytes=10**9)
    store.save("a", graphs[0], {})
    size = store.entries()[0][1]
    store.store.max_bytes = int(2.5 * size)
    store.save("b", graphs[1], {})
    assert store.load("a")[0] is not None  # a used after b: b is now the least recently used
    store.save("c", graphs[2], {})
    kept = {p.name.split(".")[0] for p, _, _ in store.entries()}
    assert kept == {"a", "c"}
    assert store.load("b") == (None, {})
    assert store.clear() == 2 and store.entries() == []


def test_cli_cache_info_and_clear(cache_dir, capsys) -> None:
    from hierviz.cli.commands import main

    hv.capture(small(), X)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(cache_dir) in out and "1 entry" in out
    assert main(["cache", "clear"]) == 0
    assert "removed 1 cached capture(s)" in capsys.readouterr().out
    assert entries() == 0


def _printed_in_two_processes(run_python, code: str) -> list[list[str]]:
    """The words `code` prints, run in two fresh interpreters (each must succeed)."""
    runs = [run_python(code) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-2000:]
    return [r.stdout.split() for r in runs]


@pytest.mark.slow  # a fresh process or a worker of its own: seconds of CPU (make check leaves it out)
def test_the_key_is_the_same_in_every_process(run_python) -> None:
    """A transformers model (its config and generation config included) and a torchvision one."""
    code = ("import hierviz as hv\n"
            "from hierviz.capturing.capture_key import capture_key\n"
            "from hierviz.capturing.aten_capture import _spec\n"
            "for name in ('llama', 'mobilenet_v3_small'):\n"
            "    model, x = hv.zoo.load(name)\n"
            "    print(capture_key(model, _spec(x), None))\n")
    keys = _printed_in_two_processes(run_python, code)
    # printed: a key that is None reads "None"
    assert len(keys[0]) == 2 and "None" not in keys[0] and keys[0] == keys[1]


def test_a_forward_without_source_has_the_same_key_in_every_process(run_python) -> None:
    """A forward made with exec (no source to read) is keyed by its code: a lambda inside it
    (a code object whose repr holds its address) must not make the key differ per process."""
    code = ("import torch\n"
            "from hierviz.capturing.capture_key import capture_key\n"
            "ns = {'torch': torch}\n"
            "exec('def forward(self, x):\\n    f = lambda t: t * 2\\n    return f(x)\\n', ns)\n"
            "M = type('M', (torch.nn.Module,), {'forward': ns['forward']})\n"
            "print(capture_key(M(), ('x',), None))\n")
    keys = _printed_in_two_processes(run_python, code)
    assert keys[0][-1] != "None" and keys[0] == keys[1]


def test_hooks_are_keyed_by_their_function_not_their_handle_number() -> None:
    """A hook's handle id counts every hook made in the process: a model hooked after some
    other hook was made has the same key as one hooked before."""
    def hook(module, args, output):
        return output

    def hooked() -> torch.nn.Module:
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 2)
        model.register_forward_hook(hook)
        model.register_forward_pre_hook(lambda module, args: None, with_kwargs=False)
        return model

    first = capture_key(hooked(), ("x",), None)
    torch.nn.ReLU().register_forward_hook(hook)  # another module's hook, made in between
    assert capture_key(hooked(), ("x",), None) == first is not None


# ---------------------------------------------------------------------------- temp files and the folder itself
def _temp(folder, pid: int):
    """A half-written entry of `pid`, untouched for longer than a writer leaves its file."""
    from hierviz.foundation import temp_files

    return left_temp(folder, f"{temp_files.prefix(pid)}w1x2.capture")


def test_a_killed_captures_temp_file_is_removed_by_the_next_run_a_running_ones_left(cache_dir, writers) -> None:
    killed, writing = writers
    left, busy = _temp(cache_dir / "captures", killed), _temp(cache_dir / "captures", writing)
    hv.capture(small(), X)
    assert not left.exists() and busy.exists()
    assert entries() == 1


def test_cache_info_counts_a_killed_captures_temp_file_and_clear_removes_it(cache_dir, writers, capsys) -> None:
    from hierviz.cli.commands import main

    killed, writing = writers
    left, busy = _temp(cache_dir / "captures", killed), _temp(cache_dir / "captures", writing)
    assert main(["cache", "info"]) == 0
    assert "temp files: 2 temp files (0.0 MiB), 1 of them left by runs that ended mid-write" in capsys.readouterr().out
    assert left.exists()  # info counts, it removes nothing
    assert main(["cache", "clear"]) == 0
    assert not left.exists() and busy.exists()


def test_a_cache_folder_that_is_a_file_is_one_warning_and_captures_go_on(tmp_path, monkeypatch) -> None:
    taken = tmp_path / "cache"
    taken.write_text("not a folder")
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(taken))
    monkeypatch.delenv("HIERVIZ_CACHE", raising=False)
    monkeypatch.setattr(cache_folder, "_SAID", set())  # (said once per process)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = hv.partition(small(), X, min_block_size=1)
        second = hv.partition(small(), X, min_block_size=1)
    said = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert said == [f"hierviz's cache is off: HIERVIZ_CACHE_DIR={str(taken)!r} is a file, not a folder; set "
                    "HIERVIZ_CACHE_DIR to a folder (or unset it for the default ~/.cache/hierviz)"]
    assert facts(first) == facts(second) and taken.read_text() == "not a folder"
