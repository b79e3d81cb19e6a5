"""`hierviz report|blockers|check MODEL --ir torch_compile`: the model graph by graph, as
torch.compile(backend="torch_tensorrt") runs it; a model torch.export refuses is one line
that names the way on (--ir torch_compile), exit 2."""

from __future__ import annotations

import textwrap

import pytest

import hierviz as hv
from tests.cli.test_cli import run_cli

SOURCE = textwrap.dedent('''
    import torch
    from torch import nn


    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
            self.b = nn.Linear(8, 4)

        def forward(self, x):
            y = self.a(x)
            if y.mean() > 0.1:  # the break
                y = y * 2
            return self.b(y.mean((2, 3)))


    def build():
        torch.manual_seed(0)
        return Gate().eval(), (torch.randn(1, 3, 16, 16),)
''')


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli_ir") / "gate.py"
    path.write_text(SOURCE)
    line = SOURCE.splitlines().index("        if y.mean() > 0.1:  # the break") + 1
    return f"{path}:build", f"{path}:{line}"


def test_report_shows_every_graph_and_the_break(capsys, model_file) -> None:
    spec, where = model_file
    code, out, err = run_cli(capsys, "report", spec, "--ir", "torch_compile", "--min-block-size", "2")
    assert code == 0, err
    assert out.count("Dry-Run Results for Graph") == 2
    totals = out[out.index("Totals over 2 graph(s)"):]
    assert "Graph breaks: 1" in totals and f"after g0: {where} (if y.mean() > 0.1:  # the break)" in totals


def test_blockers_and_check_take_the_graph_break(capsys, model_file) -> None:
    spec, where = model_file
    code, out, err = run_cli(capsys, "blockers", spec, "--ir", "torch_compile")
    assert code == 0, err
    assert f"remove the graph break at {where}" in out and " graph break " in out
    code, out, err = run_cli(capsys, "check", spec, "--ir", "torch_compile", "--max-subgraphs", "1")
    assert code == 1 and "2 graphs, 1 graph breaks" in out and "subgraphs 2 > max_subgraphs 1" in out


def test_sweep_takes_ir_torch_compile(capsys, model_file, tmp_path) -> None:
    spec, _ = model_file
    csv = tmp_path / "sweep.csv"
    code, out, err = run_cli(capsys, "sweep", spec, "--ir", "torch_compile", "--grid", "min_block_size=2,20",
                             "--csv", str(csv), "--quiet")
    assert code == 0, err
    import pandas as pd

    table = pd.read_csv(csv)
    assert list(table.min_block_size) == [2, 20] and list(table.graphs) == [2, 2]
    assert list(table.graph_breaks) == [1, 1] and list(table.graphs_left_whole) == [0, 2]


def test_an_export_failure_says_to_use_ir_torch_compile(capsys, model_file) -> None:
    spec, where = model_file
    code, out, err = run_cli(capsys, "report", spec)
    line = err.strip().splitlines()[-1]
    # the model's own line that torch.export stopped at, then torch's reason
    assert code == 2 and line.startswith(f"hierviz: error: torch.export failed for Gate at {where} in forward "
                                         "(if y.mean() > 0.1: # the break): GuardOnDataDependentSymNode: ")
    assert line.endswith(f"To see {spec} graph by graph, as torch.compile(backend='torch_tensorrt') compiles it, "
                         "add --ir torch_compile.")
    assert len(line) < 600 and "Hint:" not in line


def test_ir_mistakes_are_one_line(capsys, model_file, tmp_path) -> None:
    spec, _ = model_file
    code, _, err = run_cli(capsys, "check", spec, "--ir", "torchcompile", "--max-subgraphs", "1")
    assert code == 2 and "invalid choice: 'torchcompile' (choose from 'dynamo', 'torch_compile')" in err
    saved = tmp_path / "p.json"
    hv.partition(*hv.zoo.load("tiny_conv")).save(saved)
    code, _, err = run_cli(capsys, "report", str(saved), "--ir", "torch_compile")
    assert code == 2 and err.strip().startswith("hierviz: error: --ir: ") and "is a saved partition" in err
