"""Recurrent layers lowered as on a CUDA GPU, on any machine.

- `aten.lstm.input` (nn.LSTM): torch's decomposition (`torch._decomp.decompositions.lstm_impl`,
  in Torch-TensorRT's table) calls `mkldnn_rnn_layer`, a CPU-only op no converter takes, when its
  inputs are on the CPU (`select_one_layer_lstm_function`); on a GPU it unrolls each layer into
  matmuls and pointwise ops (`one_layer_lstm`). `lstm_as_on_gpu` always unrolls.
- `aten.lstm_cell` and `aten.gru_cell` (nn.LSTMCell, nn.GRUCell): their C++ kernels compute the
  gates with plain ops on a CPU, but on a GPU call the fused CUDA kernels
  `_thnn_fused_lstm_cell` / `_thnn_fused_gru_cell` (torch's `RNN.cpp`, `LSTMCell` and `GRUCell`:
  the gate matmuls, then the fused op), which no Torch-TensorRT converter takes.
  `lstm_cell_as_on_gpu` / `gru_cell_as_on_gpu` emit those.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

aten = torch.ops.aten


def lstm_as_on_gpu(input: torch.Tensor, hx: Sequence[torch.Tensor], params: Sequence[torch.Tensor],
                   has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool,
                   batch_first: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """torch's decomposition of `aten.lstm.input` with the layer function a GPU input gets (`one_layer_lstm`)."""
    from torch._decomp import decompositions as torch_decompositions

    gathered = torch_decompositions.gather_params(params, has_biases, hx[0].size(2) != hx[1].size(2))
    out, final = torch_decompositions._rnn_helper(
        input, list(zip(hx[0], hx[1])), gathered, has_biases, num_layers, dropout, train, bidirectional,
        batch_first, torch_decompositions.one_layer_lstm)
    hidden, cell = list(zip(*final))
    return out, torch.stack(hidden, 0), torch.stack(cell, 0)


def lstm_cell_as_on_gpu(input: torch.Tensor, hx: Sequence[torch.Tensor], w_ih: torch.Tensor, w_hh: torch.Tensor,
                        b_ih: torch.Tensor | None = None, b_hh: torch.Tensor | None = None
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """`aten.lstm_cell` as its kernel runs it on a GPU: the gate matmuls, then `_thnn_fused_lstm_cell`."""
    out: Any = aten._thnn_fused_lstm_cell.default(torch.matmul(input, w_ih.t()), torch.matmul(hx[0], w_hh.t()),
                                                 hx[1], b_ih, b_hh)
    return out[0], out[1]


def gru_cell_as_on_gpu(input: torch.Tensor, hx: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor,
                       b_ih: torch.Tensor | None = None, b_hh: torch.Tensor | None = None) -> torch.Tensor:
    """`aten.gru_cell` as its kernel runs it on a GPU: the gate matmuls, then `_thnn_fused_gru_cell`."""
    out: Any = aten._thnn_fused_gru_cell.default(torch.matmul(input, w_ih.t()), torch.matmul(hx, w_hh.t()),
                                                hx, b_ih, b_hh)
    return out[0]


__all__ = ["lstm_as_on_gpu", "lstm_cell_as_on_gpu", "gru_cell_as_on_gpu"]
