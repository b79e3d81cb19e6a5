"""What Builds.notes tells a user beyond the rows: an engine too big for the build cache, a
graph that could not be run here first."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import trt
from tests.building.models import ConvNet, made
from tests.capturing.test_input_device import fake, graph_with_values


def _on(device: str) -> torch.fx.GraphModule:
    """x0 + x1, every value recorded on `device`."""
    graph = graph_with_values(fake(device, 4, 4), fake(device, 4, 4))
    for n in graph.graph.nodes:
        if n.op == "call_function":
            n.meta["val"] = fake(device, 4, 4)
    return graph

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")


def test_an_engine_larger_than_the_cache_limit_is_said_and_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HIERVIZ_CACHE_LIMIT", "4000")
    model, x = made(ConvNet, 1, 3, 8, 8)
    part = hv.partition(model, x, min_block_size=1)
    builds = part.build()
    assert builds.ok
    size = builds.engine_bytes
    assert size > 4000
    said = [n for n in builds.notes if "was not kept in the build cache" in n]
    assert len(said) == 1, builds.notes
    assert said[0].startswith("_run_on_acc_tensorrt_0's engine (")
    assert "it is larger than the cache limit (4000 bytes); set HIERVIZ_CACHE_LIMIT=<size> to keep it" in said[0]
    assert said[0] in "\n".join(builds.lines())
    again = part.build()
    assert list(again.df["cached"]) == [False]  # not kept, so built again


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the graph runs there")
def test_a_graph_captured_on_a_device_this_machine_lacks_builds_without_a_fake_run_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    builds = hv.partition(_on("cuda"), min_block_size=1).build()
    assert list(builds.df["stage"]) == ["built"]  # converted and built; not a "run" failure
    said = [n for n in builds.notes if n.startswith("the graph was not run in PyTorch first (input x0 was captured "
                                                   "on cuda:0, which this machine does not have")]
    assert len(said) == 1 and said[0].endswith("its engines were still converted and built"), builds.notes


def test_hierviz_check_build_verbose_prints_what_the_build_held_back(tmp_path, monkeypatch, capsys):
    from tests.cli.test_cli import run_cli

    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HIERVIZ_CACHE_LIMIT", "4000")
    script = tmp_path / "convnet.py"
    script.write_text("from tests.building.models import ConvNet, made\n"
                      "def build():\n    return made(ConvNet, 1, 3, 8, 8)\n")
    code, quiet, _ = run_cli(capsys, "check", f"{script}:build", "--min-block-size", "1", "--build")
    assert code == 0 and "note:" not in quiet
    code, out, _ = run_cli(capsys, "--verbose", "check", f"{script}:build", "--min-block-size", "1", "--build")
    assert code == 0
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert any("was not kept in the build cache: it is larger than the cache limit (4000 bytes)" in n
               for n in notes), out


def test_many_warnings_are_one_line_in_words_and_each_stays_in_notes():
    from hierviz.building.builds import Builds

    notes = ("an engine was not kept", "Torch-TensorRT warned: Both operands of op_a are constant.",
             "Torch-TensorRT warned: Both operands of op_b are constant.")
    lines = Builds((), "TensorRT-RTX 1.6.1", True, notes=notes).lines()
    assert "an engine was not kept" in lines
    assert ("Torch-TensorRT warned 2 times while it converted (each in Builds.notes), first: Both operands of op_a "
            "are constant.") in lines
    assert not any("op_b" in line for line in lines)
    one = Builds((), "TensorRT-RTX 1.6.1", True, notes=notes[:2]).lines()
    assert notes[1] in one


def test_a_failing_build_prints_nothing_and_keeps_torch_tensorrts_logged_errors_in_details(tmp_path, monkeypatch,
                                                                                        capfd):
    from tests.building.failing_converters import BUILD_ERROR, RefusesToBuild

    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    model, x = made(RefusesToBuild, 2, 8)  # the test's converter adds an assertion the builder refuses
    part = hv.partition(model, x, min_block_size=1)
    capfd.readouterr()
    builds = part.build(fix=False)
    row = builds.rows[0]
    assert row.stage == "build" and row.details and row.error.split(":")[0] in row.details
    assert BUILD_ERROR in row.details  # TensorRT logged it through Torch-TensorRT's logger
    assert "torch_tensorrt" not in capfd.readouterr().err


# ---------------------------------------------------------------------------- a cache that takes no engine
def _two_engines() -> hv.Partition:
    """ConvNet with its ReLUs run in PyTorch: two TensorRT engines."""
    model, x = made(ConvNet, 1, 3, 8, 8)
    part = hv.partition(model, x, min_block_size=1, torch_executed_ops={"aten.relu.default"})
    assert part.stats["subgraphs_by_backend"]["tensorrt"] == 2
    return part


def _not_kept(builds) -> list[str]:
    return [n for n in builds.notes if "not kept in the build cache" in n]


def test_a_full_disk_builds_keeps_nothing_and_says_so_once(tmp_path, monkeypatch):
    """The disk has 5000 bytes left: the first engine's file takes them, then ENOSPC. The build
    goes on, nothing is left in the folder, one CacheWarning says why (the engine is kept after
    build() returned, hierviz.foundation.writes_behind: the build's notes are said by then)."""
    import errno
    import os
    import warnings

    from hierviz.foundation import temp_files, writes_behind
    from hierviz.foundation.cache_warning import CacheWarning

    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HIERVIZ_CACHE_LIMIT", raising=False)
    part = _two_engines()
    written, left = temp_files.write_all, [5000]

    def fills(fd, data):
        piece = bytes(memoryview(data).cast("B")[:left[0]])
        written(fd, piece)
        left[0] -= len(piece)
        if len(piece) < len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(temp_files, "write_all", fills)
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")
        builds = part.build()
        writes_behind.wait_all()
    assert builds.ok and list(builds.df["stage"]) == ["built", "built"]
    folder = tmp_path / "builds"
    assert [str(w.message) for w in heard if issubclass(w.category, CacheWarning)] == [
        f"part.build(): _run_on_acc_tensorrt_0's engine was not kept in the build cache: the disk of {folder} is full "
        "(No space left on device); free space there or set HIERVIZ_CACHE_DIR to a folder on another disk"]
    assert [p.name for p in folder.iterdir() if not p.name.startswith("run-")] == []  # no engine, no temp file
    monkeypatch.setattr(temp_files, "write_all", written)
    assert list(part.build().df["cached"]) == [False, False]  # not kept, so built again


def test_a_build_cache_folder_that_cannot_be_made_builds_keeps_nothing_and_says_so_once(tmp_path, monkeypatch):
    """The build cache's folder is a file (root writes through chmod, not through a file)."""
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    part = _two_engines()
    (tmp_path / "builds").write_text("not a folder")
    builds = part.build()
    assert builds.ok and list(builds.df["stage"]) == ["built", "built"]
    assert _not_kept(builds) == [f"_run_on_acc_tensorrt_0's engine and 1 other engine were not kept in the build "
                                 f"cache: {tmp_path / 'builds'} is a file, not a folder; remove it (`hierviz cache "
                                 "clear` does not)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["builds", "captures"]


def test_a_cached_engine_with_a_flipped_byte_is_built_again_with_a_note(tmp_path, monkeypatch):
    """No GPU reads the engine here: part.build()'s cache read checks its digest itself."""
    import warnings

    from hierviz.capturing.disk_cache import CacheWarning
    from hierviz.foundation import writes_behind

    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HIERVIZ_CACHE_LIMIT", raising=False)
    model, x = made(ConvNet, 1, 3, 8, 8)
    assert list(hv.partition(model, x, min_block_size=1).build().df["cached"]) == [False]
    writes_behind.wait_all()  # the engine is written after build() returned
    engine, = (tmp_path / "builds").glob("*.engine")
    data = bytearray(engine.read_bytes())
    data[len(data) // 2] ^= 1  # the same length
    engine.write_bytes(bytes(data))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = hv.partition(model, x, min_block_size=1).build()
    assert list(again.df["cached"]) == [False] and again.ok  # built again, not served
    assert [n for n in again.notes if "cached build was damaged" in n] == [
        "_run_on_acc_tensorrt_0's cached build was damaged (its engine file's digest disagrees with the record): it "
        "was removed and built again"]
    assert sum(issubclass(w.category, CacheWarning) for w in caught) == 1
    writes_behind.wait_all()
    assert engine.read_bytes() != bytes(data)  # the new build kept its own
    assert list(hv.partition(model, x, min_block_size=1).build().df["cached"]) == [True]
