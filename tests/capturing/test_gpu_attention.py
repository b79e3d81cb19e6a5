"""The attention kernel torch picks on a CUDA GPU, chosen on a CPU (hierviz.capturing.gpu_attention), and the CPU
kernels that let hierviz run the GPU's attention ops (hierviz.capturing.gpu_kernels)."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F
from torch._dispatch.python import enable_python_dispatcher
from torch.fx.experimental.proxy_tensor import make_fx

import hierviz as hv
from hierviz.capturing import gpu_kernels
from hierviz.capturing.gpu_attention import sdpa_backend
from hierviz.capturing.gpu_target import GpuTarget
from hierviz.capturing.target_device import lowering_for

A100 = GpuTarget((8, 0), cudnn=92400)
H100 = GpuTarget((9, 0), cudnn=92400)


def qkv(dtype: torch.dtype = torch.float32, heads: int = 4, kv_heads: int = 4, head: int = 64, q_len: int = 16,
        kv_len: int = 16) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return (torch.randn(2, heads, q_len, head, dtype=dtype), torch.randn(2, kv_heads, kv_len, head, dtype=dtype),
            torch.randn(2, kv_heads, kv_len, head, dtype=dtype))


@pytest.mark.parametrize("gpu, dtype, mask, expected", [
    (A100, torch.float16, False, "flash"),  # half, no mask: flash first
    (H100, torch.float16, False, "cudnn"),  # sm90 with cuDNN newer than 9.15: cuDNN attention first
    (H100, torch.bfloat16, True, "cudnn"),  # cuDNN takes a mask
    (A100, torch.float16, True, "efficient"),  # flash takes no mask
    (H100, torch.float32, False, "efficient"),  # fp32: neither flash nor cuDNN
    (H100, torch.float32, True, "efficient"),
    (GpuTarget((9, 0), cudnn=91400), torch.float16, False, "flash"),  # an older cuDNN is not put first
])
def test_the_backend_follows_torchs_priority_and_filters(gpu, dtype, mask, expected) -> None:
    q, k, v = qkv(dtype)
    attn_mask = torch.zeros(16, 16, dtype=dtype) if mask else None
    assert sdpa_backend(q, k, v, attn_mask, 0.0, False, False, gpu) == expected


def test_head_dims_gqa_dropout_and_switches_change_the_choice() -> None:
    assert sdpa_backend(*qkv(torch.float32, head=6), None, 0.0, False, False, H100) == "math"  # 6 % 4 != 0
    assert sdpa_backend(*qkv(torch.float16, head=20), None, 0.0, False, False, H100) == "flash"  # cuDNN: % 8
    assert sdpa_backend(*qkv(torch.float16, head=320), None, 0.0, False, False, H100) == "efficient"  # > 256
    gqa = qkv(torch.float16, heads=8, kv_heads=2)
    assert sdpa_backend(*gqa, None, 0.0, False, True, A100) == "flash"
    assert sdpa_backend(*gqa, None, 0.0, False, True, H100) == "cudnn"
    assert sdpa_backend(*gqa, None, 0.0, False, False, H100) == "math"  # unequal heads without enable_gqa
    assert sdpa_backend(*qkv(torch.float16), None, 0.1, False, False, H100) == "flash"  # 0.1 is not k/16
    causal_decode = qkv(torch.float16, q_len=1, kv_len=16)
    assert sdpa_backend(*causal_decode, None, 0.0, True, False, A100) == "efficient"  # flash: no causal L != S
    no_flash = GpuTarget((8, 0), cudnn=92400, enabled=("efficient", "math", "cudnn"))
    assert sdpa_backend(*qkv(torch.float16), None, 0.0, False, False, no_flash) == "efficient"
    deterministic = GpuTarget((9, 0), cudnn=92400, deterministic=True)
    assert sdpa_backend(*qkv(torch.float16), None, 0.0, False, False, deterministic) == "flash"
    nothing = GpuTarget((9, 0), cudnn=92400, enabled=())
    with pytest.raises(RuntimeError, match="No available kernel"):
        sdpa_backend(*qkv(), None, 0.0, False, False, nothing)


class HalfAttention(torch.nn.Module):
    """Attention over heads of 20 (not a multiple of 8) in fp16, no mask."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = x.view(1, 8, 4, 20).transpose(1, 2)
        return F.scaled_dot_product_attention(q, q * 0.5, q * 0.25)


def test_flash_attention_is_called_as_the_gpu_kernel_calls_it_and_runs_on_the_cpu() -> None:
    torch.manual_seed(0)
    model, x = HalfAttention().eval(), torch.randn(1, 8, 80, dtype=torch.float16)
    cap = hv.capture(model, (x,), ir="torch_compile", cache=False)
    graph = cap.graphs[0]
    ops = graph.ops
    # the head dim padded to 24 for the kernel and the output cut back to 20
    assert "torch.ops.aten._scaled_dot_product_flash_attention.default" in ops
    assert "torch.ops.aten.constant_pad_nd.default" in ops
    with torch.no_grad():
        got = graph.graph(*graph.example_inputs)
    got = got[0] if isinstance(got, (tuple, list)) else got
    torch.testing.assert_close(got, model(x), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("causal, mask, kv_heads", [(True, None, 4), (False, "float", 4), (False, "bool", 4),
                                                     (False, None, 2)])
def test_the_cpu_kernels_compute_the_attention_of_the_gpu_ops(causal, mask, kv_heads) -> None:
    torch.manual_seed(0)
    q, k, v = qkv(torch.float32, kv_heads=kv_heads, head=32)
    bias = None if mask is None else (torch.randn(2, 1, 16, 16) if mask == "float" else torch.rand(2, 1, 16, 16) > 0.3)
    expected = F.scaled_dot_product_attention(q, k, v, bias, is_causal=causal, enable_gqa=kv_heads != 4)
    got = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, bias, False, 0.0, causal)[0]
    torch.testing.assert_close(got, expected)
    half = [t.half() for t in (q, k, v)]
    if bias is None:
        flash = torch.ops.aten._scaled_dot_product_flash_attention(*half, 0.0, causal)[0]
        torch.testing.assert_close(flash.float(), expected, rtol=1e-2, atol=1e-2)
    cudnn = torch.ops.aten._scaled_dot_product_cudnn_attention(*half, None if bias is None else bias.half()
                                                               if mask == "float" else bias, False, 0.0, causal)[0]
    torch.testing.assert_close(cudnn.float(), expected, rtol=1e-2, atol=1e-2)


def test_kernels_are_registered_once_and_only_where_torch_has_none() -> None:
    assert gpu_kernels.register() == ()  # hierviz registered them on import; nothing is registered twice
    assert torch._C._dispatch_has_kernel_for_dispatch_key("aten::_scaled_dot_product_efficient_attention", "CPU")
    # torch's own CPU attention is untouched: eager SDPA on the CPU still runs its CPU kernel
    q, k, v = qkv()
    traced = make_fx(lambda a, b, c: F.scaled_dot_product_attention(a, b, c))(q, k, v)
    assert [str(n.target) for n in traced.graph.nodes if n.op == "call_function"][0] == \
        "aten._scaled_dot_product_flash_attention_for_cpu.default"


def test_another_threads_traces_keep_the_cpus_choice_while_one_lowers_for_the_gpu() -> None:
    q, k, v = qkv()
    inside, done = threading.Event(), threading.Event()

    def lower() -> None:
        with lowering_for("cuda"):
            inside.set()
            done.wait(30)

    other = threading.Thread(target=lower)
    other.start()
    try:
        assert inside.wait(30)
        with enable_python_dispatcher():
            traced = make_fx(lambda a, b, c: F.scaled_dot_product_attention(a, b, c))(q, k, v)
    finally:
        done.set()
        other.join()
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" in [str(n.target) for n in traced.graph.nodes]
    with enable_python_dispatcher(), lowering_for("cuda"):
        mine = make_fx(lambda a, b, c: F.scaled_dot_product_attention(a, b, c))(q, k, v)
    assert "aten._scaled_dot_product_efficient_attention.default" in [str(n.target) for n in mine.graph.nodes]
