"""The explorer's worker process runs jobs on graphs holding custom ops registered outside torch
(a user's op from an importable module, Torch-TensorRT's `tensorrt::conv_asym_pad`): it imports
the module that registers each before it reads the graph. A graph whose op is defined in
`__main__` (a notebook cell) is not sent: the explorer's LongWork finds that out once, says which
op, and runs its jobs in this process."""

from __future__ import annotations

import pytest

import hierviz as hv
from hierviz import trt
from hierviz.widget import worker as worker_module
from hierviz.widget.long_work import HERE, LongWork
from hierviz.widget.worker import Unsendable, Worker
from tests.custom_op_models import MAIN_OP, MYSIN, PadConv, SinNet, example, main_cell_model, seeded

from . import worker_helpers as helpers  # the worker imports it by this name too (it gets this sys.path)

needs_trt = pytest.mark.skipif(not trt.available(), reason="Torch-TensorRT's lowering makes tensorrt::conv_asym_pad")


@pytest.fixture(scope="module")
def worker():
    """A worker that waits as long as a loaded machine needs for its child's first word (a
    child at the lowest CPU priority may take minutes to import torch there)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(worker_module, "START_S", 600.0)
        w = Worker(hang_s=600.0)
        yield w
        w.close()


@pytest.mark.slow  # a worker process of its own: seconds of CPU
@pytest.mark.parametrize("cls", [SinNet, pytest.param(PadConv, marks=needs_trt)], ids=lambda c: c.__name__)
def test_the_worker_runs_a_job_on_a_custom_op_graph(worker, cls) -> None:
    model, inputs = seeded(cls), example(cls)
    gm = hv.capture(model, inputs)
    custom = {str(n.target) for n in gm.graph.nodes if n.op == "call_function" and not str(n.target).startswith("aten")}
    assert custom == ({MYSIN.replace("::", ".") + ".default"} if cls is SinNet else {"tensorrt.conv_asym_pad.default"})
    got = worker.run(gm, inputs, "measure", (helpers.SAME, helpers.QUICK))
    here = hv.measure(hv.partition(gm, helpers.SAME), inputs, **helpers.QUICK)
    assert got.outputs_match and got.iters == here.iters == 3
    assert list(got.per_subgraph["tag"]) == list(here.per_subgraph["tag"])
    assert worker.run(gm, inputs, "blockers", hv.Config(min_block_size=1)).equals(
        hv.partition(gm, min_block_size=1).blockers())


def test_a_graph_with_an_op_defined_in_main_is_not_sent() -> None:
    model, inputs = main_cell_model()
    gm = hv.capture(model, inputs)
    worker = Worker()
    try:
        with pytest.raises(Unsendable, match=f"the graph's custom op {MAIN_OP} is defined in __main__") as got:
            worker.run(gm, inputs, "blockers", hv.Config())
        assert got.value.op == MAIN_OP
        assert worker.starts == 0  # no child started for a graph it could not read
    finally:
        worker.close()


def test_the_explorer_says_once_which_op_keeps_its_jobs_here(monkeypatch) -> None:
    model, inputs = main_cell_model()
    gm = hv.capture(model, inputs)
    worker = Worker()
    sent = []
    real = Worker.submit

    def counting(self, *args, **kwargs):
        sent.append(args[2])
        return real(self, *args, **kwargs)
    monkeypatch.setattr(Worker, "submit", counting)
    work = LongWork(gm, inputs, worker=worker)
    try:
        part = hv.partition(gm, helpers.SAME)
        m = work.measure(part, options=helpers.QUICK)
        table = work.blockers(part)
        assert m.outputs_match and table.equals(part.blockers())  # run here, as the worker would have
        assert sent == ["measure"]  # found out once; the next job went straight to this process
        expected = HERE + f"the graph's custom op {MAIN_OP} is defined in __main__"
        assert work.notes["measure"].startswith(expected) and work.notes["blockers"] == work.notes["measure"]
        assert worker.starts == 0
    finally:
        work.close()
        worker.close()
