"""An exception as one short line, the same text in every process: what a build, a capture or a
run that failed says of its cause."""

from __future__ import annotations

import re

# '<tensorrt_rtx_bindings.tensorrt_rtx.ITensor object at 0x7f88...>' -> '<ITensor>'
OBJECT_ADDRESS = re.compile(r"<(?:[\w.]+\.)?(\w+) object at 0x[0-9a-fA-F]+>")


def message_line(exc: BaseException | str, limit: int | None = None) -> str:
    """The first line of an exception's message (or of a text), object addresses left out, cut to
    `limit` characters ('...' at the end) when it is longer."""
    text = str(exc).strip()
    line = OBJECT_ADDRESS.sub(r"<\1>", text.splitlines()[0]) if text else ""
    if limit is not None and len(line) > limit:
        line = line[:limit - 3] + "..."
    return line


def first_line(exc: BaseException | str, limit: int | None = None) -> str:
    """'TypeName: first line' of an exception (the first line alone of a message), object
    addresses left out, its message cut to `limit` characters."""
    head = message_line(exc, limit)
    if isinstance(exc, str):
        return head
    return f"{type(exc).__name__}: {head}" if head else type(exc).__name__


# a failed check in TensorRT's (Myelin's) error, with the file:line before it when there is one:
# 'operand.cpp:156: CHECK(logical_mem_size == data_->size())'; group "check" is the check alone
TENSORRT_CHECK = re.compile(r"(?:[\w./-]+:\d+:\s*)?(?P<check>CHECK\((?:[^()]|\([^()]*\))*\))")


# TensorRT's error about a layer Torch-TensorRT named '[TYPE]-[target]-[node]', or one left unnamed: '... API Usage
# Error ([TOPK]-[aten_ops.sort.default]-[model.layers.0.mlp/sort_topk]: at least 2 dimensions are required for input.
# In checkNOrMoreDims at ...', '... ((Unnamed Layer* 421) [AttentionInput]: Key and Value must have the same shape In
# validate at ...'; group "layer" is '[TOPK]', "message" what TensorRT said of it
TENSORRT_LAYER_ERROR = re.compile(r"\((?:(?P<layer>\[\w+\])-\[[^\]]*\]-\[[^\]]*\]|\(Unnamed Layer\* \d+\) "
                                  r"(?P<unnamed>\[\w+\])): (?P<message>.+?)(?:\.|\s+In \w+ at |…|\)$|$)")


def short_error(error: str) -> str:
    """The error in a few words for a one-line summary: a Myelin check's condition, a layer's
    type and what TensorRT said of it ('[TOPK] at least 2 dimensions are required for input'),
    or the line's start."""
    check = TENSORRT_CHECK.search(error)
    if check:
        return ("Myelin " if "Myelin" in error else "") + check["check"]
    layer = TENSORRT_LAYER_ERROR.search(error)
    if layer:
        error = f"{layer['layer'] or layer['unnamed']} {layer['message'].strip()}"
    return error if len(error) <= 60 else error[:57] + "..."


__all__ = ["OBJECT_ADDRESS", "TENSORRT_CHECK", "TENSORRT_LAYER_ERROR", "first_line", "message_line", "short_error"]
