"""Issue 23's command-line edges: --debug after the subcommand, --inductor-support naming
itself, one separator rule for lists inside --grid values, tune's --executor checked before
the model is loaded, warnings as one line, and a fast `hierviz info`."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from hierviz.cli import commands as cli

from hierviz.cli import args as cli_args
from hierviz.cli.args import UsageError, parse_grid
from hierviz.errors import ConfigWarning

ROOT = Path(__file__).resolve().parents[2]


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_debug_after_the_subcommand_shows_the_traceback(capsys: pytest.CaptureFixture) -> None:
    # without --debug: one line, exit 2; with it, before or after the subcommand: the exception itself
    code, _, err = run_cli(capsys, "report", "no_such_model")
    assert code == 2 and err.startswith("hierviz: error: unknown model 'no_such_model'")
    for argv in (["report", "no_such_model", "--debug"], ["--debug", "report", "no_such_model"]):
        with pytest.raises(UsageError, match="no_such_model"):
            cli.main(argv)
    with pytest.raises(UsageError, match="--grid"):
        cli.main(["sweep", "tiny_conv", "--csv", "/tmp/i23-never.csv", "--debug"])


def test_inductor_support_mistake_names_the_option(capsys: pytest.CaptureFixture) -> None:
    code, _, err = run_cli(capsys, "report", "tiny_conv", "--inductor-support", "foo")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("hierviz: error: --inductor-support: unknown op name 'foo'")
    assert "takes all (every op TorchInductor compiles), none (no ops) or a comma-separated op list" in err
    assert "support.ops:" not in err


def test_grid_values_one_separator_rule(capsys: pytest.CaptureFixture) -> None:
    # ',' separates values; '>' or '+' joins the list inside one value, for both list fields
    grid = parse_grid(["priority=tensorrt>inductor,inductor",
                       "torch_executed_ops=none,add.Tensor+relu.default"])
    assert grid["priority"] == [("tensorrt", "inductor"), ("inductor",)]
    assert grid["torch_executed_ops"] == [frozenset(), frozenset({"torch.ops.aten.add.Tensor",
                                                                  "torch.ops.aten.relu.default"})]
    assert parse_grid(["priority=inductor+tensorrt"])["priority"] == [("inductor", "tensorrt")]
    code, out, _ = run_cli(capsys, "sweep", "--help")
    assert code == 0
    assert "priority=tensorrt>inductor,inductor" in out
    assert "two configurations: (tensorrt, inductor), (inductor)" in out
    # the same text in --priority means the same list
    args = cli.build_parser().parse_args(["report", "m", "--priority", "inductor>tensorrt"])
    assert cli.build_config(args).priority == ("inductor", "tensorrt")


def test_tune_executor_checked_before_the_model_is_loaded(capsys: pytest.CaptureFixture,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[str] = []
    monkeypatch.setattr(cli, "load_model", lambda spec: loaded.append(spec))
    code, _, err = run_cli(capsys, "tune", "tiny_conv", "--executor", "nosuch")
    assert code == 2 and loaded == []
    assert len(err.strip().splitlines()) == 1
    assert "--executor: executor 'nosuch' is not 'ray'" in err and "ray://head-node:10001" in err


def test_python_tune_checks_the_executor_before_capturing(monkeypatch: pytest.MonkeyPatch) -> None:
    import hierviz as hv
    from hierviz.compare import tuning

    captured: list[object] = []
    monkeypatch.setattr(tuning, "graph_of", lambda *a: captured.append(a))
    with pytest.raises(hv.ConfigError, match="executor 'ray:/x' is not 'ray'"):
        hv.tune(object(), None, executor="ray:/x", budget=1, progress=False)
    assert captured == []
    from hierviz.compare.ray_executor import check_executor

    for good in ("ray", "local", "auto", "ray://head-node:10001", "10.0.0.5:6379", "[::1]:6379"):
        check_executor(good)


def test_warnings_print_as_one_line(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    def warn_then_stop(spec: str) -> None:
        warnings.warn("support names backend 'x', which is not in priority\n(second line)", ConfigWarning, stacklevel=2)
        raise UsageError("stopped")

    monkeypatch.setattr(cli, "load_model", warn_then_stop)
    monkeypatch.setattr(cli_args, "load_model", warn_then_stop)  # the subcommands load through cli_args
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, _, err = run_cli(capsys, "report", "tiny_conv")
    assert code == 2
    assert err.splitlines() == ["warning: support names backend 'x', which is not in priority (second line)",
                                "hierviz: error: stopped."]


@pytest.mark.slow  # over 5 s of CPU: left out of make check, run by make test
def test_entry_point_warnings_are_one_line(tmp_path: Path) -> None:
    """After Torch-TensorRT's import (which routes warnings through logging) a warning is still
    `warning: ...`, not `WARNING:py.warnings:<file>:<line>: ...`."""
    script = tmp_path / "warn.py"
    script.write_text("import warnings\nfrom hierviz.errors import ConfigWarning\n"
                      "def build():\n    warnings.warn('check this setting', ConfigWarning)\n"
                      "    raise RuntimeError('stop here')\n")
    code = (f"import sys; sys.argv = ['hierviz', 'report', {str(script)!r} + ':build']\n"
            "from hierviz import cli, trt; trt.available(); sys.exit(cli.main())")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    lines = [ln for ln in proc.stderr.splitlines() if "check this setting" in ln or "hierviz: error" in ln]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert lines == ["warning: check this setting", "hierviz: error: " + str(script) + ":build() raised "
                     "RuntimeError: stop here."], proc.stderr[-2000:]
    assert "py.warnings" not in proc.stderr


def test_info_does_not_import_torch_tensorrt(capsys: pytest.CaptureFixture) -> None:
    """`hierviz info` reads versions from the installed packages (the 5 s torch_tensorrt import
    was what made it take 7.5 s); `--check` imports it."""
    code = ("import sys; from hierviz import cli; rc = cli.main(['info']); "
            "print('imported:', 'torch_tensorrt' in sys.modules); sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "imported: False" in proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("hierviz ") and "torch " in lines[0]
    from hierviz import trt

    quick = trt.info(imports=False)
    if quick.available:
        assert lines[1].startswith(f"torch_tensorrt {quick.version} ")
        assert "hierviz info --check" in lines[1]
    code, out, _ = run_cli(capsys, "info", "--check")
    assert code == 0 and "hierviz info --check" not in out
    full = trt.info()
    assert (quick.version, quick.variant, quick.tensorrt_version, quick.targets, quick.can_build) == \
        (full.version, full.variant, full.tensorrt_version, full.targets, full.can_build)
