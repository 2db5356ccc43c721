"""Mamba-2's state-space recurrence (SSD) over short sequences in its quadratic,
attention-like form, in PyTorch operations; autograd gives the backward pass.

Unrolling the recurrence of :mod:`statelayers.models.kernels.ssd`,
``S_t = e^{\\Delta_t A_h} S_{t-1} + \\Delta_t B_t x_t^\\top`` from ``S_{-1} = 0``, gives
for each sequence and head ``h`` (of group ``g(h)``)

.. math::
    y = \\big(M \\circ (C B^\\top)\\big)(\\Delta \\odot x) + D_h x,\\qquad
    M_{ts} = \\begin{cases} \\exp\\big(\\sum_{s<r\\le t} \\Delta_r A_h\\big) & s \\le t\\\\
    0 & s > t,\\end{cases}\\qquad
    S_{L-1} = \\textstyle\\sum_s M_{L-1,s}\\, \\Delta_s\\, x_s B_s^\\top,

with ``\\Delta = \\mathrm{clamp}(\\mathrm{softplus}(\\delta + b_h), \\Delta_{lo}, \\Delta_{hi})``.
That is SSD with the whole sequence as one chunk. For the study's sequences
(length 40, state 64, head size 32) it is a few small batched matrix products, which
run at BLAS speed forward and backward, where the step-by-step kernel touches an
``(n, p)`` state per step and keeps every state for its backward pass. Its cost grows
with the square of the length, so :func:`statelayers.models.mamba_scan.chunk_scan` uses it
up to :data:`MAX_LENGTH` and the step-by-step kernel beyond; ``chunk_size`` therefore
changes nothing here either.

The exponents ``\\sum_{s<r\\le t} \\Delta_r A_h`` are differences of one cumulative sum
taken in float64 (:class:`SegmentExp`): in float32 its rounding grows with the running
sum (``10^{-4}`` in the exponent once it reaches ``-2000``), in float64 it stays below
float32's own. Entries above the diagonal are ``-\\infty`` before the exponential, so
neither they nor their gradients can overflow.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

MAX_LENGTH = 64
"""The longest sequence this form is used for; the quadratic terms outgrow the step-by-step kernel beyond."""


UNDERFLOW = -80.0
"""Exponents below this become ``-inf``: ``e^{-80} < 2 \\cdot 10^{-35}`` is nothing next to
float32's resolution, and results in float32's subnormal range (below ``e^{-87.3}``) are
many times slower in every operation that touches them."""


class SegmentExp(torch.autograd.Function):
    """``out[..., t, s] = exp(sum(a[..., s+1 : t+1]))`` for ``s <= t``, ``0`` above the diagonal.

    The sums are differences of one cumulative sum taken in float64, whose rounding
    (relative ``1e-16`` of the running sum) stays far below float32's; above the diagonal
    the exponent is ``-inf`` before the exponential, so nothing overflows, and so is any
    exponent below :data:`UNDERFLOW`. The backward pass is written out: with
    ``G = \\dot{out} \\odot out`` (zero above the diagonal),
    ``\\partial c_t = \\sum_s G_{ts} - \\sum_{t'} G_{t't}`` for the cumulative sum ``c`` and
    ``\\partial a_r = \\sum_{t \\ge r} \\partial c_t``. Every ``G_{ts}`` outside the pairs
    whose segment holds ``r`` enters that sum twice, with opposite signs; so the sums of
    ``G`` are accumulated in float64, where the cancellation costs nothing.
    """

    @staticmethod
    def forward(ctx, a):
        length = a.shape[-1]
        total = a.double().cumsum(-1)
        above = torch.ones(length, length, dtype=torch.bool, device=a.device).triu(1)
        exponent = total.unsqueeze(-1) - total.unsqueeze(-2)
        exponent.masked_fill_(above | (exponent < UNDERFLOW), -math.inf)
        out = exponent.to(a.dtype).exp_()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (out,) = ctx.saved_tensors
        grad = grad_out * out
        grad_total = grad.sum(-1, dtype=torch.float64) - grad.sum(-2, dtype=torch.float64)
        return grad_total.flip(-1).cumsum(-1).flip(-1).to(grad_out.dtype)


def mamba_chunk_scan_combined(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    chunk_size: int,
    D: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    dt_softplus: bool = False,
    dt_limit: tuple[float, float] = (0.0, math.inf),
    return_final_states: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """The interface of :func:`statelayers.models.kernels.ssd.mamba_chunk_scan_combined`
    (``x: (batch, length, heads, p)``, ``dt: (batch, length, heads)``, ``B, C: (batch,
    length, groups, n)``), from a zero initial state, any length; ``chunk_size`` is
    accepted for the signature and changes nothing. Returns ``out (batch, length, heads,
    p)`` or ``(out, final_state (batch, heads, p, n))``."""
    batch, length, heads, head_dim = x.shape
    groups, n_state = B.shape[2], B.shape[3]
    if groups == 0 or heads % groups:
        raise ValueError(f"{heads} heads do not split into {groups} groups")
    per_group = heads // groups
    if dt_bias is not None:
        dt = dt + dt_bias
    if dt_softplus:
        dt = F.softplus(dt)
    dt = dt.clamp(dt_limit[0], dt_limit[1]).transpose(1, 2).contiguous()  # (batch, heads, length)
    decay = SegmentExp.apply(dt * A[:, None])  # (batch, heads, t, s)
    B_g, C_g = B.transpose(1, 2).contiguous(), C.transpose(1, 2).contiguous()  # (batch, groups, length, n)
    scores = torch.matmul(C_g, B_g.transpose(-1, -2))  # (batch, groups, t, s)
    weights = decay.view(batch, groups, per_group, length, length) * scores.unsqueeze(2)
    drive = (x * dt.transpose(1, 2).unsqueeze(-1)).transpose(1, 2)  # (batch, heads, length, p)
    drive = drive.reshape(batch * heads, length, head_dim)
    out = torch.bmm(weights.view(batch * heads, length, length), drive)
    out = out.view(batch, heads, length, head_dim).transpose(1, 2)
    # Adding into the fresh, contiguous skip term gives a contiguous result in one pass.
    out = out.contiguous() if D is None else (x * D[:, None]).add_(out)
    if not return_final_states:
        return out
    to_end = decay[..., -1, :].reshape(batch, groups, per_group * length, 1)  # M[L-1, s]
    # reshape, not view: with one sequence, ``drive`` is a strided view of ``x``.
    weighted = (drive.reshape(batch, groups, per_group * length, head_dim) * to_end).reshape(
        batch * groups, per_group, length, head_dim
    )
    last = torch.matmul(weighted.transpose(-1, -2), B_g.view(batch * groups, 1, length, n_state))
    return out, last.view(batch, heads, head_dim, n_state)
