"""hv.capture / hv.partition(target_device=...): the graph Torch-TensorRT lowers for a CUDA GPU (the default),
on this machine's CPU: attention as the GPU's kernel decomposes it, recurrent layers as a GPU runs them, no op
that exists only for the CPU; the lowered graphs still run here and give the model's outputs; the capture
caches tell the targets apart; the report says which device the graph was traced for; blockers never offer a
CPU-only op."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import hierviz as hv
from hierviz.capturing.capture_key import capture_key
from hierviz.capturing.target_device import target_key

CPU_ONLY = ("_for_cpu", "mkldnn")
GPU_ATTENTION = ("torch.ops.aten._scaled_dot_product_efficient_attention.default",
                 "torch.ops.aten._scaled_dot_product_flash_attention.default",
                 "torch.ops.aten._scaled_dot_product_cudnn_attention.default")


def rotary_frequencies(dim: int, length: int) -> torch.Tensor:
    freqs = 1.0 / (10000.0 ** (torch.arange(0, dim, 2).float() / dim))
    angles = torch.outer(torch.arange(length).float(), freqs)
    return torch.polar(torch.ones_like(angles), angles)


class ComplexRotaryAttention(nn.Module):
    """A Meta-style Llama attention block: rotary embeddings through view_as_complex, causal SDPA."""

    def __init__(self, dim: int = 32, heads: int = 2, length: int = 8) -> None:
        super().__init__()
        self.heads, self.head = heads, dim // heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(dim, dim, bias=False) for _ in range(4))
        self.register_buffer("freqs", rotary_frequencies(self.head, length), persistent=False)

    def rotate(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(z * self.freqs.view(1, z.shape[1], 1, z.shape[-1])).flatten(3).type_as(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = (w(x).view(b, s, self.heads, self.head) for w in (self.wq, self.wk, self.wv))
        q, k = self.rotate(q), self.rotate(k)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(b, s, -1))


def ops_of(gm: torch.fx.GraphModule) -> list[str]:
    return [f"torch.ops.{n.target}" for n in gm.graph.nodes if n.op == "call_function"]


def attention_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and "dot_product" in str(n.target)]


def first_output(out: object) -> torch.Tensor:
    return out[0] if isinstance(out, (tuple, list)) else out  # type: ignore[return-value]


@pytest.fixture(scope="module")
def rotary() -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    return ComplexRotaryAttention().eval(), (torch.randn(1, 8, 32),)


def test_complex_rotary_attention_is_the_gpus_on_the_dynamo_path_and_runs_here(rotary) -> None:
    model, x = rotary
    part = hv.partition(model, x)
    ops = ops_of(part.graph)
    assert not [op for op in ops if any(mark in op for mark in CPU_ONLY)]
    # Torch-TensorRT's complex-number pass traces the graph again: there the GPU's kernel picks its attention
    (node,) = attention_nodes(part.graph)
    assert f"torch.ops.{node.target}" in GPU_ATTENTION
    assert part.backend_of(node.name) == "tensorrt"
    assert part.stats["subgraphs_by_backend"] == {"tensorrt": 1, "inductor": 0, "torch": 0}
    with torch.no_grad():
        torch.testing.assert_close(first_output(part.graph(*x)), model(*x))


def test_complex_rotary_attention_is_the_gpus_on_the_torch_compile_path(rotary) -> None:
    model, x = rotary
    part = hv.partition(model, x, ir="torch_compile")
    (graph,) = part.graphs
    (node,) = attention_nodes(graph.graph)
    assert f"torch.ops.{node.target}" in GPU_ATTENTION
    assert graph.backend_of(node.name) == "tensorrt"
    assert not [op for op in ops_of(graph.graph) if any(mark in op for mark in CPU_ONLY)]


def test_the_cpu_target_gives_the_cpus_lowering(rotary) -> None:
    model, x = rotary
    cpu = hv.capture(model, x, target_device="cpu")
    (node,) = attention_nodes(cpu)
    assert str(node.target) == "aten._scaled_dot_product_flash_attention_for_cpu.default"
    with torch.no_grad():
        torch.testing.assert_close(first_output(cpu(*x)), model(*x))
    part = hv.partition(model, x, target_device="cpu", ir="torch_compile")
    assert part.target_device == "cpu"
    assert any("_for_cpu" in op for op in part.graphs[0].ops().op)


def test_the_report_says_which_device_the_graph_was_traced_for(rotary) -> None:
    model, x = rotary
    gpu = hv.partition(model, x)
    assert gpu.target_device == "cuda"
    assert "Traced for cuda: the graph Torch-TensorRT lowers on a CUDA GPU" in gpu.report()
    graphs = hv.partition(model, x, ir="torch_compile")
    assert graphs.target_device == "cuda"
    text = graphs.report()
    assert text.count("Traced for cuda") == 1  # said once for all the graphs
    cpu = hv.partition(model, x, target_device="cpu")
    assert "Traced for cpu" in cpu.report() and "Traced for cuda" not in cpu.report()


def test_a_saved_partition_says_what_it_was_traced_for(rotary, tmp_path) -> None:
    model, x = rotary
    for ir, target in (("dynamo", "cpu"), ("torch_compile", "cuda")):
        part = hv.partition(model, x, ir=ir, target_device=target)
        path = part.save(tmp_path / f"{ir}.json")
        loaded = hv.load_partition(path)
        assert loaded.target_device == target
        assert loaded.report().count(f"Traced for {target}") == 1


def test_the_capture_caches_tell_the_targets_apart(rotary, tmp_path, monkeypatch) -> None:
    model, x = rotary
    assert capture_key(model, ("x",), None, target_key("cuda")) != capture_key(model, ("x",), None, target_key("cpu"))
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    kept = ComplexRotaryAttention().eval()
    kept.load_state_dict(model.state_dict())
    gpu = hv.capture(kept, x)
    cpu = hv.capture(kept, x, target_device="cpu")
    assert gpu is not cpu and hv.capture(kept, x) is gpu  # in memory, one capture per target
    fresh = ComplexRotaryAttention().eval()  # another instance of the same model: the disk cache answers
    fresh.load_state_dict(model.state_dict())
    from_disk = hv.capture(fresh, x, target_device="cpu")
    assert any("disk cache" in note for note in hv.partition(from_disk).notes)
    assert [str(n.target) for n in attention_nodes(from_disk)] == [str(n.target) for n in attention_nodes(cpu)]
    assert hv.partition(from_disk).target_device == "cpu"


def test_a_bad_target_device_says_what_to_pass(rotary) -> None:
    model, x = rotary
    for call in (lambda: hv.capture(model, x, target_device="gpu"),
                 lambda: hv.partition(model, x, target_device="cuda:0")):
        with pytest.raises(hv.ConfigError, match="target_device='cuda' or target_device='cpu'"):
            call()


@pytest.mark.slow
@pytest.mark.parametrize("ir", ["dynamo", "torch_compile"])
def test_the_zoo_llama_runs_its_attention_in_tensorrt(ir) -> None:
    model, x = hv.zoo.load("llama")
    part = hv.partition(model, x, ir=ir)
    graphs = part.graphs if ir == "torch_compile" else [part]
    nodes = [(p, n) for p in graphs for n in attention_nodes(p.graph)]
    assert len(nodes) == 2  # one attention per layer
    assert all(p.backend_of(n.name) == "tensorrt" for p, n in nodes)
    assert part.stats["subgraphs_by_backend"] == {"tensorrt": 1, "inductor": 0, "torch": 0}
    for p in graphs:
        assert not [op for op in ops_of(p.graph) if any(mark in op for mark in CPU_ONLY)]
    if ir == "torch_compile":
        (graph,) = part.capture.graphs
        with torch.no_grad():
            torch.testing.assert_close(first_output(graph.graph(*graph.example_inputs)), model(*x))


@pytest.mark.slow
def test_blockers_never_offer_an_op_that_exists_only_for_the_cpu() -> None:
    model, x = hv.zoo.load("llama")
    cpu = hv.partition(model, x, ir="torch_compile", target_device="cpu")
    table = cpu.blockers()
    row = table[table.op.str.contains("_for_cpu")].iloc[0]
    assert "_for_cpu" not in row.change and "target_device='cuda'" in row.change
    assert not [line for line in cpu.graphs[0].report().splitlines() if "_for_cpu" in line and "add " in line]
    gpu = hv.partition(model, x, ir="torch_compile")
    assert not any(any(mark in str(v) for mark in CPU_ONLY) for v in gpu.blockers().op)


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm, self.lstm_cell, self.gru_cell = nn.LSTM(8, 16, batch_first=True), nn.LSTMCell(8, 16), \
            nn.GRUCell(8, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lstm(x)[0][:, -1]
        return h + self.lstm_cell(x[:, 0])[0] + self.gru_cell(x[:, 1])


def test_recurrent_cells_are_the_gpus_fused_cells_and_still_run_here() -> None:
    torch.manual_seed(0)
    model, x = Recurrent().eval(), (torch.randn(2, 5, 8),)
    gpu = hv.partition(model, x)
    ops = set(ops_of(gpu.graph))
    assert {"torch.ops.aten._thnn_fused_lstm_cell.default", "torch.ops.aten._thnn_fused_gru_cell.default"} <= ops
    fused = [n.name for n in gpu.graph.graph.nodes if "_thnn_fused" in str(n.target)]
    assert {gpu.backend_of(name) for name in fused} == {"torch"}  # no Torch-TensorRT converter takes them
    with torch.no_grad():
        torch.testing.assert_close(first_output(gpu.graph(*x)), model(*x))
    cpu = hv.capture(model, x, target_device="cpu")
    assert not [op for op in ops_of(cpu) if "_thnn_fused" in op]


def test_lstm_unrolls_as_on_a_gpu_where_the_cpu_calls_mkldnn() -> None:
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.LSTM(8, 16, batch_first=True)).eval(), (torch.randn(2, 5, 8),)

    class Last(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return self.inner(t)[0]

    wrapped = Last().eval()
    with torch._dynamo.config.patch(allow_rnn=True):  # dynamo traces nn.LSTM only when asked to
        gpu = hv.capture(wrapped, x, ir="torch_compile")
        cpu = hv.capture(wrapped, x, ir="torch_compile", target_device="cpu")
    assert any("mkldnn_rnn_layer" in op for op in cpu.graphs[0].ops)
    assert not any("mkldnn" in op for op in gpu.graphs[0].ops)
    graph = gpu.graphs[0]
    with torch.no_grad():
        torch.testing.assert_close(first_output(graph.graph(*graph.example_inputs)), wrapped(*x))


class WeightAttention(nn.Module):
    """Attention whose query, key and value are weights: Torch-TensorRT's constant folding leaves an op that may
    draw random numbers (SDPA's dropout: torch's nondeterministic_seeded tag) unfolded, on any device."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.q, self.k, self.v = (nn.Parameter(torch.randn(1, 2, 4, 8, generator=gen)) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(self.q, self.k, self.v) + x


def test_an_attention_of_constants_is_left_unfolded_as_torch_tensorrt_leaves_it() -> None:
    model, x = WeightAttention().eval(), (torch.randn(1, 2, 4, 8),)
    for target in ("cuda", "cpu"):
        gm = hv.capture(model, x, target_device=target, cache=False)
        (node,) = attention_nodes(gm)
        assert str(node.target) == "aten.scaled_dot_product_attention.default"  # kept, as torch.export keeps it
        assert all(arg.op == "get_attr" for arg in node.args[:3])
        assert not any("constant_fold" in str(key) for key in node.meta)  # nothing of hierviz's left on it
        with torch.no_grad():
            torch.testing.assert_close(gm(*x)[0] if isinstance(gm(*x), (tuple, list)) else gm(*x), model(*x))
