"""A support mapping's key comes from its content (hierviz.support.support_key), so that hv.tune's
stored studies resume in another process: equal for equal content built anew, different when
what a source takes differs (never an object's id)."""

from __future__ import annotations

import functools

import torch

import hierviz as hv
from hierviz.support.support_key import content_key

CONV = "torch.ops.aten.convolution.default"
RELU = "torch.ops.aten.relu.default"


def every() -> hv.Support:
    return hv.support.where(lambda n: n.op == "call_function", name="every op")


def only(op) -> hv.Support:
    return hv.support.where(lambda n: n.target == op, name="only")  # the same code, closing over op


def is_op(node, op) -> bool:
    return node.target == op


def test_equal_content_gives_equal_keys() -> None:
    a = {"fast": hv.support.ops([CONV, RELU]), "same": every(), "inductor": hv.support.inductor()}
    b = {"inductor": hv.support.inductor(), "same": every(), "fast": hv.support.ops([RELU, CONV])}
    assert a["same"].predicate is not b["same"].predicate
    assert content_key(a) == content_key(b) == content_key(hv.Config(support=b).support)
    relu = torch.ops.aten.relu.default
    assert content_key({"x": only(relu)}) == content_key({"x": only(relu)})


def test_other_content_gives_other_keys() -> None:
    relu, conv = torch.ops.aten.relu.default, torch.ops.aten.convolution.default
    sources = [hv.support.ops([CONV]), hv.support.ops([RELU]), hv.support.tensorrt(),
               hv.support.tensorrt(validate=False), hv.support.inductor(), hv.support.inductor(fallbacks=False),
               every(), hv.support.where(lambda n: n.op != "call_function", name="every op"), only(relu), only(conv),
               hv.support.where(functools.partial(is_op, op=relu)), hv.support.where(functools.partial(is_op, op=conv)),
               hv.support.chain(hv.support.ops([CONV]), every()), hv.support.any_chain(hv.support.ops([CONV]), every())]
    keys = [content_key({"x": s}) for s in sources]
    assert len(set(keys)) == len(sources)
    assert content_key({"x": every()}) != content_key({"y": every()})  # the backend's name counts too
