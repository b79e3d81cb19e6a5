"""An error's first line, as builds and captures show it: its type, no object address, cut when long."""

from __future__ import annotations

from hierviz.foundation.error_text import first_line, message_line, short_error


def test_first_line_names_the_type_and_leaves_addresses_out() -> None:
    exc = ValueError("no <tensorrt_rtx.ITensor object at 0x7f88aa01> here\nsecond line")
    assert first_line(exc) == "ValueError: no <ITensor> here"
    assert first_line(KeyboardInterrupt()) == "KeyboardInterrupt"
    assert first_line("  a message\nmore") == "a message"
    assert first_line("") == ""


def test_a_long_line_is_cut_at_the_limit() -> None:
    exc = RuntimeError("x" * 400)
    assert message_line(exc, 300) == "x" * 297 + "..."
    assert first_line(exc, 300) == "RuntimeError: " + "x" * 297 + "..."
    assert message_line(exc) == "x" * 400


def test_a_tensorrt_layer_error_is_summed_up_by_the_layer_type_and_what_tensorrt_said() -> None:
    line = ("ITensor::getDimensions: Error Code 3: API Usage Error ([TOPK]-[aten_ops.sort.default]-[model.layers.0.mlp."
            "experts/sort_topk]: at least 2 dimensions are required for input. In checkNOrMoreDims at /_src/optim…")
    assert short_error(line) == "[TOPK] at least 2 dimensions are required for input"
    unnamed = ("ITensor::getDimensions: Error Code 3: API Usage Error ((Unnamed Layer* 421) [AttentionInput]: Key and "
               "Value must have the same shape In validate at /_src/optimizer/api/layers/attentionInputLayer.cpp:…")
    assert short_error(unnamed) == "[AttentionInput] Key and Value must have the same shape"
