"""Blockers, numerics and the HTML export never run a partitioner of a what-if or a compile in
the kernel's process (issue 43): each is a job of the explorer's worker process. Every such
call in this process is counted while the Explorer does all three; the counts stay 0 and each
result is shown."""

from __future__ import annotations

import dataclasses

import pytest

import hierviz as hv
from hierviz.widget import controls as ctl

from . import worker_helpers as helpers
from .worker_waits import join_on_worker

# each patched where its callers look it up: compile_partitioners.py and hierarchical.py call
# `trt.run_compile_partitioner` / `trt.run_upstream_partitioner` on the package hierviz.trt, and
# Partition.blockers() imports blockers_table from blocker_causes when called
COUNTED = [("hierviz.trt", "run_compile_partitioner"),
           ("hierviz.trt", "run_upstream_partitioner"),
           ("hierviz.partitioner.upstream.compile_partitioners", "partition_compiled"),
           ("hierviz.partitioner.blockers.blocker_causes", "blockers_table"),  # Partition.blockers()'s what-ifs
           ("hierviz.latency", "numerics"),
           ("hierviz.latency", "measure")]


@pytest.mark.slow  # a fresh process or a worker of its own: seconds of CPU (make check leaves it out)
def test_blockers_numerics_and_export_run_in_the_worker(tmp_path, monkeypatch) -> None:
    import importlib

    model, inputs = helpers.model_and_inputs()
    config = dataclasses.replace(helpers.SAME, torch_executed_ops=("aten.tanh.default",))
    ex = hv.explore(model, inputs, config, debounce=0, measure_options={"compilers": helpers.QUICK["compilers"]},
                    output_dir=tmp_path)
    calls: list[str] = []
    for module_name, path in COUNTED:
        owner: object = importlib.import_module(module_name)
        *parents, name = path.split(".")
        for part in parents:
            owner = getattr(owner, part)
        original = getattr(owner, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)
    try:
        ex.tabs.selected_index = ctl.tab_index("blockers_box")
        join_on_worker(ex.blockers_thread, "the blockers table never came", could_run_s=120.0)
        table = ex.blockers
        assert table is not None and "torch.ops.aten.tanh.default" in set(table["op"]), table
        assert len(ex.blockers_tab.picker.options) == len(table)
        ex.buttons["check_numerics"].click()
        join_on_worker(ex.numerics_thread, "the numerics check never ended", could_run_s=120.0)
        assert ex.controller.numerics_of(ex.partition) is not None, ex.errors
        path = ex.export("html")
        assert path.exists() and "torch_tensorrt.compile" in path.read_text()
        assert not ex.internal_errors and "blockers" not in ex.errors and "numerics" not in ex.errors
    finally:
        ex.close()
    assert calls == [], calls


@pytest.mark.parametrize("kind", ["blockers", "numerics"])
def test_the_count_is_not_vacuous_with_the_worker_off(kind, monkeypatch) -> None:
    """With the worker off, the same actions do call these in this process."""
    from hierviz.widget import long_work

    monkeypatch.setattr(long_work, "IN_WORKER", False)
    model, inputs = helpers.model_and_inputs()
    config = dataclasses.replace(helpers.SAME, torch_executed_ops=("aten.tanh.default",))
    calls: list[str] = []
    if kind == "blockers":  # counted from the start: the explorer makes the table in the background at once
        from hierviz.partitioner.blockers import blocker_causes

        original = blocker_causes.blockers_table
        monkeypatch.setattr(blocker_causes, "blockers_table", lambda *a, **k: calls.append(kind) or original(*a, **k))
    ex = hv.explore(model, inputs, config, debounce=0, measure_options={"compilers": helpers.QUICK["compilers"]})
    if kind == "blockers":
        assert ex.blockers is not None
    else:
        import hierviz.latency as package

        original_numerics = package.numerics
        monkeypatch.setattr(package, "numerics", lambda *a, **k: calls.append(kind) or original_numerics(*a, **k))
        ex.check_numerics()
    assert calls == [kind]
