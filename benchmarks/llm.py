"""Language models outside the zoo for the benchmarks: transformers configs with random
weights, no downloads (a 24-layer Llama with hidden size 256, a 12-layer Qwen2, and a 1.1B
Llama-style model in bf16 for the memory and time of a billion-parameter build)."""

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


def llama_1b(layers: int = 16, seq: int = 128) -> tuple[torch.nn.Module, tuple]:
    """The 1.1B Llama-style model of issue 49 in bf16 (hidden 2048, 16 layers, intermediate 8192,
    32 heads, 8 kv heads, vocab 32000; 2.2 GB of weights) and its tokens (1, seq); `layers`
    shrinks it. Made in bf16 from the start (torch's default dtype set while it is made), so
    that making it never holds the 4.4 GB an fp32 copy would: a process's peak RSS is the build's."""
    import transformers

    vocab = 32000
    config = transformers.LlamaConfig(
        vocab_size=vocab, hidden_size=2048, intermediate_size=8192, num_hidden_layers=layers, num_attention_heads=32,
        num_key_value_heads=8, max_position_embeddings=2 * seq, use_cache=False)
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        model = transformers.LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(default)
    model = model.to(torch.bfloat16).eval()
    tokens = torch.randint(0, vocab, (1, seq), generator=torch.Generator().manual_seed(0))
    return TensorOutput(model, "logits"), (tokens,)


MODELS = {"llama": llama, "qwen2": qwen2, "llama_1b": llama_1b}
