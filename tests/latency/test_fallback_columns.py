"""Fallbacks are visible wherever measurements are tabulated: a subgraph whose backend failed
(on_error="fallback") is counted in `fallbacks`, in hv.sweep rows and the explorer's columns."""

from __future__ import annotations


import hierviz as hv
from hierviz.compare import columns
from hierviz.latency import CompileCache, clear_cache


def test_sweep_rows_count_fallbacks(tiny_conv, monkeypatch) -> None:
    import torch._inductor

    def boom(*args, **kwargs):
        raise RuntimeError("no kernel")

    _, x, gm = tiny_conv
    monkeypatch.setattr(torch._inductor, "compile", boom)
    clear_cache()  # sweep measures through the process-wide cache
    try:
        df = hv.sweep(gm, x, {"min_block_size": [1, 100]}, base=hv.Config(priority=("inductor",),
                                                                    support={"inductor": hv.support.inductor()}),
                      measure={"on_error": "fallback", "warmup": 0, "iters": 1, "per_subgraph": False},
                      progress=False)
    finally:
        clear_cache()
    assert list(df.fallbacks) == list(df.subgraphs_inductor)  # every inductor subgraph fell back
    assert df.fallbacks.iloc[0] >= 1 and df.fallbacks.iloc[1] == 0
    assert (df.outputs_match == True).all()  # noqa: E712 - the eager fallback is still right
    # neither row ran anything accelerated (issue 37): one fell back, the other has no accelerated subgraph
    assert df.nothing_accelerated.tolist() == [True, True] and df.accelerated.tolist() == [0, 0]
    assert df.verdict.str.startswith("nothing accelerated").all()


def test_latency_columns_report_fallbacks_as_a_count(tiny_conv, monkeypatch) -> None:
    import torch._inductor

    monkeypatch.setattr(torch._inductor, "compile", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("x")))
    _, x, gm = tiny_conv
    part = hv.partition(gm, priority=("inductor",), support={"inductor": hv.support.inductor()}, min_block_size=1)
    m = hv.measure(part, x, cache=CompileCache(), on_error="fallback", warmup=0, iters=1, per_subgraph=False)
    row = columns.latency_columns(m)
    assert row["fallbacks"] == len(m.fallbacks) == 1
    assert list(row) == [*columns.LATENCY_COLUMNS, "nothing_accelerated"]
    assert row["accelerated"] == 0 and row["nothing_accelerated"] is True  # its one subgraph fell back
    assert row["verdict"].startswith("nothing accelerated: every subgraph ran in eager PyTorch (1 fell back)")
