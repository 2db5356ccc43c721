"""Mamba-2's gated RMSNorm as one numba pass per row, forward and backward, on CPU.

transformers' ``Mamba2RMSNormGated`` (with ``norm_before_gate=False``, as Mamba-2
trains) gates, then normalises each group of ``G`` channels and scales:

.. math::
    u = x \\odot \\mathrm{silu}(z),\\qquad r = \\Big(\\tfrac1G \\textstyle\\sum_c u_c^2 + \\epsilon\\Big)^{-1/2},
    \\qquad y = w \\odot u\\, r,

about ten tensor operations forward and twenty backward, each a pass over a
``(batch, length, d_inner)`` tensor. Here each row and group is one pass; the backward
pass recomputes ``u`` from ``x`` and ``z`` and keeps only ``r`` from the forward. With
``n = u r``, ``\\dot n = \\dot y \\odot w`` and ``s = \\sigma(z)``:

.. math::
    \\partial w = \\textstyle\\sum_{\\text{rows}} \\dot y \\odot n,\\qquad
    \\dot u = r\\big(\\dot n - n \\tfrac1G \\textstyle\\sum_c \\dot n_c n_c\\big),\\qquad
    \\partial x = \\dot u \\odot \\mathrm{silu}(z),\\qquad
    \\partial z = \\dot u \\odot x \\odot s\\,(1 + z(1 - s)).

The weight's gradient is summed per sequence and then over sequences in a fixed order,
so results are bit-identical at any thread count.
"""

from __future__ import annotations

import math

import torch
import numpy as np
from numba import njit, prange

from statelayers.models.kernels.elementwise import FASTMATH, sigmoid, silu, silu_grad, zero
from statelayers.models.kernels.threads import use_torch_threads


@njit(inline="always", fastmath=FASTMATH)
def _row_forward(x, z, w, eps, inv_size, out):
    """One row's group: ``out = w * u * r``; returns ``r``. Slices of one group each, so
    every loop runs over a whole array and vectorises."""
    squares = zero(eps)
    for c in range(x.shape[0]):
        u = x[c] * silu(z[c])
        out[c] = u
        squares += u * u
    r = 1 / math.sqrt(squares * inv_size + eps)
    for c in range(x.shape[0]):
        out[c] = w[c] * (out[c] * r)
    return r


@njit(inline="always", fastmath=FASTMATH)
def _row_backward(x, z, w, r, inv_size, grad_out, grad_x, grad_z, grad_w, n, sig):
    """One row's group: ``grad_x``, ``grad_z``, and ``grad_w`` added to; ``n`` and ``sig``
    are scratch rows."""
    size = x.shape[0]
    for c in range(size):
        sig[c] = sigmoid(z[c])
    for c in range(size):
        n[c] = x[c] * z[c] * sig[c] * r
    dot = zero(r)
    for c in range(size):
        dot += grad_out[c] * w[c] * n[c]
    for c in range(size):
        grad_w[c] += grad_out[c] * n[c]
    mean_dot = dot * inv_size
    for c in range(size):
        grad_u = r * (grad_out[c] * w[c] - n[c] * mean_dot)
        grad_x[c] = grad_u * z[c] * sig[c]
        grad_z[c] = grad_u * x[c] * silu_grad(z[c])


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _forward(x, z, z_offset, weight, eps, inv_size, out, rstd):
    """The gate is the ``channels`` columns of ``z`` from ``z_offset`` on."""
    batch, length, channels = x.shape
    groups = rstd.shape[2]
    size = channels // groups
    for b in prange(batch):
        for t in range(length):
            for g in range(groups):
                lo, hi = g * size, (g + 1) * size
                rstd[b, t, g] = _row_forward(
                    x[b, t, lo:hi], z[b, t, z_offset + lo : z_offset + hi], weight[lo:hi], eps, inv_size,
                    out[b, t, lo:hi],
                )  # fmt: skip


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _backward(x, z, z_offset, weight, rstd, inv_size, grad_out, grad_x, grad_z, grad_weight):
    """``grad_z`` (the shape of ``z``) written in the gate's columns only."""
    batch, length, channels = x.shape
    groups = rstd.shape[2]
    size = channels // groups
    for b in prange(batch):
        grad_w_b = grad_weight[b]
        grad_w_b[:] = 0
        n, sig = np.empty(size, x.dtype), np.empty(size, x.dtype)
        for t in range(length):
            for g in range(groups):
                lo, hi = g * size, (g + 1) * size
                z_lo, z_hi = z_offset + lo, z_offset + hi
                _row_backward(
                    x[b, t, lo:hi], z[b, t, z_lo:z_hi], weight[lo:hi], rstd[b, t, g], inv_size,
                    grad_out[b, t, lo:hi], grad_x[b, t, lo:hi], grad_z[b, t, z_lo:z_hi], grad_w_b[lo:hi], n, sig,
                )  # fmt: skip


class GatedRMSNorm(torch.autograd.Function):
    """``y = weight * rmsnorm_groups(x * silu(z))`` over contiguous ``(batch, length, channels)`` tensors."""

    @staticmethod
    def forward(ctx, x, z, weight, eps, groups):
        out, rstd = gated_rms_norm_forward(x, z, 0, weight, eps, groups)
        ctx.save_for_backward(x, z, weight, rstd)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, z, weight, rstd = ctx.saved_tensors
        grad_z = torch.empty_like(z)
        grad_x, grad_weight = gated_rms_norm_backward(x, z, 0, weight, rstd, grad_out, grad_z)
        return grad_x, grad_z, grad_weight, None, None


def gated_rms_norm_forward(x, z, z_offset, weight, eps, groups) -> tuple[torch.Tensor, torch.Tensor]:
    """:class:`GatedRMSNorm`'s forward without autograd, the gate being the ``channels``
    columns of ``z`` from ``z_offset`` on; returns the output and each group's ``1/rms``."""
    batch, length, channels = x.shape
    out, rstd = torch.empty_like(x), x.new_empty(batch, length, groups)
    scalar = x.numpy().dtype.type
    use_torch_threads()
    _forward(x.numpy(), z.numpy(), z_offset, weight.numpy(), scalar(eps), scalar(groups / channels),
             out.numpy(), rstd.numpy())  # fmt: skip
    return out, rstd


def gated_rms_norm_backward(
    x, z, z_offset, weight, rstd, grad_out, grad_z
) -> tuple[torch.Tensor, torch.Tensor]:
    """:class:`GatedRMSNorm`'s backward, the gate's gradient written into the columns of
    ``grad_z`` (``z``'s shape) that :func:`gated_rms_norm_forward` read; returns the
    gradients of ``x`` and ``weight``."""
    grad_x, grad_weight = torch.empty_like(x), x.new_empty(x.shape[0], x.shape[2])
    use_torch_threads()
    inv_size = x.numpy().dtype.type(rstd.shape[2] / x.shape[2])
    _backward(x.numpy(), z.numpy(), z_offset, weight.numpy(), rstd.numpy(), inv_size, grad_out.contiguous().numpy(),
              grad_x.numpy(), grad_z.numpy(), grad_weight.numpy())  # fmt: skip
    return grad_x, grad_weight.sum(0)


def gated_rms_norm(
    x: torch.Tensor, z: torch.Tensor, weight: torch.Tensor, eps: float, group_size: int
) -> torch.Tensor:
    """``weight * x * silu(z)`` normalised to unit RMS over each group of ``group_size``
    channels (the last dimension), for CPU tensors of one floating dtype."""
    shape = x.shape
    channels = shape[-1]
    if channels % group_size:
        raise ValueError(f"{channels} channels do not split into groups of {group_size}")
    x3, z3 = (t.reshape(shape[0], -1, channels).contiguous() for t in (x, z))
    out = GatedRMSNorm.apply(x3, z3, weight.contiguous(), eps, channels // group_size)
    return out.view(shape)
