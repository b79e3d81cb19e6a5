"""The validated TensorRT verdicts stored with a captured graph (hierviz.support.stored_verdicts): a
graph from the capture cache partitions with the default support without asking the converter
registry (nor, in a new process, importing torch_tensorrt), gives the partition the validators
give, and a record made by another install, torch or hierviz, for another support or on
another graph is never read."""

from __future__ import annotations

import copy
import textwrap

import pytest
import torch
from torch import nn

import hierviz as hv
from hierviz import trt
from hierviz.support import stored_verdicts
from hierviz.capturing.disk_cache import CaptureStore

pytestmark = pytest.mark.skipif(not trt.available(), reason="validated verdicts need torch_tensorrt")

FORGED = "forged verdict"


class Pooled(nn.Module):
    """A max_pool2d with ceil_mode=True: a converter exists, and its validator refuses it."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pool(torch.relu(self.conv(x)))
        return self.fc(torch.sigmoid(y).mean((2, 3)))


X = (torch.randn(2, 3, 9, 9, generator=torch.Generator().manual_seed(1)),)


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HIERVIZ_CACHE", raising=False)
    return tmp_path


@pytest.fixture()
def validations(monkeypatch) -> list[int]:
    """How many times the converter registry was set up to run validators (trt.validating)."""
    entered: list[int] = []
    real = trt.validating

    def counting():
        entered.append(1)
        return real()

    monkeypatch.setattr(trt, "validating", counting)
    return entered


def facts(p: hv.Partition) -> list[tuple]:
    return [(n.name, p.tag_of(n.name), p.reason_of(n.name)) for n in p.graph.graph.nodes]


def live(gm: torch.fx.GraphModule, monkeypatch, **config) -> hv.Partition:
    """The partition with every verdict asked of the validators (no record held)."""
    with monkeypatch.context() as m:
        m.setattr(stored_verdicts, "held", lambda graph, support: None)
        return hv.partition(gm, **config)


def pool_node(gm: torch.fx.GraphModule) -> torch.fx.Node:
    return next(n for n in gm.graph.nodes if "max_pool2d" in str(n.target))


def forge(gm: torch.fx.GraphModule) -> None:
    """Attach a record, made now, whose every verdict is a refusal no validator gives."""
    sup = hv.support.tensorrt()
    verdicts = {n.name: (False, "unsupported", FORGED) for n in gm.graph.nodes if n.op == "call_function"}
    stored_verdicts.attach(gm, stored_verdicts.make(gm.graph, sup.to_dict(), sup.names, sup.version, verdicts))


def forged_shown(p: hv.Partition) -> bool:
    return any(FORGED in p.reason_of(n.name) for n in p.graph.graph.nodes)


def test_a_cached_capture_partitions_from_its_stored_verdicts(cache_dir, validations, monkeypatch) -> None:
    hv.capture(Pooled().eval(), X)
    cached = hv.capture(Pooled().eval(), X)  # a new object: from the disk cache, with its record
    assert CaptureStore().info()["entries"] == 1
    assert stored_verdicts.META in cached.meta
    validations.clear()
    part = hv.partition(cached, min_block_size=1)
    assert validations == []  # no validator asked
    pool = pool_node(cached).name
    assert part.records.reason_code[list(part.graph.graph.nodes).index(pool_node(cached))] == "validator_rejected"
    assert "validator rejected" in part.reason_of(pool)
    asked = live(cached, monkeypatch, min_block_size=1)
    assert validations  # the validators were asked this time
    assert facts(part) == facts(asked)
    assert part.report() == asked.report()


def test_a_held_record_is_what_the_partition_shows(validations) -> None:
    """The baseline of the staleness tests below: a record that holds is read, forged or not."""
    gm = hv.capture(Pooled().eval(), X, cache=False)
    forge(gm)
    part = hv.partition(gm, min_block_size=1)
    assert forged_shown(part) and part.stats["subgraphs_by_backend"].get("tensorrt", 0) == 0
    assert validations == []
    copied = copy.deepcopy(gm)  # the same graph, another object: checked by its digest
    assert forged_shown(hv.partition(copied, min_block_size=1))


@pytest.mark.parametrize("change", ["torch-tensorrt version", "torch version", "hierviz version",
                                    "graph changed", "support setting"])
def test_a_stale_record_is_never_shown(monkeypatch, change) -> None:
    gm = hv.capture(Pooled().eval(), X, cache=False)
    forge(gm)
    config = {"min_block_size": 1}
    if change == "torch-tensorrt version":  # a faked version change of the same distribution
        name, version = trt.installed_distribution()
        monkeypatch.setattr(trt, "installed_distribution", lambda: (name, f"{version}.post1"))
    elif change == "torch version":
        monkeypatch.setattr(torch, "__version__", f"{torch.__version__}.post1")
    elif change == "hierviz version":
        monkeypatch.setattr(stored_verdicts, "__version__", "0.0.0-other")
    elif change == "graph changed":  # in place, after the record was made: no dilation, no ceil_mode
        node = pool_node(gm)
        node.args = node.args[:4]
    else:
        config["support"] = {"tensorrt": hv.support.tensorrt(validate=False)}
    part = hv.partition(gm, **config)
    assert not forged_shown(part)
    with monkeypatch.context() as m:
        m.setattr(stored_verdicts, "held", lambda graph, support: None)
        assert facts(part) == facts(hv.partition(gm, **config))
    if change == "graph changed":  # the validators' answer for the changed node
        assert part.backend_of(pool_node(gm).name) == "tensorrt"


def test_a_support_with_more_than_the_registry_reads_the_record_for_its_tensorrt_part(validations) -> None:
    """any_chain(tensorrt(), ops([...])): the registry's part from the record, the rest as given."""
    gm = hv.capture(Pooled().eval(), X, cache=False)
    forge(gm)
    sigmoid = "torch.ops.aten.sigmoid.default"
    sup = hv.support.any_chain(hv.support.tensorrt(), hv.support.ops([sigmoid]))
    part = hv.partition(gm, min_block_size=1, support={"tensorrt": sup})
    taken = [n.name for n in gm.graph.nodes if part.backend_of(n.name) == "tensorrt"]
    sigmoids = [n.name for n in gm.graph.nodes if n.target is torch.ops.aten.sigmoid.default]
    assert sigmoids and taken == sigmoids
    assert validations == []


NET = '''
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.relu(self.pool(self.conv(x))).mean((2, 3)))

X = (torch.randn(2, 3, 9, 9, generator=torch.Generator().manual_seed(1)),)
'''

REOPENED = '''
import sys
import hierviz as hv
from net import Net, X
part = hv.partition(Net().eval(), X, min_block_size=1)
part.report(); part.nodes(); part.save({svg!r})
print("cached" if any("disk cache" in n for n in part.notes) else "captured")
print("imported" if "torch_tensorrt" in sys.modules else "not imported")
print(part.reason_of(next(n.name for n in part.graph.graph.nodes if "max_pool2d" in str(n.target))))
print(part.stats["subgraphs"], part.versions["torch_tensorrt"])
'''


@pytest.mark.slow
def test_a_new_process_partitions_a_cached_capture_without_importing_torch_tensorrt(tmp_path, run_python) -> None:
    (tmp_path / "net.py").write_text(textwrap.dedent(NET))
    env = {"HIERVIZ_CACHE_DIR": str(tmp_path / "cache"), "HIERVIZ_CACHE": "1"}
    runs = [run_python(REOPENED.format(svg=str(tmp_path / f"first{i}.svg")), path_first=[tmp_path], env=env,
                       timeout=300) for i in range(2)]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr[-3000:]
    first, second = (proc.stdout.strip().splitlines()[-4:] for proc in runs)
    assert first[:2] == ["captured", "imported"]
    assert second[:2] == ["cached", "not imported"]
    assert second[2:] == first[2:]  # the same verdict, subgraphs and version
    assert "validator rejected" in second[2]
    assert (tmp_path / "first1.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


def _outside(name: str) -> tuple[nn.Module, tuple]:
    """Two models outside the zoo: torchvision's squeezenet1_1 (its max_pool2d(ceil_mode=True)
    has a converter whose validator refuses it) and a 2-layer transformers Qwen2, random weights."""
    torch.manual_seed(0)
    if name == "squeezenet1_1":
        import torchvision

        return torchvision.models.squeezenet1_1(weights=None).eval(), (torch.randn(1, 3, 64, 64),)
    import transformers

    config = transformers.Qwen2Config(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                                      use_cache=False)
    model = hv.zoo.TensorOutput(transformers.Qwen2ForCausalLM(config).eval(), "logits")
    return model, (torch.randint(0, 256, (1, 16), generator=torch.Generator().manual_seed(0)),)


@pytest.mark.slow
@pytest.mark.parametrize("name", [*hv.zoo.names(), "squeezenet1_1", "qwen2"])
def test_stored_verdicts_give_the_validators_partition(name, zoo_cache, validations, monkeypatch) -> None:
    """Every zoo model and two outside it: the partition from the verdicts stored with the
    capture is the one the converter registry's validators give on the same graph."""
    if name in hv.zoo.names():
        gm = zoo_cache.capture(name)
    else:
        gm = hv.capture(*_outside(name))
    assert stored_verdicts.META in gm.meta  # stored with its capture (the session's cache folder)
    for config in ({}, {"min_block_size": 1}):
        validations.clear()
        stored = hv.partition(gm, **config)
        assert validations == []
        asked = live(gm, monkeypatch, **config)
        assert validations
        assert facts(stored) == facts(asked)
        assert stored.stats == asked.stats
    if name == "squeezenet1_1":
        assert "validator rejected" in stored.reason_of(pool_node(gm).name)
