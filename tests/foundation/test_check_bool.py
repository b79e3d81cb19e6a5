"""A flag argument given anything but True or False is refused with one message, in the error
class of the function it was given to."""

from __future__ import annotations

import pytest

import hierviz as hv
from hierviz.latency.precision import check_tf32


@pytest.mark.parametrize("call, message", [
    (lambda: hv.support.tensorrt(validate="yes"), "hv.support.tensorrt(validate=...) is True or False, not str 'yes'."),
    (lambda: hv.support.inductor(fallbacks=1), "hv.support.inductor(fallbacks=...) is True or False, not int 1."),
    (lambda: hv.Config(skip_fusion=None), "skip_fusion is True or False, not NoneType None."),
])
def test_a_flag_that_is_not_a_bool_is_a_config_error(call, message) -> None:
    with pytest.raises(hv.ConfigError) as err:
        call()
    assert message in str(err.value)


def test_the_measure_flag_stays_a_measure_error() -> None:
    assert check_tf32(True) is True
    with pytest.raises(hv.MeasureError, match=r"^tf32 is True or False, not str 'x{39}\.$"):
        check_tf32("x" * 100)  # the value's repr cut to 40 characters
