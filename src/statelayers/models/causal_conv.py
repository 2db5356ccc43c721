"""The ``fast`` causal depthwise convolution of Mamba and Mamba-2: the fused numba
kernel (:mod:`statelayers.models.kernels.causal_conv`) on CPU, shifted multiply-adds in
PyTorch elsewhere.

Both mixers convolve each channel with its own short kernel (width ``k = 4``),

.. math::
    y_{c,t} = b_c + \\sum_{j=0}^{k-1} w_{c,j}\\, x_{c,\\,t-k+1+j}\\qquad (x_{c,s} = 0 \\text{ for } s < 0),

which transformers' reference computes with a grouped ``F.conv1d``. On CPU that
convolution's backward pass (``convolution_backward`` with one group per channel) costs
about as much as the rest of the layer's elementwise work. Written as ``k`` shifted
multiply-adds, forward and backward are plain broadcasts; on CPU the compiled kernel
fuses them with the SiLU in one pass. The signature equals transformers'
``causal_conv1d_fn``; the tests check values and gradients against it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers.activations import ACT2FN

from statelayers.models.kernels import runs_cpu_kernels


def causal_conv1d(
    hidden_states: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    activation: str | None = None,
    **_: object,
) -> torch.Tensor:
    """``hidden_states (b, c, l)``, ``weight (c, k)``, ``bias (c,)``; returns ``(b, c, l)``."""
    if runs_cpu_kernels(hidden_states):
        from statelayers.models.kernels.causal_conv import causal_conv1d_fn

        return causal_conv1d_fn(hidden_states, weight, bias, activation)
    return torch_causal_conv1d(hidden_states, weight, bias, activation)


def torch_causal_conv1d(
    hidden_states: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    activation: str | None = None,
) -> torch.Tensor:
    """The convolution as ``k`` shifted multiply-adds in PyTorch operations."""
    length, width = hidden_states.shape[-1], weight.shape[-1]
    x = hidden_states.to(weight.dtype)
    padded = F.pad(x, (width - 1, 0))
    out = weight[:, -1, None] * x
    if bias is not None:
        out = out + bias[:, None]
    for j in range(width - 1):
        out = out + weight[:, j, None] * padded[..., j : j + length]
    if activation is not None:
        out = ACT2FN[activation](out)
    return out.to(hidden_states.dtype)
