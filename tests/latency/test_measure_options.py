"""hv.measure's options as one record (hierviz.latency.measure_options.MeasureOptions): a bad value
is refused when the record is made, with the error hv.measure gives; the record is frozen; and
hv.measure checks its options once, then hands the one record down to the compile."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

import hierviz as hv
from hierviz.latency.compiling import compiled_split
from hierviz.latency.measure_options import MeasureOptions


class Tiny(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * 2 + 1)


def exact(gm, example_inputs):
    """A backend that runs the subgraph as it is: right, and quick to compile."""
    return gm


@pytest.fixture(scope="module")
def tiny():
    x = (torch.randn(2, 4),)
    part = hv.partition(Tiny().eval(), x, priority=("exact",), min_block_size=1,
                        support={"exact": hv.support.where(lambda n: n.op == "call_function", name="all")})
    return part, x


BAD = [
    ({"iters": 0}, hv.MeasureError, r"^iters must be a positive integer, not 0$"),
    ({"iters": 2.5}, hv.MeasureError, r"^iters must be a positive integer, not 2\.5$"),
    ({"warmup": -1}, hv.MeasureError, r"^warmup must be a non-negative integer, not -1$"),
    ({"on_error": "ignore"}, hv.MeasureError, r"^on_error must be one of \('raise', 'fallback'\), not 'ignore'$"),
    ({"tf32": "yes"}, hv.MeasureError, r"^tf32 is True or False, not str 'yes'\.$"),
    ({"check": 1}, hv.MeasureError, r"^check is True or False, not int 1\.$"),
    ({"baseline": None}, hv.MeasureError, r"^baseline is True or False, not NoneType None\.$"),
    ({"rtol": -1e-3}, hv.MeasureError, r"^rtol must be a non-negative number"),
    ({"atol": "tight"}, hv.MeasureError, r"^atol must be a non-negative number"),
    ({"cache_dir": 3}, hv.MeasureError, r"^cache_dir must be a path, not int$"),
]


@pytest.mark.parametrize("bad, error, message", BAD, ids=[next(iter(b)) + "=" + repr(next(iter(b.values())))
                                                         for b, _, _ in BAD])
def test_a_bad_value_is_refused_by_the_record_as_hv_measure_refuses_it(tiny, bad, error, message) -> None:
    part, x = tiny
    with pytest.raises(error, match=message) as made:
        MeasureOptions(**bad)
    with pytest.raises(error, match=message) as measured:
        hv.measure(part, x, compilers={"exact": exact}, **bad)
    assert type(made.value) is type(measured.value) and str(made.value) == str(measured.value)


def test_an_unknown_option_names_the_closest() -> None:
    with pytest.raises(hv.ConfigError, match=r"unknown argument\(s\) \['iter'\]; did you mean 'iters'\?"):
        MeasureOptions.of({"iter": 3})


def test_the_record_is_frozen_and_a_changed_copy_is_checked_again() -> None:
    options = MeasureOptions(iters=20)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.iters = 0  # type: ignore[misc]
    quick = options.replace(iters=5)
    assert (options.iters, quick.iters) == (20, 5)
    with pytest.raises(hv.MeasureError, match="iters must be a positive integer"):
        options.replace(iters=0)


def test_the_users_dicts_are_held_not_copied_or_changed() -> None:
    compilers = {"exact": exact}
    inductor = {"max_autotune": False}
    options = MeasureOptions.of({"compilers": compilers, "inductor_options": inductor})
    assert options.compilers is compilers and options.inductor_options is inductor
    assert compilers == {"exact": exact} and inductor == {"max_autotune": False}
    assert options.compile_kwargs() == {"on_error": "raise", "cache": None, "cache_dir": None, "trt_settings": None,
                                        "inductor_options": inductor, "compilers": compilers, "tf32": False}


def test_measure_checks_its_options_once_and_compiles_with_that_record(tiny, monkeypatch) -> None:
    part, x = tiny
    made: list[MeasureOptions] = []
    check = MeasureOptions.__post_init__

    def counted(self: MeasureOptions) -> None:
        made.append(self)
        check(self)

    compiled_with: list[MeasureOptions] = []
    build = compiled_split.build_split

    def seen(partition, example_inputs, device, options, **kwargs):
        compiled_with.append(options)
        return build(partition, example_inputs, device, options, **kwargs)

    monkeypatch.setattr(MeasureOptions, "__post_init__", counted)
    monkeypatch.setattr("hierviz.latency.measure_call.build_split", seen)
    m = hv.measure(part, x, compilers={"exact": exact}, warmup=0, iters=2, per_subgraph=False)
    assert m.iters == 2 and m.outputs_match
    assert len(made) == 1                       # checked once, at hv.measure
    assert compiled_with == made and compiled_with[0] is made[0]  # the compile got that very record


class Blocked(nn.Module):
    """relu, tanh forced to PyTorch, relu: the blockers table has a forced row to time."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.tanh(torch.relu(x + 1) * 2) - 1)


def test_blockers_time_the_current_setting_and_every_what_if_with_one_record(monkeypatch) -> None:
    from hierviz.latency import whatif

    x = (torch.randn(2, 4),)
    part = hv.partition(Blocked().eval(), x, priority=("exact",), min_block_size=1,
                        support={"exact": hv.support.where(lambda n: n.op == "call_function", name="all")},
                        torch_executed_ops={"aten.tanh.default"})
    timed: list[MeasureOptions] = []
    real = whatif.measure_with

    def seen(partition, example_inputs, options):
        timed.append(options)
        return real(partition, example_inputs, options)

    monkeypatch.setattr(whatif, "measure_with", seen)
    table = part.blockers(measure=True, device="cpu", example_inputs=x,
                          measure_options={"compilers": {"exact": exact}, "warmup": 0, "iters": 2})
    assert (table.kind == "forced").any() and table.loc[table.kind == "forced", "median_ms"].notna().all()
    assert len(timed) >= 2 and all(o is timed[0] for o in timed)  # the current setting and each what-if
    assert (timed[0].iters, timed[0].baseline, str(timed[0].device)) == (2, False, "cpu")
    with pytest.raises(hv.MeasureError, match=r"^warmup must be a non-negative integer, not -1$"):
        part.blockers(measure=True, device="cpu", example_inputs=x, measure_options={"warmup": -1})
