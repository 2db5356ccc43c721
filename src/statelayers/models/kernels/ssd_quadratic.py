"""Mamba-2's state-space recurrence (SSD) over short sequences in its quadratic,
attention-like form, forward and backward in one compiled pass each
(:class:`QuadraticSSD`); only the scores ``C B^\\top`` are a PyTorch product.

Unrolling the recurrence of :mod:`statelayers.models.kernels.ssd`,
``S_t = e^{\\Delta_t A_h} S_{t-1} + \\Delta_t B_t x_t^\\top`` from ``S_{-1} = 0``, gives
for each sequence and head ``h`` (of group ``g(h)``)

.. math::
    y_t = D_h x_t + \\sum_{s \\le t} W_{ts}\\, x_s,\\qquad
    W_{ts} = M_{ts}\\, (C B^\\top)_{ts}\\, \\Delta_s,\\qquad
    M_{ts} = \\exp\\big(\\textstyle\\sum_{s<r\\le t} \\Delta_r A_h\\big),\\qquad
    S_{L-1} = \\textstyle\\sum_s M_{L-1,s}\\, \\Delta_s\\, x_s B_s^\\top,

with ``\\Delta = \\mathrm{clamp}(\\mathrm{softplus}(\\delta + b_h), \\Delta_{lo}, \\Delta_{hi})``.
That is SSD with the whole sequence as one chunk. For the study's sequences (length 40,
state 64, heads of 16 or 32) each sequence and head is 820 pairs ``(t, s)`` of
``head_dim``-long vector operations, which one pass does in cache, reading ``x`` and
``\\Delta`` where transformers' layout puts them. The same sums as batched matrix
products in PyTorch (``(batch x heads)`` products of ``40 x 40`` by ``40 x 16``, a
transpose and a copy of ``x`` around them, elementwise passes for ``\\Delta x`` and
``D x``) took 1.6-1.9 times as long in a training step (benchmarks/README.md). The cost
grows with the square of the length, so :func:`statelayers.models.mamba_scan.chunk_scan`
uses this form up to :data:`~statelayers.models.mamba_scan.QUADRATIC_MAX_LENGTH`
positions and the step-by-step kernel beyond; ``chunk_size`` therefore changes nothing
here either.

Each exponent ``\\sum_{s<r\\le t} \\Delta_r A_h`` is a difference of float64 prefix sums,
off by about ``10^{-16}`` of the running total, far below float32's resolution (in
float32, differences of a cumulative sum are off by ``10^{-4}`` once it reaches
``-2000``), and is rounded once to float32. Pairs ``s > t`` do not exist, so nothing can
overflow. The backward pass recomputes the decays rather than storing them.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from numba import njit, prange

from statelayers.models.kernels.elementwise import FASTMATH, exp, zero
from statelayers.models.kernels.threads import use_torch_threads

UNDERFLOW = -80.0
"""Exponents below this give ``0``: ``e^{-80} < 2 \\cdot 10^{-35}`` is nothing next to
float32's resolution, and results in float32's subnormal range (below ``e^{-87.3}``) are
many times slower in every operation that touches them."""


@njit(inline="always", fastmath=FASTMATH)
def _prefix_sums(dt_h, a_h, prefix, dt_row):
    """``dt_row`` a contiguous copy of one head's steps; ``prefix[t] = sum(dt[:t+1] * a_h)`` in float64."""
    total = 0.0
    for t in range(dt_h.shape[0]):
        dt_row[t] = dt_h[t]
        total += dt_h[t] * a_h
        prefix[t] = total


@njit(inline="always", fastmath=FASTMATH)
def _decay_row(prefix, t, underflow, row):
    """``row[s] = M_{ts} = exp(prefix[t] - prefix[s])`` for ``s <= t``, ``0`` below ``underflow``."""
    end = prefix[t]
    for s in range(t + 1):
        exponent = row.dtype.type(end - prefix[s])
        row[s] = exp(exponent) if exponent >= underflow else zero(exponent)


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _forward(x, x_offset, dt, A, scores, D, underflow, y):
    """``y (batch, L, heads, p)``; head ``h`` reads the columns ``x_offset + h p`` to
    ``x_offset + (h + 1) p`` of ``x (batch, L, width)``."""
    batch, length, heads, head_dim = y.shape
    per_group = heads // scores.shape[1]
    for b in prange(batch):
        prefix = np.empty(length)  # float64
        dt_row, row = np.empty(length, x.dtype), np.empty(length, x.dtype)
        for h in range(heads):
            lo = x_offset + h * head_dim
            hi = lo + head_dim
            scores_h = scores[b, h // per_group]
            _prefix_sums(dt[b, :, h], A[h], prefix, dt_row)
            for t in range(length):
                _decay_row(prefix, t, underflow, row)
                for s in range(t + 1):
                    row[s] *= scores_h[t, s] * dt_row[s]  # W[t, s]
                y_t, x_t = y[b, t, h], x[b, t, lo:hi]
                for p in range(head_dim):
                    y_t[p] = D[h] * x_t[p]
                for s in range(t + 1):
                    weight, x_s = row[s], x[b, s, lo:hi]
                    for p in range(head_dim):
                        y_t[p] += weight * x_s[p]


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _backward(grad_y, x, x_offset, dt, A, scores, D, underflow, grad_x, grad_dt, grad_A, grad_scores, grad_D):
    """``grad_x`` (the shape of ``x``) written in the columns :func:`_forward` read only."""
    batch, length, heads, head_dim = grad_y.shape
    per_group = heads // scores.shape[1]
    for b in prange(batch):
        grad_scores[b] = 0.0
        prefix, below, grad_dt_direct = np.empty(length), np.empty(length), np.empty(length)  # float64
        dt_row, row = np.empty(length, x.dtype), np.empty(length, x.dtype)
        for h in range(heads):
            lo = x_offset + h * head_dim
            hi = lo + head_dim
            g = h // per_group
            scores_h, grad_scores_h = scores[b, g], grad_scores[b, g]
            _prefix_sums(dt[b, :, h], A[h], prefix, dt_row)
            skip = 0.0
            for s in range(length):
                grad_y_s, x_s, grad_x_s = grad_y[b, s, h], x[b, s, lo:hi], grad_x[b, s, lo:hi]
                for p in range(head_dim):
                    grad_x_s[p] = D[h] * grad_y_s[p]
                    skip += grad_y_s[p] * x_s[p]
            below[:] = 0.0
            grad_dt_direct[:] = 0.0
            grad_a_h = 0.0
            for t in range(length - 1, -1, -1):
                _decay_row(prefix, t, underflow, row)
                grad_y_t = grad_y[b, t, h]
                for s in range(t + 1):
                    x_s, grad_x_s = x[b, s, lo:hi], grad_x[b, s, lo:hi]
                    dot = zero(row[s])
                    for p in range(head_dim):
                        dot += grad_y_t[p] * x_s[p]  # dL/dW[t, s]
                    decay, score = row[s], scores_h[t, s]
                    weight = decay * score * dt_row[s]
                    for p in range(head_dim):
                        grad_x_s[p] += weight * grad_y_t[p]
                    grad_scores_h[t, s] += dot * decay * dt_row[s]
                    grad_dt_direct[s] += dot * decay * score
                    below[s] += dot * weight  # dL/dM[t, s] * M[t, s], summed over the rows >= t
                grad_a_t = 0.0  # dL/da[t], a = dt * A_h: the pairs s < t <= t' whose exponent holds a[t]
                for s in range(t):
                    grad_a_t += below[s]
                grad_dt[b, t, h] = A[h] * grad_a_t
                grad_a_h += dt_row[t] * grad_a_t
            for s in range(length):
                grad_dt[b, s, h] += grad_dt_direct[s]
            grad_A[b, h], grad_D[b, h] = grad_a_h, skip


class QuadraticSSD(torch.autograd.Function):
    """``y[b, t, h] = D[h] x[b, t, h] + sum_{s <= t} M[b, h, t, s] scores[b, g(h), t, s]
    dt[b, s, h] x[b, s, h]``, with the decays ``M[..., t, s] = exp(sum(dt[b, s+1 : t+1, h] A[h]))``.

    ``x (batch, L, heads, p)``, ``dt (batch, L, heads)`` (step sizes after softplus and
    clamp), ``A (heads,)``, ``scores (batch, groups, L, L)`` (``C B^T``; entries above the
    diagonal are never read), ``D (heads,)``. One compiled pass per sequence each way, in
    parallel over the batch; exponents below :data:`UNDERFLOW` give ``0``. The backward
    pass, with ``\\dot y`` the incoming gradient and ``\\dot W_{ts} = \\dot y_t \\cdot x_s``:
    ``\\partial x_s = D \\dot y_s + \\sum_{t \\ge s} W_{ts} \\dot y_t``,
    ``\\partial\\,\\mathrm{scores}_{g,ts} = \\sum_{h \\in g} \\dot W_{ts} M_{ts} \\Delta_s``,
    ``\\partial \\Delta_s`` gets ``\\sum_t \\dot W_{ts} M_{ts} (C B^\\top)_{ts}`` directly and
    ``A_h \\partial a_s`` through the decays, where with ``G = \\dot W \\odot W``
    ``\\partial a_r = \\sum_{t \\ge r} \\sum_{s < r} G_{ts}`` (the pairs whose segment holds
    ``r``: rows taken from the last, each added to float64 column sums over the rows so
    far, whose entries ``s < r`` sum to ``\\partial a_r``); ``\\partial A_h = \\sum \\Delta
    \\partial a`` and ``\\partial D_h = \\sum \\dot y \\cdot x``, both summed per sequence in
    the kernel and over sequences here, so results do not depend on the thread count.
    """

    @staticmethod
    def forward(ctx, x, dt, A, scores, D):
        x, dt, A, scores, D = (t.detach().contiguous() for t in (x, dt, A, scores, D))
        ctx.save_for_backward(x, dt, A, scores, D)
        return quadratic_ssd_forward(x.flatten(2), 0, dt, A, scores, D, x.shape[3])

    @staticmethod
    def backward(ctx, grad_y):
        x, dt, A, scores, D = ctx.saved_tensors
        grad_x = torch.empty_like(x)
        grads = quadratic_ssd_backward(grad_y, x.flatten(2), 0, dt, A, scores, D, grad_x.flatten(2))
        return grad_x, *grads


def quadratic_ssd_forward(x, x_offset, dt, A, scores, D, head_dim) -> torch.Tensor:
    """:class:`QuadraticSSD`'s forward on contiguous tensors without autograd, ``x``'s heads
    being the ``heads x head_dim`` columns of ``x (batch, L, width)`` from ``x_offset`` on;
    returns ``y (batch, L, heads, head_dim)``."""
    batch, length, heads = dt.shape
    y = x.new_empty(batch, length, heads, head_dim)
    use_torch_threads()
    inputs = [t.numpy() for t in (dt, A, scores, D)]
    _forward(x.numpy(), x_offset, *inputs, inputs[0].dtype.type(UNDERFLOW), y.numpy())
    return y


def quadratic_ssd_backward(grad_y, x, x_offset, dt, A, scores, D, grad_x):
    """:class:`QuadraticSSD`'s backward, the gradient of ``x`` written into the columns of
    ``grad_x`` (``x``'s shape) that :func:`quadratic_ssd_forward` read; returns the
    gradients of ``dt, A, scores, D``."""
    grad_y = grad_y.contiguous()
    grad_dt, grad_scores = torch.empty_like(dt), torch.empty_like(scores)
    grad_A, grad_D = dt.new_empty(dt.shape[0], dt.shape[2]), dt.new_empty(dt.shape[0], dt.shape[2])
    use_torch_threads()
    inputs = [t.numpy() for t in (dt, A, scores, D)]
    grads = [t.numpy() for t in (grad_x, grad_dt, grad_A, grad_scores, grad_D)]
    _backward(grad_y.numpy(), x.numpy(), x_offset, *inputs, inputs[0].dtype.type(UNDERFLOW), *grads)
    return grad_dt, grad_A.sum(0), grad_scores, grad_D.sum(0)


def decays_to_end(a: torch.Tensor) -> torch.Tensor:
    """``exp(sum(a[..., s+1:]))`` for every ``s``: the last row of the decays, which carries
    each input to the final state; suffix sums in float64, differentiable by autograd."""
    suffix = a.double().flip(-1).cumsum(-1).flip(-1)  # sum(a[..., s:])
    exponent = torch.cat([suffix[..., 1:], suffix.new_zeros(*a.shape[:-1], 1)], -1).to(a.dtype)
    return exponent.masked_fill(exponent < UNDERFLOW, -math.inf).exp()


def step_sizes(
    dt: torch.Tensor, dt_bias: torch.Tensor | None, softplus: bool, dt_limit: tuple[float, float]
) -> torch.Tensor:
    """Mamba-2's step sizes ``clamp(softplus(dt + dt_bias))`` (the bias and the softplus
    where given)."""
    if dt_bias is not None:
        dt = dt + dt_bias
    if softplus:
        dt = F.softplus(dt)
    return dt.clamp(dt_limit[0], dt_limit[1])


def ssd_scores(B: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
    """SSD's scores ``C B^T (batch, groups, t, s)`` from ``B, C (batch, L, groups, n)``."""
    B_g, C_g = B.transpose(1, 2).contiguous(), C.transpose(1, 2).contiguous()  # (batch, groups, L, n)
    return torch.matmul(C_g, B_g.transpose(-1, -2))


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
    dt = step_sizes(dt, dt_bias, dt_softplus, dt_limit)  # (batch, length, heads)
    out = QuadraticSSD.apply(x, dt, A, ssd_scores(B, C), x.new_zeros(heads) if D is None else D)
    if not return_final_states:
        return out
    log_decay = (dt * A).transpose(1, 2)  # (batch, heads, length)
    to_end = decays_to_end(log_decay).reshape(batch, groups, per_group * length, 1)  # M[L-1, s]
    drive = (x * dt.unsqueeze(-1)).transpose(1, 2)  # (batch, heads, length, p)
    weighted = (drive.reshape(batch, groups, per_group * length, head_dim) * to_end).reshape(
        batch * groups, per_group, length, head_dim
    )
    B_g = B.transpose(1, 2).reshape(batch * groups, 1, length, n_state)
    last = torch.matmul(weighted.transpose(-1, -2), B_g)
    return out, last.view(batch, heads, head_dim, n_state)
