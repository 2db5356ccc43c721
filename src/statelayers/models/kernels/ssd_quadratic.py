"""Mamba-2's state-space recurrence (SSD) over short sequences in its quadratic,
attention-like form: batched matrix products in PyTorch around one compiled kernel
(:class:`DecayedScores`, the decays times ``C B^\\top``); autograd gives the backward pass.

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
up to :data:`~statelayers.models.mamba_scan.QUADRATIC_MAX_LENGTH` positions and the
step-by-step kernel beyond; ``chunk_size`` therefore changes nothing here either.

The decays ``M``, and ``M \\circ (C B^\\top)`` with them, are one numba pass per sequence
and head (:class:`DecayedScores`), forward and backward. In PyTorch operations the decays
alone take a float64 ``(batch, heads, L, L)`` tensor of differences and four passes over
it, a quarter of a training step at 32 heads. Each exponent
``\\sum_{s<r\\le t} \\Delta_r A_h`` is a difference of float64 prefix sums, off by about
``10^{-16}`` of the running total, far below float32's resolution (in float32,
differences of a cumulative sum are off by ``10^{-4}`` once it reaches ``-2000``), and is
rounded once to float32. Entries above the diagonal are ``0`` and take no gradient, so
nothing can overflow.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from numba import njit, prange

from statelayers.models.kernels.elementwise import FASTMATH, exp
from statelayers.models.kernels.threads import use_torch_threads

UNDERFLOW = -80.0
"""Exponents below this give ``0``: ``e^{-80} < 2 \\cdot 10^{-35}`` is nothing next to
float32's resolution, and results in float32's subnormal range (below ``e^{-87.3}``) are
many times slower in every operation that touches them."""


@njit(inline="always", fastmath=FASTMATH)
def _scores_row(prefix, t, underflow, scores_t, decay_t, weights_t):
    """Row ``t`` of the decays and the weights from the float64 prefix sums of ``a``."""
    end = prefix[t]
    for s in range(t + 1):
        exponent = decay_t.dtype.type(end - prefix[s])  # sum(a[s+1 : t+1]), rounded once
        decay_t[s] = exp(exponent) if exponent >= underflow else 0
        weights_t[s] = decay_t[s] * scores_t[s]
    for s in range(t + 1, decay_t.shape[0]):
        decay_t[s] = 0
        weights_t[s] = 0


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _decayed_scores_forward(a, scores, underflow, decay, weights):
    batch, heads, length = a.shape
    per_group = heads // scores.shape[1]
    for b in prange(batch):
        prefix = np.empty(length)  # float64
        for h in range(heads):
            a_h, scores_h = a[b, h], scores[b, h // per_group]
            total = 0.0
            for t in range(length):
                total += a_h[t]
                prefix[t] = total
            for t in range(length):
                _scores_row(prefix, t, underflow, scores_h[t], decay[b, h, t], weights[b, h, t])


@njit(inline="always", fastmath=FASTMATH)
def _gradient_row(grad_t, decay_t, scores_t, grad_scores_t, below, t):
    """Row ``t``'s share of the gradients: ``grad_scores_t`` and ``below`` added to (``below[s]``
    sums ``G[t', s]`` over the rows ``t' >= t`` done so far, in float64); returns ``\\partial a_t``."""
    for s in range(t + 1):
        product = grad_t[s] * decay_t[s]
        grad_scores_t[s] += product
        below[s] += product * scores_t[s]
    total = 0.0
    for s in range(t):
        total += below[s]
    return total


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _decayed_scores_backward(grad_weights, decay, scores, grad_a, grad_scores):
    batch, heads, length = grad_a.shape
    per_group = heads // scores.shape[1]
    for b in prange(batch):
        grad_scores[b] = 0.0
        below = np.empty(length)  # float64
        for h in range(heads):
            g, scores_h, grad_scores_h = (
                h // per_group,
                scores[b, h // per_group],
                grad_scores[b, h // per_group],
            )
            below[:] = 0.0
            for t in range(length - 1, -1, -1):
                grad_a[b, h, t] = _gradient_row(
                    grad_weights[b, h, t], decay[b, h, t], scores_h[t], grad_scores_h[t], below, t
                )


class DecayedScores(torch.autograd.Function):
    """``weights[b, h, t, s] = M[b, h, t, s] * scores[b, g(h), t, s]`` with the decays
    ``M[..., t, s] = exp(sum(a[..., s+1 : t+1]))`` for ``s <= t`` and ``0`` above the diagonal.

    One compiled pass per sequence and head: each exponent is a difference of float64
    prefix sums of ``a``, rounded once to ``a``'s dtype and exponentiated; an exponent
    below :data:`UNDERFLOW` gives ``0``. The backward pass, with ``\\dot W`` the incoming gradient:
    ``\\partial\\,\\mathrm{scores}_{g} = \\sum_{h \\in g} \\dot W_h \\odot M_h``, and with
    ``G = \\dot W \\odot W`` (zero above the diagonal and where ``M`` underflowed)
    ``\\partial a_r = \\sum_{t \\ge r} \\sum_{s < r} G_{ts}``, the pairs whose segment holds
    ``r``: the rows are taken from the last, each added to float64 column sums over the
    rows ``t \\ge r`` so far, whose entries ``s < r`` sum to ``\\partial a_r``.
    """

    @staticmethod
    def forward(ctx, a, scores):
        """``a (batch, heads, L)``, ``scores (batch, groups, L, L)``; returns ``weights (batch, heads, L, L)``."""
        a, scores = a.detach().contiguous(), scores.detach().contiguous()
        batch, heads, length = a.shape
        decay = a.new_empty(batch, heads, length, length)
        weights = torch.empty_like(decay)
        use_torch_threads()
        _decayed_scores_forward(
            a.numpy(), scores.numpy(), a.numpy().dtype.type(UNDERFLOW), decay.numpy(), weights.numpy()
        )
        ctx.save_for_backward(decay, scores)
        return weights

    @staticmethod
    def backward(ctx, grad_weights):
        decay, scores = ctx.saved_tensors
        grad_a = decay.new_empty(decay.shape[:-1])
        grad_scores = torch.empty_like(scores)
        use_torch_threads()
        _decayed_scores_backward(
            grad_weights.contiguous().numpy(),
            decay.numpy(),
            scores.numpy(),
            grad_a.numpy(),
            grad_scores.numpy(),
        )
        return grad_a, grad_scores


def decays_to_end(a: torch.Tensor) -> torch.Tensor:
    """``exp(sum(a[..., s+1:]))`` for every ``s``: the last row of the decays, which carries
    each input to the final state; suffix sums in float64, differentiable by autograd."""
    suffix = a.double().flip(-1).cumsum(-1).flip(-1)  # sum(a[..., s:])
    exponent = torch.cat([suffix[..., 1:], suffix.new_zeros(*a.shape[:-1], 1)], -1).to(a.dtype)
    return exponent.masked_fill(exponent < UNDERFLOW, -math.inf).exp()


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
    B_g, C_g = B.transpose(1, 2).contiguous(), C.transpose(1, 2).contiguous()  # (batch, groups, length, n)
    scores = torch.matmul(C_g, B_g.transpose(-1, -2))  # (batch, groups, t, s)
    log_decay = dt * A[:, None]  # (batch, heads, length)
    weights = DecayedScores.apply(log_decay, scores)  # (batch, heads, t, s)
    drive = (x * dt.transpose(1, 2).unsqueeze(-1)).transpose(1, 2)  # (batch, heads, length, p)
    drive = drive.reshape(batch * heads, length, head_dim)
    out = torch.bmm(weights.view(batch * heads, length, length), drive)
    out = out.view(batch, heads, length, head_dim).transpose(1, 2)
    # Adding into the fresh, contiguous skip term gives a contiguous result in one pass.
    out = out.contiguous() if D is None else (x * D[:, None]).add_(out)
    if not return_final_states:
        return out
    to_end = decays_to_end(log_decay).reshape(batch, groups, per_group * length, 1)  # M[L-1, s]
    # reshape, not view: with one sequence, ``drive`` is a strided view of ``x``.
    weighted = (drive.reshape(batch, groups, per_group * length, head_dim) * to_end).reshape(
        batch * groups, per_group, length, head_dim
    )
    last = torch.matmul(weighted.transpose(-1, -2), B_g.view(batch * groups, 1, length, n_state))
    return out, last.view(batch, heads, head_dim, n_state)
