"""What hierviz calls says nothing on success: torch.export's debug records, dynamo's graph-break
warnings and Torch-TensorRT's import messages are held back (the CLI's --verbose shows them)."""

from __future__ import annotations

import pytest

PARTITION_RESNET18 = """
    import hierviz as hv
    from hierviz import zoo
    model, x = zoo.load("resnet18")
    part = hv.partition(model, x, min_block_size=3)
    print(part.stats["subgraphs"])
"""

ITEM_MODEL = """
    import torch, hierviz as hv
    class Branchy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
        def forward(self, x):
            y = self.a(x)
            if y.sum().item() > 0:
                y = y * 2
            return self.b(y).relu()
    mp = hv.partition(Branchy().eval(), (torch.randn(2, 8),), ir="torch_compile", min_block_size=1)
    print(len(mp.breaks))
"""

GROUPED_EXPERTS = """
    import torch, hierviz as hv
    from hierviz.foundation import torch_output
    class GroupedExperts(torch.nn.Module):
        # as transformers' MoE experts in fp32: torch._grouped_mm when run, a loop under export and
        # torch.compile; the fake run of hierviz's cache check reaches _grouped_mm, whose meta refuses fp32
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(2, 8, 4))
        def forward(self, x):
            if torch.compiler.is_compiling():
                return torch.cat([x[:3] @ self.w[0], x[3:] @ self.w[1]])
            return torch._grouped_mm(x, self.w, offs=torch.tensor([3, 6], dtype=torch.int32))
    part = hv.partition(GroupedExperts(), (torch.randn(6, 8),), min_block_size=1)
    print(len(part.subgraphs), "grouped_mm" in torch_output.held())
"""


@pytest.mark.slow  # a fresh process or a worker of its own: seconds of CPU (make check leaves it out)
def test_partitioning_resnet18_in_a_fresh_process_writes_nothing_to_stderr(run_python, tmp_path):
    proc = run_python(PARTITION_RESNET18, env={"HIERVIZ_CACHE_DIR": str(tmp_path)})  # a real export, no cache
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == ""
    assert proc.stdout.split() == ["1"]


def test_the_first_capture_of_an_item_model_writes_nothing(run_python, tmp_path):
    proc = run_python(ITEM_MODEL, env={"HIERVIZ_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == ""
    assert proc.stdout.split() == ["1"]  # the break is still found


def test_cli_verbose_shows_what_was_held_back(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    from hierviz.foundation import torch_output
    from hierviz.cli.commands import main

    torch_output.hold("a test", "something torch said\n")
    assert main(["report", "tiny_conv"]) == 0
    assert "something torch said" not in capsys.readouterr().err
    assert main(["report", "tiny_conv", "--verbose"]) == 0
    assert "--- what a test printed:\nsomething torch said" in capsys.readouterr().err


@pytest.mark.slow  # two fresh processes
def test_the_cache_check_of_a_model_whose_fake_run_fails_writes_nothing(run_python, tmp_path):
    for run in ("stored", "read back"):
        proc = run_python(GROUPED_EXPERTS, env={"HIERVIZ_CACHE_DIR": str(tmp_path)})
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stderr == "", run
        assert proc.stdout.split() == ["1", "True"], run  # held back for --verbose, not lost
