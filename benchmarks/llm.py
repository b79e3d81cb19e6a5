"""Language models outside the zoo for the benchmarks: transformers configs with random
weights, no downloads (a 24-layer Llama with hidden size 256, a 12-layer Qwen2)."""

from __future__ import annotations

import torch

from hierviz.zoo import TensorOutput

VOCAB, SEQ = 1000, 32


def _tokens() -> tuple[torch.Tensor]:
    return (torch.randint(0, VOCAB, (1, SEQ), generator=torch.Generator().manual_seed(0)),)


def _causal_lm(family: str, layers: int, hidden: int) -> tuple[torch.nn.Module, tuple]:
    import transformers

    torch.manual_seed(0)
    config = getattr(transformers, f"{family}Config")(
        vocab_size=VOCAB, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2 * SEQ, use_cache=False)
    return TensorOutput(getattr(transformers, f"{family}ForCausalLM")(config).eval(), "logits"), _tokens()


def llama(layers: int = 24, hidden: int = 256) -> tuple[torch.nn.Module, tuple]:
    return _causal_lm("Llama", layers, hidden)


def qwen2(layers: int = 12, hidden: int = 256) -> tuple[torch.nn.Module, tuple]:
    return _causal_lm("Qwen2", layers, hidden)


MODELS = {"llama": llama, "qwen2": qwen2}
