"""Torch-TensorRT's force_causal_efficient_attention (attn_bias_is_causal=True, its default) acting on the GPU's
attention: hierviz shows the graph as Torch-TensorRT lowers it for the GPU (a padding mask replaced by causal
attention, the outputs differing from the model's) and says so, naming the attention and the fix, in a
CaptureWarning, the capture's notes and the report; a causal mask says nothing; the capture cache keeps the
note and reads such a graph back instead of capturing it again in every process."""

from __future__ import annotations

import re
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import hierviz as hv
from hierviz.capturing import cached_capture_check
from hierviz.capturing.aten_capture import capture_notes

EFFICIENT = "aten._scaled_dot_product_efficient_attention.default"
SAID = "Torch-TensorRT's attn_bias_is_causal=True (its default) replaced the mask of the attention"
FIX = "compile with attn_bias_is_causal=False"
FROM_CACHE = "from the disk cache"


class PaddedEncoder(nn.Module):
    """One BERT-like self-attention: every token attends to every other, except the padding."""

    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads, self.head = heads, dim // heads
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, self.head).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask[:, None, None, :].bool())
        return self.out(o.transpose(1, 2).reshape(b, s, d))


class MaskedDecoder(nn.Module):
    """One self-attention with a fixed additive mask: causal (a decoder), or a window of `window` keys."""

    def __init__(self, length: int = 8, dim: int = 16, heads: int = 2, window: int | None = None) -> None:
        super().__init__()
        self.heads, self.head = heads, dim // heads
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        allowed = torch.ones(length, length, dtype=torch.bool).tril()
        if window is not None:
            allowed &= ~torch.ones(length, length, dtype=torch.bool).tril(-window)
        self.register_buffer("mask", torch.zeros(length, length).masked_fill(~allowed, float("-inf")))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, self.head).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)
        return self.out(o.transpose(1, 2).reshape(b, s, d))


def rotary_frequencies(dim: int, length: int) -> torch.Tensor:
    freqs = 1.0 / (10000.0 ** (torch.arange(0, dim, 2).float() / dim))
    angles = torch.outer(torch.arange(length).float(), freqs)
    return torch.polar(torch.ones_like(angles), angles)


class RotaryPaddedEncoder(nn.Module):
    """A padded self-attention with complex rotary embeddings: Torch-TensorRT's complex-number pass traces the
    lowered graph again, so the dynamo path meets the GPU's efficient attention too."""

    def __init__(self, dim: int = 32, heads: int = 2, length: int = 8) -> None:
        super().__init__()
        self.heads, self.head = heads, dim // heads
        self.wq, self.wk, self.wv = (nn.Linear(dim, dim, bias=False) for _ in range(3))
        self.register_buffer("freqs", rotary_frequencies(self.head, length), persistent=False)

    def rotate(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(z * self.freqs.view(1, z.shape[1], 1, z.shape[-1])).flatten(3).type_as(x)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = (w(x).view(b, s, self.heads, self.head) for w in (self.wq, self.wk, self.wv))
        q, k = self.rotate(q), self.rotate(k)
        mask = attention_mask[:, None, None, :].bool()
        return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask)


def padded_inputs(dim: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    attention_mask = torch.ones(2, 8, dtype=torch.long)
    attention_mask[1, 5:] = 0
    return torch.randn(2, 8, dim, generator=torch.Generator().manual_seed(1)), attention_mask


def made(cls: type, *args: object, **kwargs: object) -> nn.Module:
    torch.manual_seed(0)
    return cls(*args, **kwargs).eval()


def attention(gm: torch.fx.GraphModule) -> torch.fx.Node:
    (node,) = [n for n in gm.graph.nodes if n.op == "call_function" and "dot_product" in str(n.target)]
    return node


def made_causal(node: torch.fx.Node) -> bool:
    return str(node.target) == EFFICIENT and node.args[3] is None and node.args[6] is True


def captured_quietly(*args: object, **kwargs: object) -> object:
    """hv.capture, failing on any CaptureWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", hv.CaptureWarning)
        return hv.capture(*args, **kwargs)


def first(out: object) -> torch.Tensor:
    return out[0] if isinstance(out, (tuple, list)) else out  # type: ignore[return-value]


def test_a_padded_encoder_is_made_causal_as_on_the_gpu_and_the_capture_says_so() -> None:
    model, inputs = made(PaddedEncoder), padded_inputs()
    with pytest.warns(hv.CaptureWarning, match=r"replaced the mask of the attention ") as heard:
        captured = hv.capture(model, inputs, ir="torch_compile", cache=False)
    (graph,) = captured.graphs
    node = attention(graph.graph)
    assert made_causal(node)  # what Torch-TensorRT lowers on the GPU
    with torch.no_grad():
        assert not torch.allclose(first(graph.graph(*graph.example_inputs)), model(*inputs), atol=1e-3)
    (said,) = [str(w.message) for w in heard if issubclass(w.category, hv.CaptureWarning)]
    assert said.startswith(f"hv.capture: graph 0: {SAID} {node.name} by causal attention")
    assert "a mask computed from the graph's inputs" in said
    assert FIX in said and "options={'attn_bias_is_causal': False}" in said
    part = hv.partition(captured)
    assert any(note.startswith(f"{SAID} {node.name}") for note in part.graphs[0].notes)
    assert f"Note: {SAID} {node.name}" in part.report()


def test_a_causal_mask_made_causal_says_nothing_and_keeps_the_models_outputs() -> None:
    model = made(MaskedDecoder)
    x = padded_inputs()[0]
    captured = captured_quietly(model, (x,), ir="torch_compile", cache=False)
    (graph,) = captured.graphs
    assert made_causal(attention(graph.graph))  # the pass acted, rightly
    assert not capture_notes(graph.graph)
    with torch.no_grad():
        torch.testing.assert_close(first(graph.graph(*graph.example_inputs)), model(x))


def test_a_constant_mask_that_is_not_causal_is_said_to_be_so() -> None:
    model = made(MaskedDecoder, window=2)
    with pytest.warns(hv.CaptureWarning, match="a constant mask that is not causal, so the lowered graph's "
                                               "outputs differ from the model's"):
        captured = hv.capture(model, (padded_inputs()[0],), ir="torch_compile", cache=False)
    assert made_causal(attention(captured.graphs[0].graph))


def test_the_dynamo_path_says_it_where_torch_tensorrt_traces_the_attention_again() -> None:
    model, inputs = made(RotaryPaddedEncoder), padded_inputs(32)
    with pytest.warns(hv.CaptureWarning, match=re.escape(SAID)) as heard:
        gm = hv.capture(model, inputs, cache=False)
    node = attention(gm)
    assert made_causal(node)
    assert any(f"{SAID} {node.name} ({__file__}:" in str(w.message) and FIX in str(w.message) for w in heard)
    assert f"Note: {SAID} {node.name}" in hv.partition(gm).report()


@pytest.mark.parametrize("ir", ["dynamo", "torch_compile"])
def test_a_capture_read_from_the_disk_cache_says_it_again(tmp_path, monkeypatch, ir) -> None:
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    inputs = padded_inputs(32)
    with pytest.warns(hv.CaptureWarning, match=re.escape(SAID)):
        hv.capture(made(RotaryPaddedEncoder), inputs, ir=ir)
    with pytest.warns(hv.CaptureWarning, match=re.escape(SAID)):
        again = hv.capture(made(RotaryPaddedEncoder), inputs, ir=ir)  # another instance: from the disk
    graph = again.graphs[0].graph if ir == "torch_compile" else again
    notes = (*getattr(again, "notes", ()), *capture_notes(graph))
    assert any(FROM_CACHE in note for note in notes)
    assert any(note.startswith(SAID) for note in capture_notes(graph))
    assert made_causal(attention(graph))


def test_a_model_checked_by_its_outputs_is_read_back_not_captured_again_in_every_process(tmp_path,
                                                                                          monkeypatch) -> None:
    """A model that cannot be traced on fake tensors is checked by its outputs: the graph's differ from the
    model's by Torch-TensorRT's choice, so comparing the two would refuse the entry in every process."""
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cached_capture_check, "computation_digest", lambda *args: None)
    inputs = padded_inputs(32)
    with pytest.warns(hv.CaptureWarning, match=re.escape(SAID)):
        hv.capture(made(RotaryPaddedEncoder), inputs)
    for _ in range(2):
        with pytest.warns(hv.CaptureWarning, match=re.escape(SAID)):
            again = hv.capture(made(RotaryPaddedEncoder), inputs)
        notes = capture_notes(again)
        assert any(FROM_CACHE in note for note in notes), notes
    changed = made(RotaryPaddedEncoder)
    with torch.no_grad():
        changed.wv.weight[0, 0] += 1.0
    monkeypatch.setattr("hierviz.capturing.aten_capture.capture_key", lambda *args: "the same key")
    with pytest.warns(hv.CaptureWarning, match=re.escape(SAID)):
        hv.capture(made(RotaryPaddedEncoder), inputs)  # stored under the one key
    with pytest.warns(hv.CaptureWarning, match=re.escape(SAID)):
        stale = hv.capture(changed, inputs)  # the model's outputs changed: not served
    assert not any(FROM_CACHE in note for note in capture_notes(stale))
