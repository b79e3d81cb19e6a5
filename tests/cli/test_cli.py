"""The `hierviz` command: demo, report, sweep, zoo and its error handling.

Most tests call `hierviz.cli.commands.main(argv)` in-process (fast, output through capsys); one runs the
installed `.venv/bin/hierviz` entry point as a user would.
"""

from __future__ import annotations

import re

import csv
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from hierviz.cli import commands as cli

ROOT = Path(__file__).resolve().parents[2]
DEMO_MODELS = ("resnet18", "bert")
DEMO_LABELS = ("tensorrt", "inductor-first")
LATENCY_COLUMNS = ("median_ms", "speedup")

MODULE_SOURCE = '''\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.erfinv(torch.tanh(h) * 0.5)     # no TensorRT converter
        return torch.sigmoid(self.fc2(h)) + x


def build():
    torch.manual_seed(0)
    return Block().eval(), (torch.randn(2, 16),)


def not_a_pair():
    return Block()


def needs_arguments(size, seed):
    return build()


def broken():
    raise RuntimeError("weights file missing")


NOT_A_FUNCTION = 5
'''


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def user_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("usermodel") / "my_model.py"
    path.write_text(MODULE_SOURCE)
    return path


# ------------------------------------------------------------------ validity checks
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr"}


class _Balance(HTMLParser):
    """Checks that every HTML element that is opened is closed, in order (SVG included)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, tuple[int, int]]] = []
        self.errors: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        if tag not in VOID:
            self.stack.append((tag, self.getpos()))

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            # <p> and <li> may be closed implicitly; anything else is a structural error
            while self.stack and self.stack[-1][0] in ("p", "li", "td", "th", "tr") and self.stack[-1][0] != tag:
                self.stack.pop()
            if not self.stack or self.stack[-1][0] != tag:
                open_ = self.stack[-1] if self.stack else None
                self.errors.append(f"</{tag}> at {self.getpos()} closes {open_}")
                return
        self.stack.pop()


def assert_valid_html(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    assert text.lstrip().lower().startswith("<!doctype html"), f"{path} has no <!DOCTYPE html>"
    checker = _Balance()
    checker.feed(text)
    checker.close()
    assert not checker.errors, f"{path}: unbalanced tags: {checker.errors[:5]}"
    left = [t for t, _ in checker.stack if t not in ("p", "li", "td", "th", "tr")]
    assert not left, f"{path}: unclosed elements {checker.stack[:5]}"
    assert {"html", "head", "body", "svg", "table"} <= checker.tags, \
        f"{path} lacks some of html/head/body/svg/table: {sorted(checker.tags)}"
    return text


def assert_valid_svg(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg"), f"{path}: root element is {root.tag}"
    clusters = [g for g in root.iter() if g.tag.endswith("g") and "cluster" in (g.get("class") or "")]
    assert clusters, f"{path}: no subgraph clusters in the diagram"
    return root


def assert_valid_png(path: Path) -> None:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"


# ------------------------------------------------------------------ demo
@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str, str]:
    """`hierviz demo` as `make demo` runs it (latency measured), once for this module."""
    out_dir = tmp_path_factory.mktemp("demo") / "hierviz-demo"
    proc_out: list[str] = []
    import contextlib
    import io

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = cli.main(["demo", "--output-dir", str(out_dir)])
    proc_out.append(stdout.getvalue())
    return out_dir, code, stdout.getvalue(), stderr.getvalue()


@pytest.mark.slow
def test_demo_writes_every_promised_file(demo_run: tuple[Path, int, str, str]) -> None:
    out_dir, code, out, err = demo_run
    assert code == 0, err
    expected = {f"{m}-{label}{suffix}" for m in DEMO_MODELS for label in DEMO_LABELS
                for suffix in (".svg", ".png", ".html")} | {"tiny_conv-sweep.csv"}
    written = {p.name for p in out_dir.iterdir()}
    assert expected <= written, f"missing: {sorted(expected - written)}"
    listing = out.split("hierviz demo wrote:", 1)
    assert len(listing) == 2, "demo does not end by listing what it wrote"
    for name in expected:
        assert name in listing[1], f"{name} is not in the final listing"
    for name in expected:
        assert (out_dir / name).stat().st_size > 0, f"{name} is empty"


@pytest.mark.slow
def test_demo_prints_both_reports(demo_run: tuple[Path, int, str, str]) -> None:
    _, code, out, _ = demo_run
    assert code == 0
    for model in DEMO_MODELS:
        for label in DEMO_LABELS:
            assert f"{model} · {label}" in out
    assert out.count("Dry-Run Results") >= len(DEMO_MODELS) * len(DEMO_LABELS)


@pytest.mark.slow
def test_demo_diagrams_and_html_are_valid(demo_run: tuple[Path, int, str, str]) -> None:
    out_dir, code, _, _ = demo_run
    assert code == 0
    for model in DEMO_MODELS:
        for label in DEMO_LABELS:
            assert_valid_svg(out_dir / f"{model}-{label}.svg")
            assert_valid_png(out_dir / f"{model}-{label}.png")
            html = assert_valid_html(out_dir / f"{model}-{label}.html")
            assert "min_block_size" in html, "the HTML report does not show the config"


@pytest.mark.slow
def test_demo_sweep_csv_has_latency_when_measured(demo_run: tuple[Path, int, str, str]) -> None:
    out_dir, code, _, _ = demo_run
    assert code == 0
    with open(out_dir / "tiny_conv-sweep.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 * 2, "min_block_size 1,2,3,5 x two priorities"
    columns = set(rows[0])
    assert {"min_block_size", "priority", "subgraphs"} <= columns, sorted(columns)
    for col in LATENCY_COLUMNS:
        assert col in columns, f"no {col} column in a measured sweep: {sorted(columns)}"
    assert any(r["median_ms"] not in ("", "nan") for r in rows), "no latency measured on CPU"


@pytest.mark.slow
def test_demo_without_measuring(tmp_path: Path, capsys: pytest.CaptureFixture,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """--no-measure: the same files, a CSV without latency; default output dir is ./hierviz-demo."""
    monkeypatch.setattr(cli, "DEMO_MODELS", ("resnet18",))
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "demo", "--no-measure")
    assert code == 0, err
    out_dir = tmp_path / "hierviz-demo"
    with open(out_dir / "tiny_conv-sweep.csv", newline="") as f:
        columns = set(next(csv.DictReader(f)))
    assert "median_ms" not in columns
    assert (out_dir / "resnet18-tensorrt.svg").is_file()


# ------------------------------------------------------------------ report
def test_report_zoo_model(capsys: pytest.CaptureFixture) -> None:
    code, out, err = run_cli(capsys, "report", "tiny_conv", "--min-block-size", "3",
                             "--priority", "inductor,tensorrt", "--inductor-support", "all")
    assert code == 0, err
    import hierviz as hv

    model, inputs = hv.zoo.load("tiny_conv")
    given = hv.partition(model, inputs, min_block_size=3, priority=("inductor", "tensorrt"),
                         support={"inductor": hv.support.inductor()})
    # the report of the settings given, not the defaults; where the capture came from (captured
    # now, or the disk cache filled by the other) depends on which of the two ran first
    assert settled(out) == settled(given.report())
    assert settled(given.report()) != settled(hv.partition(model, inputs).report())


def settled(report: str) -> str:
    """A report without its line on where the capture came from."""
    return re.sub(r"^Note: capture: .*\n\n?", "", report.strip() + "\n", flags=re.M).strip()


def test_report_zoo_model_to_html(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "sub" / "tiny.html"
    code, out, err = run_cli(capsys, "report", "tiny_conv", "-o", str(target))
    assert code == 0, err
    assert target.is_file() and f"wrote {target}" in out
    assert_valid_html(target)


def test_report_user_function(user_module: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "block.svg"
    code, out, err = run_cli(capsys, "report", f"{user_module}:build", "--min-block-size", "1",
                             "-o", str(target))
    assert code == 0, err
    assert "erfinv" in out, "the unsupported op is not in the report"
    assert_valid_svg(target)


def test_report_user_function_text_output(user_module: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "block.txt"
    code, out, err = run_cli(capsys, "report", f"{user_module}:build",
                             "--torch-executed-ops", "torch.ops.aten.tanh.default")
    assert code == 0, err
    assert "tanh" in out
    code, out, err = run_cli(capsys, "report", f"{user_module}:build", "-o", str(target))
    assert code == 0, err
    assert "Dry-Run Results" in target.read_text()


# ------------------------------------------------------------------ sweep
def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_sweep_zoo_model(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "tiny.csv"
    code, out, err = run_cli(capsys, "sweep", "tiny_conv", "--grid", "min_block_size=1,3,5",
                             "--grid", "priority=tensorrt+inductor,inductor+tensorrt",
                             "--inductor-support", "all", "--quiet", "--csv", str(target))
    assert code == 0, err
    rows = read_csv(target)
    assert len(rows) == 6
    assert {r["min_block_size"] for r in rows} == {"1", "3", "5"}
    assert "subgraphs" in rows[0] and "median_ms" not in rows[0]
    assert f"wrote {target}" in out


def test_sweep_user_function(user_module: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "block.csv"
    code, _, err = run_cli(capsys, "sweep", f"{user_module}:build", "--grid", "min_block_size=1,2,5",
                           "--quiet", "--csv", str(target))
    assert code == 0, err
    rows = read_csv(target)
    assert [r["min_block_size"] for r in rows] == ["1", "2", "5"]
    counts = [int(r["subgraphs"]) for r in rows]
    assert counts[0] >= counts[-1], "a larger min_block_size cannot give more subgraphs"


@pytest.mark.slow  # over 5 s of CPU: left out of make check, run by make test
def test_sweep_measured_has_latency_columns(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "measured.csv"
    code, _, err = run_cli(capsys, "sweep", "tiny_conv", "--grid", "min_block_size=1,5",
                           "--priority", "inductor", "--inductor-support", "all",
                           "--measure", "--warmup", "1", "--iters", "3", "--quiet", "--csv", str(target))
    assert code == 0, err
    rows = read_csv(target)
    assert len(rows) == 2
    for col in LATENCY_COLUMNS:
        assert col in rows[0], f"no {col} column in a measured sweep: {sorted(rows[0])}"


def test_zoo_lists_the_models(capsys: pytest.CaptureFixture) -> None:
    code, out, _ = run_cli(capsys, "zoo")
    assert code == 0
    assert {"tiny_conv", "resnet50", "bert", "gpt2"} <= set(out.split())


# ------------------------------------------------------------------ mistakes
BAD_ARGUMENTS = {
    "unknown model": ["report", "no_such_model"],
    "missing file": ["report", "does/not/exist.py:build"],
    "missing function": ["report", "{module}:nope"],
    "function returns no pair": ["report", "{module}:not_a_pair"],
    "unknown op": ["report", "tiny_conv", "--torch-executed-ops", "torch.ops.aten.not_an_op.default"],
    "unknown backend": ["report", "tiny_conv", "--priority", "tensorrt,tvm"],
    "min_block_size zero": ["report", "tiny_conv", "--min-block-size", "0"],
    "min_block_size not a number": ["report", "tiny_conv", "--min-block-size", "three"],
    "unknown option": ["report", "tiny_conv", "--min-blocks", "3"],
    "unknown command": ["partition", "tiny_conv"],
    "sweep without grid": ["sweep", "tiny_conv", "--csv", "{tmp}/x.csv"],
    "sweep without csv": ["sweep", "tiny_conv", "--grid", "min_block_size=1,2"],
    "grid unknown field": ["sweep", "tiny_conv", "--grid", "block_size=1,2", "--csv", "{tmp}/x.csv"],
    "grid not field=values": ["sweep", "tiny_conv", "--grid", "min_block_size", "--csv", "{tmp}/x.csv"],
    "grid bad integer": ["sweep", "tiny_conv", "--grid", "min_block_size=1,x", "--csv", "{tmp}/x.csv"],
    "iters without measure": ["sweep", "tiny_conv", "--grid", "min_block_size=1,2", "--iters", "5",
                              "--csv", "{tmp}/x.csv"],
    "full compilation impossible": ["report", "{module}:build", "--require-full-compilation"],
}


# Issue 12's CLI mistakes: exit 2, one line, and the line says what to do (expected text).
MISTAKES = {
    "misspelled model": (["report", "resnt18"], "did you mean 'resnet18'?"),
    "output is a directory": (["report", "tiny_conv", "-o", "{tmp}"], "that is a directory"),
    "csv folder cannot be made": (["sweep", "tiny_conv", "--grid", "min_block_size=1,2", "--csv",
                                   "/proc/zz/s.csv"], "--csv /proc/zz/s.csv: cannot create its folder"),
    "function needs arguments": (["report", "{module}:needs_arguments"], "needs_arguments(size, seed) needs arguments"),
    "function raises": (["report", "{module}:broken"], "broken() raised RuntimeError: weights file missing"),
    "name is not a function": (["report", "{module}:NOT_A_FUNCTION"], "NOT_A_FUNCTION is not a function but int 5"),
    "missing function suggests": (["report", "{module}:biuld"], "has no function 'biuld'; did you mean 'build'?"),
    "file without function": (["report", "{module}"], ":FUNCTION, where FUNCTION returns"),
    "grid misspelled op": (["sweep", "tiny_conv", "--grid", "torch_executed_ops=relu.defalt", "--csv",
                            "{tmp}/x.csv"], "'torch.ops.aten.relu.default'"),
    "grid bad bool": (["sweep", "tiny_conv", "--grid", "skip_fusion=maybe", "--csv", "{tmp}/x.csv"],
                      "'maybe' is not true/false"),
    "grid field twice": (["sweep", "tiny_conv", "--grid", "min_block_size=1", "--grid", "min_block_size=2",
                          "--csv", "{tmp}/x.csv"], "given twice"),
    "grid misspelled field": (["sweep", "tiny_conv", "--grid", "min_blocksize=1", "--csv", "{tmp}/x.csv"],
                              "did you mean 'min_block_size'?"),
    "iters zero": (["sweep", "tiny_conv", "--grid", "min_block_size=1,2", "--measure", "--iters", "0",
                    "--csv", "{tmp}/x.csv"], "--iters: must be >= 1, not 0"),
    "warmup negative": (["sweep", "tiny_conv", "--grid", "min_block_size=1", "--measure", "--warmup", "-1",
                         "--csv", "{tmp}/x.csv"], "--warmup: must be >= 0"),
    "empty priority": (["report", "tiny_conv", "--priority", ""], "priority is empty"),
    "misspelled backend": (["report", "tiny_conv", "--priority", "tensortr,inductor"], "did you mean 'tensorrt'?"),
    "torch-level op": (["report", "tiny_conv", "--torch-executed-ops", "torch.relu"],
                       "lowers to: 'torch.ops.aten.relu.default'"),
    "min_block_size not whole": (["report", "tiny_conv", "--min-block-size", "2.5"],
                                 "--min-block-size: '2.5' is not a whole number"),  # the setting named once
    "inductor support empty": (["report", "tiny_conv", "--inductor-support", ","],
                               "--inductor-support: takes all, none or op,op"),
    "demo output dir": (["demo", "--output-dir", "/proc/zz"], "--output-dir /proc/zz: cannot create it"),
    "report to an unwritable suffix": (["report", "tiny_conv", "-o", "{tmp}/x.bmp"],
                                       "-o {tmp}/x.bmp: cannot write a .bmp file; use one of .svg, .png, .pdf, "
                                       ".dot, .gv, .json, .html, .txt, .md (or no suffix for the text report)."),
    "grid unknown field ends its sentence": (["sweep", "tiny_conv", "--grid", "foo=1,2", "--csv", "{tmp}/x.csv"],
                                             "--grid: unknown field 'foo'. Use one of "),
}


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_mistakes_one_line_that_says_what_to_do(case: str, user_module: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    argv, expected = MISTAKES[case]
    argv = [a.format(module=user_module, tmp=tmp_path) for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2, f"{case}: exit code {code}, stderr {err!r}"
    assert len(err.strip().splitlines()) == 1, f"{case}: stderr is not one line:\n{err}"
    assert "Traceback" not in err + out
    assert expected.format(tmp=tmp_path) in err, f"{case}: {err!r}"
    assert err.strip().endswith((".", "?")), f"{case}: the line does not end its sentence: {err!r}"
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.bmp").exists()


@pytest.mark.parametrize("name", ["x.txt", "x.md", "x"])
def test_report_writes_text_for_text_suffixes(name: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code, out, err = run_cli(capsys, "report", "tiny_conv", "-o", str(tmp_path / name))
    assert code == 0, err
    assert (tmp_path / name).read_text() == out.split("\nwrote ")[0]


def test_sweep_validates_the_whole_grid_before_running(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A typo in the last value stops the sweep before any model is loaded or partitioned."""
    calls = []
    monkeypatch.setattr(cli, "load_model", lambda spec: calls.append(spec))
    code, _, err = run_cli(capsys, "sweep", "tiny_conv", "--grid", "min_block_size=1,2",
                           "--grid", "torch_executed_ops=relu.default,aten.nope.default", "--csv", f"{tmp_path}/x.csv")
    assert code == 2 and "nope" in err and calls == []
    code, _, err = run_cli(capsys, "sweep", "tiny_conv", "--grid", "min_block_size=1,0", "--csv", f"{tmp_path}/x.csv")
    assert code == 2 and "min_block_size" in err and ">= 1" in err and calls == []
    assert not (tmp_path / "x.csv").exists()


def test_debug_shows_the_users_own_traceback(user_module: Path) -> None:
    with pytest.raises(RuntimeError, match="weights file missing"):
        cli.main(["--debug", "report", f"{user_module}:broken"])


@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_bad_arguments_one_line_exit_2(case: str, user_module: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture) -> None:
    argv = [a.format(module=user_module, tmp=tmp_path) for a in BAD_ARGUMENTS[case]]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2, f"{case}: exit code {code}, stderr {err!r}"
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"{case}: stderr is not one line:\n{err}"
    assert "Traceback" not in err and "Traceback" not in out
    assert "error" in lines[0].lower()


def test_no_command_prints_help(capsys: pytest.CaptureFixture) -> None:
    code, out, _ = run_cli(capsys)
    assert code == 2
    assert "demo" in out and "sweep" in out


def test_help_exits_0(capsys: pytest.CaptureFixture) -> None:
    code, out, _ = run_cli(capsys, "sweep", "--help")
    assert code == 0
    assert "--grid" in out and "--csv" in out


def test_debug_shows_the_traceback() -> None:
    with pytest.raises(Exception, match="no_such_model"):
        cli.main(["--debug", "report", "no_such_model"])


# ------------------------------------------------------------------ the installed entry point
def entry_point() -> Path:
    path = Path(sys.executable).parent / "hierviz"
    if not path.exists():
        pytest.skip(f"no hierviz entry point next to {sys.executable} (run `make setup`)")
    return path


@pytest.mark.slow  # over 5 s of CPU: left out of make check, run by make test
def test_entry_point_subprocess(tmp_path: Path, user_module: Path) -> None:
    exe = entry_point()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    ok = subprocess.run([str(exe), "report", f"{user_module}:build", "--min-block-size", "1"],
                        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert "Dry-Run Results" in ok.stdout
    bad = subprocess.run([str(exe), "report", "no_such_model"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith("hierviz: error:"), bad.stderr
    assert "no_such_model" in bad.stderr and "tiny_conv" in bad.stderr
    # after Torch-TensorRT has been imported (its import prints warnings without a GPU)
    bad = subprocess.run([str(exe), "report", "tiny_conv", "--torch-executed-ops", "torch.ops.aten.nope.default"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith("hierviz: error:"), bad.stderr
    assert "torch.ops.aten.nope.default" in bad.stderr


def test_missing_function_lists_only_what_model_can_name(tmp_path: Path, capsys) -> None:
    """`hierviz report models.py:nonexistent` lists the functions MODEL can name (issue 37):
    public ones that take no arguments, not private helpers such as `_eval`."""
    path = tmp_path / "models.py"
    path.write_text("def build():\n    return None\n\n\ndef build_large():\n    return None\n\n\n"
                    "def _eval(model, x):\n    return model(x)\n\n\ndef scale(x, factor=2):\n    return x * factor\n")
    code, out, err = run_cli(capsys, "report", f"{path}:nonexistent")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.strip().endswith("has no function 'nonexistent' (functions there: build, build_large).")
    assert "_eval" not in err and "scale" not in err
