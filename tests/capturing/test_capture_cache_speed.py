"""What a capture read from the disk cache costs: the entry holds the graph and references to the
model's weights (not a second copy of them), and a hit is checked by tracing the model on fake
tensors (the same aten ops on the same weights, constants and shapes as when it was captured),
without running the cached graph or the model's arithmetic; a model changed in a way the key does
not see (a module global its forward reads) is still caught as stale."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
import torch
from torch import nn

import hierviz as hv
from hierviz.capturing import cached_capture_check
from hierviz.capturing.aten_capture import capture_notes
from hierviz.capturing.disk_cache import CaptureStore

FROM_CACHE = "from the disk cache"
X = (torch.randn(2, 16, generator=torch.Generator().manual_seed(1)),)

SCALED = """
import torch
SCALE = 2.0
class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(16, 8)
    def forward(self, x):
        return torch.relu(self.fc(x)) * SCALE
"""


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HIERVIZ_CACHE", raising=False)
    return tmp_path


@pytest.fixture()
def scaled(tmp_path, monkeypatch):
    """The module that defines `Scaled`, whose forward reads the module global SCALE: a change
    of it is a change of the model that the cache key (code, files, weights, attributes) misses."""
    path = tmp_path / "scaled_net.py"
    path.write_text(SCALED)
    spec = importlib.util.spec_from_file_location("scaled_net", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "scaled_net", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def runs(monkeypatch):
    """How many times the capture check ran the cached graph and the model on real numbers."""
    counts = {"graph": 0, "model": 0}
    for what, name in (("graph", "_graph_outputs"), ("model", "_model_outputs")):
        original = getattr(cached_capture_check, name)

        def counted(*args, _original=original, _what=what, **kwargs):
            counts[_what] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(cached_capture_check, name, counted)
    return counts


def test_a_hit_runs_neither_the_graph_nor_the_model_and_a_change_the_key_misses_is_stale(cache_dir, scaled,
                                                                                        runs) -> None:
    hv.capture(scaled.Scaled().eval(), X)
    hit = hv.capture(scaled.Scaled().eval(), X)
    assert any(FROM_CACHE in n and "the same aten ops" in n for n in capture_notes(hit)), capture_notes(hit)
    assert runs == {"graph": 0, "model": 0}

    scaled.SCALE = 3.0  # the key is the same; the model's forward is not
    model = scaled.Scaled().eval()
    again = hv.capture(model, X)
    assert any("stale" in n and "captured again" in n for n in capture_notes(again)), capture_notes(again)
    assert not any(FROM_CACHE in n for n in capture_notes(again))
    assert runs == {"graph": 0, "model": 0}  # caught without running anything on real numbers
    torch.testing.assert_close(again(*X), model(*X))
    assert any(FROM_CACHE in n for n in capture_notes(hv.capture(scaled.Scaled().eval(), X)))  # kept again


def test_a_model_that_cannot_be_traced_on_fake_tensors_is_checked_by_one_forward(cache_dir, scaled, runs,
                                                                               monkeypatch) -> None:
    monkeypatch.setattr(cached_capture_check, "computation_digest", lambda *a, **k: None)
    hv.capture(scaled.Scaled().eval(), X)
    assert runs == {"graph": 1, "model": 0}  # the graph's outputs, kept with the entry
    runs.update(graph=0)
    hit = hv.capture(scaled.Scaled().eval(), X)
    assert any(FROM_CACHE in n and "computed when it was stored" in n for n in capture_notes(hit))
    assert runs == {"graph": 0, "model": 1}

    scaled.SCALE = 3.0
    model = scaled.Scaled().eval()
    again = hv.capture(model, X)
    assert any("differed from the model's" in n for n in capture_notes(again)), capture_notes(again)
    torch.testing.assert_close(again(*X), model(*X))


class Wide(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.a = nn.Linear(512, 512)
        self.b = nn.Linear(512, 512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


def test_the_entry_holds_references_to_the_models_weights_not_their_bytes(cache_dir) -> None:
    model = Wide().eval()
    weights = sum(p.nbytes for p in model.parameters())  # 2.1 MB
    hv.capture(model, (torch.randn(4, 512),))
    (_, size, _), = CaptureStore().entries()
    assert size < weights / 20, (size, weights)
    hit = hv.capture(Wide().eval(), (torch.randn(4, 512),))
    assert any(FROM_CACHE in n for n in capture_notes(hit))
    torch.testing.assert_close(hit(torch.ones(4, 512)), Wide().eval()(torch.ones(4, 512)))


HIT_IN_A_NEW_PROCESS = """
import json, torch
import hierviz as hv
from hierviz.capturing import aten_capture, cached_capture_check
from scaled_net import Scaled
runs = []
for name in ("_graph_outputs", "_model_outputs"):
    original = getattr(cached_capture_check, name)
    setattr(cached_capture_check, name, lambda *a, _o=original, _n=name, **k: runs.append(_n) or _o(*a, **k))
x = (torch.randn(2, 16, generator=torch.Generator().manual_seed(1)),)
print(json.dumps({"notes": list(aten_capture.capture_notes(hv.capture(Scaled().eval(), x))), "runs": runs}))
"""


@pytest.mark.slow  # two fresh processes
def test_a_new_process_takes_the_capture_by_its_trace_alone(run_python, tmp_path) -> None:
    """The traced computation's digest is the same in every process (no ids, addresses or hash
    seeds in it), so a new process's hit runs nothing on real numbers either."""
    (tmp_path / "scaled_net.py").write_text(SCALED)
    said = []
    for _ in range(2):
        proc = run_python(HIT_IN_A_NEW_PROCESS, path_first=[tmp_path],
                          env={"HIERVIZ_CACHE_DIR": str(tmp_path / "cache"), "HIERVIZ_CACHE": "1"})
        assert proc.returncode == 0, proc.stderr[-2000:]
        said.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert not any(FROM_CACHE in n for n in said[0]["notes"])
    assert any(FROM_CACHE in n and "the same aten ops" in n for n in said[1]["notes"]), said[1]
    assert said[1]["runs"] == []
