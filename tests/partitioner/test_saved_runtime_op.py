"""A saved partition whose graph holds an op registered at run time (as transformers registers
torch.ops.transformers.grouped_mm_fallback for Mixtral and Qwen2-MoE) loads in a process where
that op does not exist (issue 37): report(), blockers(), hv.check (a PartitionCheckError for a
broken limit, never a ConfigError) and the CLI's report / blockers / check work, and reading the
file never looks an op name up in this process."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.foundation import opnames

OP = "torch.ops.hvsaved.scale.default"  # registered only in the process that saves

SAVE = """
import sys, torch, hierviz as hv

@torch.library.custom_op("hvsaved::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2

@scale.register_fake
def _(x):
    return torch.empty_like(x)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.b(torch.relu(torch.ops.hvsaved.scale(self.a(x).relu()))).relu()

torch.manual_seed(0)
model, x = Net().eval(), (torch.randn(2, 8),)
out = %r
hv.partition(model, x, min_block_size=1).save(out + "/mix.json")
# the op named in the saved settings too: forced to PyTorch, and given to inductor's support
hv.partition(model, x, min_block_size=1, priority=("tensorrt", "inductor"), torch_executed_ops={%r},
             support={"inductor": hv.support.ops([%r])}).save(out + "/forced.json")
"""


@pytest.fixture(scope="module")
def saved(tmp_path_factory, run_python):
    """The folder with mix.json and forced.json, saved by another process (the op exists only there)."""
    folder = tmp_path_factory.mktemp("saved_runtime_op")
    proc = run_python(SAVE % (str(folder), OP, OP), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with pytest.raises(AttributeError):  # never registered in this process
        _ = torch.ops.hvsaved.scale
    return folder


@pytest.fixture
def no_lookups(monkeypatch):
    """Any lookup of an op name in this process fails the test."""
    def refuse(name):
        raise AssertionError(f"looked up {name!r} in the running process")

    monkeypatch.setattr(opnames, "_resolve", refuse)


def test_report_blockers_and_check_of_a_saved_runtime_op(saved, no_lookups):
    la = hv.load_partition(saved / "mix.json")
    assert OP in la.report()
    table = la.blockers()
    assert OP in list(table.op) and "no converter" in list(table.kind)
    assert la.stats["subgraphs"] == 3
    hv.check(la, max_subgraphs=3)  # holds
    with pytest.raises(hv.PartitionCheckError, match="subgraphs 3 > max_subgraphs 1") as info:
        hv.check(la, max_subgraphs=1)
    assert OP in str(info.value)  # the top blocker, named


def test_saved_settings_naming_a_runtime_op_load_as_saved(saved, no_lookups):
    la = hv.load_partition(saved / "forced.json")
    assert la.config.torch_executed_ops == frozenset({OP})
    assert la.config.to_dict()["support"]["inductor"]["ops"] == [OP]
    assert not la.notes  # nothing of the settings was dropped
    assert "in torch_executed_ops" in la.reason_of(next(n for n in la.nodes().name if "scale" in n))
    assert OP in la.report()
    la.blockers()
    with pytest.raises(hv.PartitionCheckError):
        hv.check(la, max_subgraphs=1)


def test_typed_names_are_still_checked(saved):
    """Outside a saved file, an unknown name stays a ConfigError with close matches."""
    hv.load_partition(saved / "mix.json")
    with pytest.raises(hv.ConfigError, match="unknown op name"):
        hv.Config(torch_executed_ops={OP})


@pytest.mark.parametrize("command, code", [("report", 0), ("blockers", 0), ("check --max-subgraphs 1", 1)])
def test_cli_on_a_saved_runtime_op(saved, command, code, capsys):
    from hierviz.cli import commands as cli

    assert cli.main([*command.split(), str(saved / "mix.json")]) == code
    out, err = capsys.readouterr()
    assert OP in out and "unknown op name" not in out + err


MIXTRAL_SAVE = """
import torch, hierviz as hv, transformers
cfg = transformers.MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=1, num_local_experts=2,
                                 num_experts_per_tok=1, max_position_embeddings=32, use_cache=False)
torch.manual_seed(0)
model = transformers.MixtralForCausalLM(cfg).eval()
part = hv.partition(model, (torch.randint(0, 64, (1, 6)),))
assert "torch.ops.transformers.grouped_mm_fallback.default" in set(part.ops().op), sorted(set(part.ops().op))
part.save(%r)
"""

MIXTRAL_LOAD = """
import sys, torch, hierviz as hv
assert "transformers" not in sys.modules
la = hv.load_partition(%r)
text = la.report()
rows = la.blockers()
try:
    hv.check(la, max_subgraphs=1)
except hv.PartitionCheckError as exc:
    print("CHECK", str(exc).splitlines()[1])
print("REPORT", "grouped_mm_fallback" in text,
      "BLOCKERS", "torch.ops.transformers.grouped_mm_fallback.default" in set(rows.op))
"""


@pytest.mark.slow
def test_mixtral_saved_partition_loads_in_a_fresh_process(tmp_path, run_python):
    """The issue's own case: Mixtral's grouped_mm_fallback, registered when transformers runs
    the model, saved in one process and read in another that never imports transformers."""
    pytest.importorskip("transformers")
    path = tmp_path / "mix.json"
    saved = run_python(MIXTRAL_SAVE % str(path), timeout=600)
    assert saved.returncode == 0, saved.stderr[-3000:]
    loaded = run_python(MIXTRAL_LOAD % str(path), timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert "REPORT True BLOCKERS True" in loaded.stdout
    assert "CHECK   subgraphs " in loaded.stdout and "> max_subgraphs 1" in loaded.stdout
