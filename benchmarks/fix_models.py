"""Models whose TensorRT engine fails to build here, for `benchmarks/builds.py --fix`: a 4-layer
GPT-2 (n_embd 128; TensorRT-RTX 1.6.1's Myelin fails on its QKV split, as on the zoo's gpt2),
and a model with two failures in one engine: a BART-style `shift_tokens_right` (whose
`slice_scatter` fails to convert) beside GPT-2's fused QKV attention (Myelin's failure)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from hierviz.zoo import TensorOutput


def gpt2_4layer() -> tuple[nn.Module, tuple[torch.Tensor]]:
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_embd=128, n_layer=4, n_head=4, vocab_size=1000, n_positions=64,
                                     bos_token_id=0, eos_token_id=0, use_cache=False)
    model = TensorOutput(transformers.GPT2LMHeadModel(config).eval(), "logits")
    return model, (torch.randint(0, 1000, (1, 32), generator=torch.Generator().manual_seed(0)),)


class TwoFailures(nn.Module):
    """Token ids shifted right as BART's decoder does (`shifted[:, 1:] = ids[:, :-1]`), embedded,
    then GPT-2's attention written out (one addmm for q, k, v, split into heads)."""

    def __init__(self, d: int = 64, heads: int = 4, vocab: int = 100) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.w = nn.Parameter(torch.randn(d, 3 * d) * 0.02)
        self.bias = nn.Parameter(torch.zeros(3 * d))
        self.d, self.heads = d, heads

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        shifted = ids.new_zeros(ids.shape)
        shifted[:, 1:] = ids[:, :-1].clone()
        shifted[:, 0] = 2
        x = self.emb(shifted)
        b, t, _ = x.shape
        y = torch.addmm(self.bias, x.view(-1, self.d), self.w).view(b, t, 3 * self.d)
        q, k, v = (z.view(b, t, self.heads, -1).permute(0, 2, 1, 3) for z in y.split(self.d, dim=2))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return out.permute(0, 2, 1, 3).reshape(b, t, self.d)


def two_failures() -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return TwoFailures().eval(), (torch.randint(0, 100, (1, 16), generator=torch.Generator().manual_seed(0)),)


MODELS = {"gpt2_4layer": gpt2_4layer, "two_failures": two_failures}
