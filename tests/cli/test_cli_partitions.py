"""`hierviz blockers`, `hierviz check` and `hierviz diff`: what they print and their exit codes
(check: 1 with every broken limit and the top blockers, 0 with one line; user mistakes: 2 and
one line)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import hierviz as hv
from tests.cli.test_cli import run_cli

MODEL = "efficientnet_b0"
FLAGS = ["--torch-executed-ops", "add.Tensor", "--min-block-size", "8"]


@pytest.fixture(scope="module")
def part(zoo_cache) -> hv.Partition:
    return hv.partition(zoo_cache.capture(MODEL), torch_executed_ops={"aten.add.Tensor"}, min_block_size=8)


def test_blockers_prints_the_table(capsys, part) -> None:
    code, out, _ = run_cli(capsys, "blockers", MODEL, *FLAGS)
    table = part.blockers()
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("tensorrt>inductor(no ops) mbs=8 torch=add.Tensor (hierviz engine): "
                            f"{part.stats['subgraphs']} subgraphs")
    lines = out.splitlines()[2:]
    assert len(lines) == len(table)
    for line, row in zip(lines, table.itertuples()):
        assert line.split()[0] == row.op.split()[0] and f" {row.kind} " in line and f" {row.nodes} " in line
        assert f" {row.subgraphs_if_fixed} " in line and f" {row.subgraphs_saved} " in line
        assert f" {row.verdict} " in line


def test_check_fails_with_exit_1_and_passes_with_one_line(capsys, part) -> None:
    code, out, _ = run_cli(capsys, "check", MODEL, *FLAGS, "--max-subgraphs", "5", "--min-coverage", "0.99")
    assert code == 1
    with pytest.raises(hv.PartitionCheckError) as err:
        hv.check(part, max_subgraphs=5, min_coverage=0.99)
    assert out.strip() == str(err.value)
    assert f"subgraphs {part.stats['subgraphs']} > max_subgraphs 5" in out and "top blockers" in out
    code, out, _ = run_cli(capsys, "check", MODEL, *FLAGS, "--max-subgraphs", str(part.stats["subgraphs"]))
    assert code == 0 and len(out.strip().splitlines()) == 1
    assert out.startswith("partition check passed") and f"subgraphs {part.stats['subgraphs']} <=" in out


def test_check_without_limits_is_a_mistake(capsys, part, tmp_path: Path) -> None:
    """A CI job whose limits went missing must not pass: exit 2 and one line naming the limits."""
    saved = part.save(tmp_path / "a.json")
    code, out, err = run_cli(capsys, "check", str(saved))
    assert code == 2 and not out and len(err.strip().splitlines()) == 1
    assert "check needs at least one limit: --max-subgraphs N" in err and "--like saved.json" in err


def test_check_like_a_saved_partition(capsys, part, tmp_path: Path) -> None:
    saved = tmp_path / "good.json"
    assert run_cli(capsys, "report", MODEL, "-o", str(saved))[0] == 0
    code, out, _ = run_cli(capsys, "check", MODEL, *FLAGS, "--like", str(saved))
    assert code == 1 and f"like {saved}: subgraphs {part.stats['subgraphs']} vs 1 saved" in out
    code, out, _ = run_cli(capsys, "check", str(saved), "--like", str(saved))
    assert code == 0 and out.startswith("partition check passed")


def test_diff_of_two_saved_partitions(capsys, part, tmp_path: Path) -> None:
    a = part.save(tmp_path / "a.json")
    assert run_cli(capsys, "report", MODEL, "-o", str(tmp_path / "b.json"))[0] == 0
    code, out, _ = run_cli(capsys, "diff", str(a), str(tmp_path / "b.json"), "-o", str(tmp_path / "d.dot"))
    d = hv.diff(hv.load_partition(a), hv.load_partition(tmp_path / "b.json"))
    assert code == 0
    assert f"{(d.change == 'backend').sum()} node(s) backend" in out and f"wrote {tmp_path / 'd.dot'}" in out
    assert "change backend" in (tmp_path / "d.dot").read_text()
    code, out, _ = run_cli(capsys, "diff", str(a), str(a))
    assert code == 0 and "no difference" in out


@pytest.mark.parametrize("argv, words", [
    (["check", MODEL, "--min-coverage", "95"], "--min-coverage: 95 is not a fraction between 0 and 1"),
    (["check", MODEL, "--min-coverage", "most"], "'most' is not a number"),
    (["check", MODEL, "--max-subgrafs", "3"], "unrecognized arguments"),
    (["check", MODEL, "--like", "nothere.json"], "no file 'nothere.json'"),
    (["check", MODEL, "--max-subgraphs-by-backend", "tensorrt"], "write backend=N"),
    (["diff", "nothere.json", "b.json"], "no file 'nothere.json'"),
    (["blockers", MODEL, "--kind", "broken"], "unknown kind 'broken'"),
])
def test_mistakes_are_one_line_and_exit_2(capsys, argv, words) -> None:
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1


def test_a_saved_partition_is_read_by_report_check_and_blockers(capsys, part, tmp_path: Path) -> None:
    saved = part.save(tmp_path / "a.json")
    code, out, _ = run_cli(capsys, "report", str(saved))
    assert code == 0 and out.strip() == hv.load_partition(saved).report().strip()
    code, out, _ = run_cli(capsys, "blockers", str(saved))
    lines = out.splitlines()
    assert code == 0 and "None" not in out
    assert lines[-1].startswith(f"{saved} is a saved partition: counts only")
    assert re.search(r" forced +\d+ +- +- +- ", lines[2])  # the what-if columns are blank, not None


@pytest.mark.parametrize("command", ["report", "check", "blockers"])
def test_setting_flags_with_a_saved_partition_are_a_mistake(capsys, part, tmp_path: Path, command: str) -> None:
    saved = part.save(tmp_path / "a.json")
    limit = ["--max-subgraphs", "3"] if command == "check" else []
    code, out, err = run_cli(capsys, command, str(saved), "--min-block-size", "3", "--engine", "fast", *limit)
    assert code == 2 and len(err.strip().splitlines()) == 1 and not out
    assert "--min-block-size, --engine: " in err and "is a saved partition" in err and "give MODEL" in err


@pytest.mark.slow  # a fresh process or a worker of its own: seconds of CPU (make check leaves it out)
def test_blockers_measure_with_fallback(capsys) -> None:
    """--measure --fallback times the what-ifs that run (TensorRT subgraphs eagerly where it
    cannot build); rows with no converter say why they are not measured."""
    code, out, _ = run_cli(capsys, "blockers", "tiny_conv", "--torch-executed-ops", "relu.default", "--measure",
                       "--device", "cpu", "--fallback", "--top", "0")
    assert code == 0
    lines = out.splitlines()
    assert "median_ms" in lines[1] and "measured" in lines[1]
    assert all("measured on cpu against the current setting" in line for line in lines[2:])
