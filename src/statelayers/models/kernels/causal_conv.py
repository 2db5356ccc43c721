"""The depthwise causal convolution of Mamba and Mamba-2, with its SiLU, as one numba
kernel, forward and backward, on CPU.

The interface and semantics are causal-conv1d's ``causal_conv1d_fn``: each channel
``c`` is convolved with its own kernel of width ``k``,

.. math::
    y_{c,t} = \\sigma\\Big(b_c + \\sum_{j=0}^{k-1} w_{c,j}\\, x_{c,\\,t-k+1+j}\\Big)
    \\qquad (x_{c,s} = 0 \\text{ for } s < 0),

with ``x: (batch, channels, length)``, ``w: (channels, k)`` and ``sigma`` SiLU or the
identity. transformers' mixers hand over ``x`` as a transposed view of their input
projection, time before channels in memory, and read ``y`` back in that order, so the
kernel works in that layout: it vectorises over channels and returns ``y`` as a
``(batch, channels, length)`` view of time-major memory, which the mixers' next
``transpose`` turns back into a contiguous tensor without a copy.

Backward, with :math:`\\dot p = \\dot y\\, \\sigma'(p)` the gradient of the
pre-activation (recomputed, not stored):

.. math::
    \\partial x_{c,s} = \\sum_j w_{c,j}\\, \\dot p_{c,\\,s+k-1-j},\\qquad
    \\partial w_{c,j} = \\sum_{t} \\dot p_{c,t}\\, x_{c,\\,t-k+1+j}.

Weight and bias gradients are written per sequence and summed afterwards in a fixed
order (bit-identical at any thread count).
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from numba import njit, prange

from statelayers.models.kernels.elementwise import FASTMATH, silu, silu_grad
from statelayers.models.kernels.threads import use_torch_threads

ACTIVATIONS = (None, "silu", "swish")


@njit(inline="always", fastmath=FASTMATH)
def _pre_activation(x, offset, weight, bias, b, t, pre):
    """``pre[c] = bias[c] + sum_j weight[c, j] x[b, t - k + 1 + j, offset + c]`` for one step."""
    width, channels = weight.shape
    pre[:] = bias
    for j in range(width):
        s = t - width + 1 + j
        if s >= 0:
            x_s, w_j = x[b, s, offset : offset + channels], weight[j]
            for c in range(channels):
                pre[c] += w_j[c] * x_s[c]


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _forward(x, offset, weight, bias, gated, out):
    """``out (batch, length, channels)`` from the ``channels`` columns of ``x`` from ``offset`` on."""
    batch, length, channels = out.shape
    for b in prange(batch):
        pre = np.empty(channels, x.dtype)
        for t in range(length):
            _pre_activation(x, offset, weight, bias, b, t, pre)
            out_t = out[b, t]
            if gated:
                for c in range(channels):
                    out_t[c] = silu(pre[c])
            else:
                out_t[:] = pre


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _backward(x, offset, weight, bias, gated, grad_out, grad_x, grad_weight, grad_bias, scratch):
    """``grad_x`` (the shape of ``x``) written in the columns :func:`_forward` read, and
    nowhere else."""
    batch, length, channels = grad_out.shape
    width = weight.shape[0]
    end = offset + channels
    for b in prange(batch):
        pre, grad_pre = np.empty(channels, x.dtype), scratch[numba.get_thread_id()]  # per-thread buffer
        for t in range(length):
            g_t, gp_t = grad_out[b, t], grad_pre[t]
            if gated:
                _pre_activation(x, offset, weight, bias, b, t, pre)
                for c in range(channels):
                    gp_t[c] = g_t[c] * silu_grad(pre[c])
            else:
                gp_t[:] = g_t
            grad_x[b, t, offset:end] = 0
        grad_w_b, grad_bias_b = grad_weight[b], grad_bias[b]
        grad_w_b[:] = 0
        grad_bias_b[:] = 0
        for t in range(length):
            gp_t = grad_pre[t]
            for c in range(channels):
                grad_bias_b[c] += gp_t[c]
            for j in range(width):
                s = t - width + 1 + j
                if s >= 0:
                    x_s, gx_s = x[b, s, offset:end], grad_x[b, s, offset:end]
                    w_j, gw_j = weight[j], grad_w_b[j]
                    for c in range(channels):
                        gx_s[c] += w_j[c] * gp_t[c]
                        gw_j[c] += gp_t[c] * x_s[c]


class FusedCausalConv(torch.autograd.Function):
    """Autograd for the kernel; tensors in the kernel's layout: ``x (batch, length, channels)``,
    ``weight (k, channels)``."""

    @staticmethod
    def forward(ctx, x, weight, bias, gated):
        ctx.save_for_backward(x, weight, bias)
        ctx.gated = gated
        return causal_conv_forward(x, 0, weight, bias, gated)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, bias = ctx.saved_tensors
        grad_x = torch.empty_like(x)
        return grad_x, *causal_conv_backward(x, 0, weight, bias, ctx.gated, grad_out, grad_x), None


def causal_conv_forward(x, offset, weight, bias, gated) -> torch.Tensor:
    """:class:`FusedCausalConv`'s forward without autograd on the ``channels`` columns of
    ``x (batch, L, width)`` from ``offset`` on, ``weight (k, channels)``; returns ``(batch,
    L, channels)``."""
    out = x.new_empty(x.shape[0], x.shape[1], weight.shape[1])
    use_torch_threads()
    _forward(x.numpy(), offset, weight.numpy(), bias.numpy(), gated, out.numpy())
    return out


def causal_conv_backward(
    x, offset, weight, bias, gated, grad_out, grad_x
) -> tuple[torch.Tensor, torch.Tensor]:
    """:class:`FusedCausalConv`'s backward, the gradient of ``x`` written into the columns
    of ``grad_x`` (``x``'s shape) that :func:`causal_conv_forward` read; returns the
    gradients of ``weight`` and ``bias``."""
    batch, length, channels = grad_out.shape
    grad_weight, grad_bias = x.new_empty(batch, *weight.shape), x.new_empty(batch, channels)
    threads = use_torch_threads()
    _backward(x.numpy(), offset, weight.numpy(), bias.numpy(), gated, grad_out.contiguous().numpy(),
              grad_x.numpy(), grad_weight.numpy(), grad_bias.numpy(),
              x.new_empty(threads, length, channels).numpy())  # fmt: skip
    return grad_weight.sum(0), grad_bias.sum(0)


def causal_conv1d_fn(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    activation: str | None = None,
) -> torch.Tensor:
    """causal-conv1d's ``causal_conv1d_fn`` on CPU tensors: ``x (batch, channels, length)``,
    ``weight (channels, k)``, ``bias (channels,)``; returns ``(batch, channels, length)``."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation {activation!r} is not one of {ACTIVATIONS}")
    time_major = x.transpose(1, 2).to(weight.dtype).contiguous()
    bias = weight.new_zeros(weight.shape[0]) if bias is None else bias
    # Autograd sees the layout changes as ordinary ops; the kernel sees contiguous arrays.
    out = FusedCausalConv.apply(
        time_major, weight.t().contiguous(), bias.contiguous(), activation is not None
    )
    return out.transpose(1, 2).to(x.dtype)
