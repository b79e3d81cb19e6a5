"""The fix part.build() offers: it keeps TensorRT, says what it costs, is applied with the
partition's own settings (Builds.fixed(), hv.partition(part, ...)), and was built.

The failures here come from a builder the tests replace (a subgraph holding the op they name
fails to build), so they hold whatever TensorRT's builder does with the real op."""

from __future__ import annotations


import pytest
import torch

import hierviz as hv
from hierviz import trt
from tests.building.models import ConvNet, FusedQKV, made

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")


@pytest.fixture
def fails_on(monkeypatch):
    """`fails_on("split")`: from now on a subgraph holding aten.split fails at build; the rest
    build for real. The build cache is off, so nothing made up is kept."""
    monkeypatch.setenv("HIERVIZ_CACHE", "0")
    real = trt.convert_and_build

    def install(*ops: str):
        def fake(gm, settings=None, **options):
            held = {getattr(n.target, "__name__", str(n.target)).split(".")[0] for n in gm.graph.nodes
                    if n.op == "call_function"}
            held |= {str(getattr(n.target, "_name", "")) for n in gm.graph.nodes if n.op == "call_function"}
            bad = sorted(held & set(ops))
            if bad:
                return trt.EngineBuild("build", 1, 0.0, 0.0, exception="RuntimeError",
                                       error=f"the test's builder refuses {bad[0]}")
            return real(gm, settings, **options)

        monkeypatch.setattr(trt, "convert_and_build", fake)

    return install


def test_a_repartitioned_partition_keeps_its_settings():
    model, x = made(FusedQKV, 1, 16, 64)
    part = hv.partition(model, x, min_block_size=3, skip_fusion=True)
    again = hv.partition(part, torch_executed_ops={"aten.split"})
    assert again.config == part.config.replace(torch_executed_ops={"aten.split"})
    assert (again.config.min_block_size, again.config.skip_fusion) == (3, True)
    assert hv.partition(part).config == part.config


def test_the_fix_is_applied_with_the_partitions_settings_and_was_built(fails_on):
    fails_on("split")
    model, x = made(FusedQKV, 1, 16, 64)
    part = hv.partition(model, x, min_block_size=2)
    builds = part.build()
    assert not builds.ok and builds.fix is not None and "split.Tensor" in " ".join(builds.fix)
    fixed = builds.fixed()
    assert fixed.config == part.config.replace(torch_executed_ops=builds.fix)
    assert fixed.config.min_block_size == 2
    assert fixed.build().ok
    assert any(sg.backend == "tensorrt" for sg in fixed.subgraphs)
    fix_text = builds.df.iloc[0]["fix"]
    trt_ops = sum(sg.compute_ops for sg in part.subgraphs if sg.backend == "tensorrt")
    kept = sum(sg.compute_ops for sg in fixed.subgraphs if sg.backend == "tensorrt")
    assert f"it moves {trt_ops - kept} compute op out of TensorRT: accelerated ops {trt_ops} → {kept}" in fix_text


def test_a_fix_that_leaves_no_tensorrt_engine_is_no_fix(fails_on):
    fails_on("relu")
    model = torch.nn.ReLU()
    part = hv.partition(model, (torch.randn(4, 4),), min_block_size=1)
    builds = part.build()
    assert builds.fix is None
    row = builds.df.iloc[0].to_dict()
    assert row["fix"] == ("no change makes every engine build while keeping a TensorRT engine: the search built 0 "
                          "candidate(s) (at most 40), following each failure through 1 smallest failing part(s), "
                          "then moving the 1 op(s) of the failing subgraphs alone and together")
    with pytest.raises(hv.ConfigError, match=r"Builds.fixed\(\): no fix to apply \(no change makes"):
        builds.fixed()


def test_fixed_says_why_there_is_nothing_to_apply():
    model, x = made(ConvNet, 1, 3, 8, 8)
    builds = hv.partition(model, x, min_block_size=1).build()
    assert builds.ok
    with pytest.raises(hv.ConfigError, match="every engine built: there is nothing to fix"):
        builds.fixed()


def test_two_failures_in_one_engine_get_a_fix_of_two_ops_that_builds(fails_on):
    fails_on("split", "permute")
    model, x = made(FusedQKV, 1, 16, 64)
    part = hv.partition(model, x, min_block_size=2)
    builds = part.build()
    assert builds.fix is not None
    assert {op.split(".")[1] for op in builds.fix} == {"split", "permute"}
    fixed = builds.fixed()
    assert fixed.build().ok and any(sg.backend == "tensorrt" for sg in fixed.subgraphs)
    assert "every engine builds" in builds.df.iloc[0]["fix"]
    assert builds.lines()[-1] == (f"  The fix search built {builds.fix_tested} candidate(s) (at most 40 per graph) and "
                                  f"{builds.fix_reductions} smallest failing part(s): {builds.fix_builds} builds.")


def test_a_builder_failure_naming_no_node_is_followed_through_its_smallest_failing_part(fails_on):
    """The builder names no node: the engine's smallest failing part (split) is searched, and its
    op is the first and only candidate built, though other single ops give fewer subgraphs."""
    from hierviz.building.engine_fix import candidates

    fails_on("split")
    model, x = made(FusedQKV, 1, 16, 64)
    part = hv.partition(model, x, min_block_size=2)
    builds = part.build()
    assert [op.split(".")[1] for op in builds.fix] == ["split"]
    assert (builds.fix_tested, builds.fix_reductions) == (1, 1)
    ops = candidates(part, ["_run_on_acc_tensorrt_0"])
    counts = {op: hv.partition(part, torch_executed_ops={op}).stats["subgraphs"] for op in ops}
    assert min(counts.values()) < counts["aten.split.Tensor"]
    assert builds.repro().nodes == ("split",) and builds.subgraph_builder.made == builds.fix_builds + 1  # no rebuild


def test_between_builds_runs_before_each_build_and_can_stop_it(fails_on, monkeypatch):
    """The explorer's worker runs waiting work between engines and candidates, and stops a
    build there when its explorer closes: nothing stopped is stored."""
    from hierviz.building.subgraph_builds import between_builds

    fails_on("split")
    model, x = made(FusedQKV, 1, 16, 64)
    part = hv.partition(model, x, min_block_size=2)
    seen: list[int] = []
    with between_builds(lambda: seen.append(1)):
        builds = part.build()
    assert len(seen) == len(part.subgraphs) - sum(sg.backend != "tensorrt" for sg in part.subgraphs) + \
        builds.fix_builds

    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    with between_builds(stop), pytest.raises(Stop):
        hv.partition(part, min_block_size=1).build()


def test_builds_repro_reduces_the_failed_engine_with_the_builds_own_settings(fails_on):
    fails_on("split")
    model, x = made(FusedQKV, 1, 16, 64)
    builds = hv.partition(model, x, min_block_size=2).build(fix=False, trt_settings={"optimization_level": 2})
    repro = builds.repro()
    assert isinstance(repro, hv.Repro)
    assert repro.nodes == ("split",) and repro.stage == "build"
    assert repro.settings.get("optimization_level") == 2
    assert repr(repro).startswith("<hv.Repro: 1 of ")
    with pytest.raises(hv.ConfigError, match="did not fail to convert or build"):
        builds.repro("_run_on_acc_tensorrt_9")


def test_with_repros_names_each_failed_engines_smallest_part_in_words(fails_on):
    fails_on("split")
    model, x = made(FusedQKV, 1, 16, 64)
    part = hv.partition(model, x, min_block_size=2)
    builds = part.build(fix=False)
    assert builds.repros == () and builds.repro_for("_run_on_acc_tensorrt_0") is None
    shown = builds.with_repros()
    found = shown.repro_for("_run_on_acc_tensorrt_0")
    assert found is not None and found.nodes == ("split",)
    line = f"    the smallest failing part: {found.headline()}"
    assert line in shown.lines() and line.strip() in part.report(builds=shown)
    assert shown.rows == builds.rows and builds.repros == ()  # a new Builds; the first is unchanged


@torch.library.custom_op("hvtest_fix::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_twice.register_fake
def _twice_shape(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class CustomOpBetween(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.hvtest_fix.twice(self.lin(x).relu()).relu()


def test_a_custom_op_fix_names_it_as_torch_executed_ops_takes_it(fails_on):
    fails_on("hvtest_fix::twice")
    part = hv.partition(CustomOpBetween(), (torch.randn(2, 4),), min_block_size=1,
                        support={"tensorrt": hv.support.where(lambda n: True)})
    builds = part.build()
    assert builds.fix == frozenset({"torch.ops.hvtest_fix.twice.default"})
    assert builds.fixed().build().ok


def test_builds_sent_to_another_process_keep_their_rows_and_fix_and_say_how_to_apply_it(fails_on):
    import pickle

    fails_on("split")
    model, x = made(FusedQKV, 1, 16, 64)
    builds = hv.partition(model, x, min_block_size=2).build()
    crossed = pickle.loads(pickle.dumps(builds))
    assert crossed.rows == builds.rows and crossed.fix == builds.fix and crossed.lines() == builds.lines()
    with pytest.raises(hv.ConfigError, match=r"apply the fix to yours: hv.partition\(part, torch_executed_ops="):
        crossed.fixed()
    with pytest.raises(hv.ConfigError, match="build it here"):
        crossed.repro()
    assert builds.fixed() is not None  # the one in this process still has its partition
