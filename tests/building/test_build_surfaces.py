"""Builds where a partition is judged: hv.check(build=True), `hierviz check --build`, the report."""

from __future__ import annotations

import pytest

import hierviz as hv
from hierviz import trt
from hierviz.building.builds import megabytes
from tests.building.failing_converters import RefusesToBuild
from tests.building.models import ConvNet, made
from tests.cli.test_cli import run_cli

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")


def test_check_with_build_names_the_failed_engine():
    model, x = made(RefusesToBuild, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    with pytest.raises(hv.PartitionCheckError) as err:
        hv.check(part, build=True)
    text = str(err.value)
    assert "engine _run_on_acc_tensorrt_0 failed at build: " in text
    assert "then torch_tensorrt.compile raises RuntimeError" in text and "fix: torch_executed_ops=" in text
    hv.check(hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1), build=True)  # builds: quiet
    with pytest.raises(hv.ConfigError, match="build= is True"):
        hv.check(part, build="yes")


def test_cli_check_build_exits_0_for_resnet18_and_1_for_an_engine_that_fails(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "check", "resnet18", "--build")
    assert code == 0, out
    assert out.startswith("partition check passed") and "engines: 1/1 engines built, " in out
    script = tmp_path / "refuses.py"  # the test's converter refuses its engine (it runs in this process)
    script.write_text("from tests.building.failing_converters import RefusesToBuild\n"
                      "from tests.building.models import made\n"
                      "def build():\n    return made(RefusesToBuild, 2, 8)\n")
    code, out, _ = run_cli(capsys, "check", f"{script}:build", "--min-block-size", "1", "--build")
    assert code == 1, out
    assert "engine _run_on_acc_tensorrt_0 failed at build: " in out


def test_a_saved_partition_cannot_be_built(tmp_path):
    part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    saved = hv.load_partition(part.save(tmp_path / "p.json"))
    with pytest.raises(hv.SavedPartitionError, match=r"build\(\) needs the model's graph"):
        saved.build()


def test_the_picture_report_and_blockers_show_a_failed_build(tmp_path):
    model, x = made(RefusesToBuild, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    assert "Built on this machine" not in part.report()  # nothing built yet: nothing said
    builds = part.build()
    source = part.render(view="collapsed", builds=builds).source
    assert "engine fails at build" in source
    html = part.save(tmp_path / "p.html", builds=builds).read_text()
    assert 'id="built"' in html and "0/1 engines built; _run_on_acc_tensorrt_0 failed at build" in html
    what_to_change = html.split('id="what-to-change"')[1].split('id="config"')[0]
    assert "engine fails to build" in what_to_change  # the page's blockers are given the builds too
    text = part.report(builds=builds)
    assert "Built on this machine:\n  0/1 engines built; _run_on_acc_tensorrt_0 failed at build: " in text
    assert "then: torch_tensorrt.compile raises RuntimeError" in text
    assert "Built on this machine" not in part.report()  # the build is passed, not kept with the partition
    first = part.blockers(builds=builds).iloc[0]
    assert (first.op, first.kind, first.verdict) == ("_run_on_acc_tensorrt_0", "engine fails to build", "required")
    assert first.change == f"torch_executed_ops={sorted(builds.fix)}"
    assert first.subgraphs_if_fixed == hv.partition(model, x, min_block_size=1,
                                                    torch_executed_ops=builds.fix).stats["subgraphs"]
    assert "Required (an engine that does not build on this machine" in text


def test_a_built_engine_is_marked_with_its_size():
    part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    builds = part.build()
    source = part.render(view="collapsed", builds=builds).source
    size = megabytes(int(builds.df.engine_bytes[0]))
    assert f"engine built here · {size}" in source and "engine fails at" not in source
    assert "Required" not in part.report(builds=builds)
    with pytest.raises(hv.RenderError, match=r"builds= takes what part.build\(\) returned"):
        part.render(builds="nope")


def test_sweep_with_build_adds_the_engine_columns():
    model, x = made(RefusesToBuild, 2, 8)
    df = hv.sweep(model, x, {"torch_executed_ops": [set(), {"aten.clamp"}]}, base={"min_block_size": 1},
                  build=True, progress=False)
    assert list(df.columns[-4:]) == ["engines_built", "engines", "engine_mb", "build_failed"]
    failed, fixed = df.iloc[0], df.iloc[1]
    assert (failed.engines_built, failed.engines) == (0, 1) and failed.engine_mb == 0
    assert failed.build_failed.startswith("_run_on_acc_tensorrt_0 at build: ")
    assert fixed.engines_built == fixed.engines == fixed.subgraphs_tensorrt and fixed.build_failed == ""
    assert fixed.engine_mb > 0
    with pytest.raises(hv.ConfigError, match=r"build=\.\.\.\) is True"):
        hv.sweep(model, x, {"min_block_size": [1]}, build=1, progress=False)


def test_graph_by_graph_builds_show_in_the_report_and_picture(tmp_path):
    model, x = made(ConvNet, 1, 3, 16, 16)
    mp = hv.partition(model, x, min_block_size=1, ir="torch_compile")
    assert "Built on this machine" not in mp.report()
    builds = mp.build()
    assert list(builds.df.columns[:2]) == ["graph", "subgraph"] and set(builds.df.graph) == {"g0"}
    assert "Built on this machine:\n  1/1 engines built, " in mp.report(builds=builds)
    assert "g0/_run_on_acc_tensorrt_0: built, " in mp.report(builds=builds)
    assert "Built on this machine" not in mp.report()
    assert "engine built here" in mp.render(builds=builds).source
    assert builds.of_graph("g0").rows[0].subgraph == builds.rows[0].subgraph
    with pytest.raises(hv.RenderError, match=r"builds= of one graph's drawing takes that graph's builds"):
        mp.graphs[0].render(builds=builds)
    assert "engine built here" in mp.graphs[0].render(builds=builds.of_graph("g0")).source


def test_the_pictures_title_says_a_failure_in_a_few_words_and_its_legend_only_what_it_shows():
    from hierviz.foundation.error_text import short_error

    part = hv.partition(*made(RefusesToBuild, 2, 8), min_block_size=1)
    builds = part.build(fix=False)
    error = builds.df.error[0]
    source = part.render(view="collapsed", builds=builds).source
    assert f"built here: 0/1 engines built; _run_on_acc_tensorrt_0 failed at build: {short_error(error)}" in source
    assert len(short_error(error)) < len(error) and f"failed at build: {error}" not in source  # whole: the tooltip
    assert f"fails at build: {error}" in source and "engine fails</FONT>" in source  # the legend's failed engine
    built = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    source = built.render(view="collapsed", builds=built.build()).source
    assert "engine built here</FONT>" in source and "engine fails" not in source  # nothing fails: not in the legend
