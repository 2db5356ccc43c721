"""Mamba-2's state-space recurrence (SSD, scalar decay per head) as one fused numba
kernel, forward and backward, on CPU.

The interface and semantics are mamba-ssm's ``mamba_chunk_scan_combined``: for each
sequence and head ``h`` (of group ``g(h)``),

.. math::
    \\Delta_t = \\mathrm{clamp}(\\mathrm{softplus}(\\delta_t + b_h), \\Delta_{lo}, \\Delta_{hi}),\\quad
    S_t = e^{\\Delta_t A_h} S_{t-1} + \\Delta_t\\, B_t x_t^\\top,\\quad
    y_t = S_t^\\top C_t + D_h x_t,

with ``x: (batch, length, heads, p)``, ``delta: (batch, length, heads)``,
``A, D, dt_bias: (heads,)``, ``B, C: (batch, length, groups, n)``, the state
``S: (n, p)`` and ``S_{-1} = 0``. transformers' PyTorch path computes the same
recurrence in chunks (quadratic attention-like blocks within a chunk, a recurrence
between chunks); here it runs step by step, so ``chunk_size`` does not change the
result and any length works without padding.

:func:`statelayers.models.mamba_scan.chunk_scan` runs this kernel on sequences longer
than :data:`statelayers.models.mamba_scan.QUADRATIC_MAX_LENGTH`, where it keeps no states
without gradients. On shorter ones (the study's training and in-distribution lengths) it
runs :mod:`statelayers.models.kernels.ssd_quadratic`, the whole sequence as one SSD chunk
in one compiled pass each way, which is faster forward and more so forward and backward: here
the backward pass reruns the recurrence keeping an ``(n, p)`` state per step and then
walks it in reverse, one small state at a time.

Work items are ``(sequence, head)`` pairs; each keeps its ``(n, p)`` state in cache
and vectorises over ``p`` (one exponential per step and head). The backward pass reruns
the item's forward recurrence keeping its states, then runs the reverse recurrence

.. math::
    G_t = C_t \\dot y_t^\\top + e^{\\Delta_{t+1} A_h} G_{t+1},\\qquad
    \\partial \\Delta_t = \\textstyle\\sum_{n,p} G_t \\odot (B_t x_t^\\top + A_h e^{\\Delta_t A_h} S_{t-1}).

Gradients shared between heads (``B``, ``C`` of a group) or sequences (``A``, ``D``,
``dt_bias``) are written per work item and summed afterwards in a fixed order, so
results are bit-identical run to run at any thread count.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch
from numba import njit, prange

from statelayers.models.kernels.elementwise import FASTMATH, exp, sigmoid, softplus, zero
from statelayers.models.kernels.threads import use_torch_threads


@njit(inline="always")
def _step_size(raw, delta_softplus, limits):
    dt = softplus(raw) if delta_softplus else raw
    return min(max(dt, limits[0]), limits[1])


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _forward(x, delta, A, B, C, D, bias, delta_softplus, limits, out, last):
    batch, length, heads, head_dim = x.shape
    groups, n_state = B.shape[2], B.shape[3]
    per_group = heads // groups
    for item in prange(batch * heads):
        b, h = item // heads, item % heads
        g = h // per_group
        state = np.zeros((n_state, head_dim), x.dtype)
        for t in range(length):
            dt = _step_size(delta[b, t, h] + bias[h], delta_softplus, limits)
            decay = exp(dt * A[h])
            x_t, B_t, C_t, y = x[b, t, h], B[b, t, g], C[b, t, g], out[b, t, h]
            for j in range(head_dim):
                y[j] = D[h] * x_t[j]
            for n in range(n_state):
                drive, c_n, s_n = dt * B_t[n], C_t[n], state[n]
                for j in range(head_dim):
                    s = decay * s_n[j] + drive * x_t[j]
                    s_n[j] = s
                    y[j] += c_n * s
        last[b, h] = state


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _backward(
    x, delta, A, B, C, D, bias, delta_softplus, limits, grad_out, grad_last,
    grad_x, grad_delta, grad_A, grad_B, grad_C, grad_D, scratch_states,
):  # fmt: skip
    batch, length, heads, head_dim = x.shape
    groups, n_state = B.shape[2], B.shape[3]
    per_group = heads // groups
    for item in prange(batch * heads):
        b, h = item // heads, item % heads
        g = h // per_group
        # A per-thread buffer: allocating ~330 KB per item costs an mmap and its page faults.
        states = scratch_states[numba.get_thread_id()]  # states[t + 1] = S_t, states[0] = 0
        states[0] = 0
        dts, decays = np.empty(length, x.dtype), np.empty(length, x.dtype)
        for t in range(length):
            dt = _step_size(delta[b, t, h] + bias[h], delta_softplus, limits)
            decay = exp(dt * A[h])
            dts[t], decays[t] = dt, decay
            x_t, B_t = x[b, t, h], B[b, t, g]
            for n in range(n_state):
                drive, s_prev, s_n = dt * B_t[n], states[t, n], states[t + 1, n]
                for j in range(head_dim):
                    s_n[j] = decay * s_prev[j] + drive * x_t[j]
        grad_state = grad_last[b, h].copy()
        grad_x_t = np.empty(head_dim, x.dtype)
        grad_A_bh = grad_D_bh = zero(A[h])
        for t in range(length - 1, -1, -1):
            dt, decay = dts[t], decays[t]
            x_t, B_t, C_t, g_y = x[b, t, h], B[b, t, g], C[b, t, g], grad_out[b, t, h]
            for j in range(head_dim):
                grad_x_t[j] = D[h] * g_y[j]
                grad_D_bh += g_y[j] * x_t[j]
            grad_dt = zero(dt)
            for n in range(n_state):
                b_n, c_n, g_n = B_t[n], C_t[n], grad_state[n]
                s_n, s_prev = states[t + 1, n], states[t, n]
                sum_C = sum_x = sum_prev = zero(dt)
                for j in range(head_dim):
                    gs = g_n[j] + c_n * g_y[j]
                    sum_C += g_y[j] * s_n[j]
                    sum_x += gs * x_t[j]
                    sum_prev += gs * s_prev[j]
                    grad_x_t[j] += dt * b_n * gs
                    g_n[j] = gs * decay
                grad_C[b, t, h, n] = sum_C
                grad_B[b, t, h, n] = dt * sum_x
                grad_dt += b_n * sum_x + A[h] * decay * sum_prev
                grad_A_bh += decay * sum_prev * dt
            grad_x[b, t, h] = grad_x_t
            raw = delta[b, t, h] + bias[h]
            before_clamp = softplus(raw) if delta_softplus else raw
            passes = limits[0] <= before_clamp <= limits[1]  # torch.clamp's gradient mask
            grad_raw = grad_dt * sigmoid(raw) if delta_softplus else grad_dt
            grad_delta[b, t, h] = grad_raw if passes else zero(raw)
        grad_A[b, h] = grad_A_bh
        grad_D[b, h] = grad_D_bh


class FusedChunkScan(torch.autograd.Function):
    """Autograd for the fused kernel; ``forward`` returns ``(out, final_state)``."""

    @staticmethod
    def forward(ctx, x, delta, A, B, C, D, dt_bias, delta_softplus, dt_limit):
        heads = x.shape[2]
        zeros = x.new_zeros(heads)
        arrays = tuple(
            t.detach().contiguous()
            for t in (x, delta, A, B, C, zeros if D is None else D, zeros if dt_bias is None else dt_bias)
        )
        batch, _, _, head_dim = x.shape
        limits = torch.tensor(
            [float(v) for v in dt_limit], dtype=x.dtype
        )  # in x's dtype: no float64 promotion
        out = torch.empty_like(arrays[0])
        last = x.new_empty(batch, heads, B.shape[3], head_dim)
        use_torch_threads()
        _forward(
            *(t.numpy() for t in arrays), bool(delta_softplus), limits.numpy(), out.numpy(), last.numpy()
        )
        ctx.save_for_backward(*arrays, limits)
        ctx.settings = (bool(delta_softplus), D is not None, dt_bias is not None)
        return out, last.transpose(2, 3)  # final state as (batch, heads, p, n), as mamba-ssm returns it

    @staticmethod
    def backward(ctx, grad_out, grad_last):
        *arrays, limits = ctx.saved_tensors
        x, B = arrays[0], arrays[3]
        batch, length, heads, head_dim = x.shape
        groups, n_state = B.shape[2], B.shape[3]
        delta_softplus, has_D, has_bias = ctx.settings
        grad_last = (
            x.new_zeros(batch, heads, n_state, head_dim)
            if grad_last is None
            else grad_last.transpose(2, 3).contiguous()
        )
        grad_x, grad_delta = torch.empty_like(x), x.new_empty(batch, length, heads)
        grad_A, grad_D = x.new_empty(batch, heads), x.new_empty(batch, heads)
        grad_B, grad_C = (
            x.new_empty(batch, length, heads, n_state),
            x.new_empty(batch, length, heads, n_state),
        )
        threads = use_torch_threads()
        _backward(
            *(t.numpy() for t in arrays),
            delta_softplus,
            limits.numpy(),
            grad_out.contiguous().numpy(),
            grad_last.numpy(),
            *(t.numpy() for t in (grad_x, grad_delta, grad_A, grad_B, grad_C, grad_D)),
            x.new_empty(threads, length + 1, n_state, head_dim).numpy(),
        )

        def per_group(grad):  # (batch, length, heads, n) -> (batch, length, groups, n)
            return grad.view(batch, length, groups, heads // groups, n_state).sum(3)

        return (
            grad_x,
            grad_delta,
            grad_A.sum(0),
            per_group(grad_B),
            per_group(grad_C),
            grad_D.sum(0) if has_D else None,
            grad_delta.sum((0, 1)) if has_bias else None,
            None,
            None,
        )


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
    """mamba-ssm's ``mamba_chunk_scan_combined`` on CPU tensors of one floating dtype,
    from a zero initial state and without the ``z`` gate (transformers' Mamba-2 gates
    in its own norm); ``chunk_size`` is accepted for the signature and changes nothing.
    Returns ``out (batch, length, heads, p)`` or ``(out, final_state (batch, heads, p, n))``."""
    if B.shape[2] == 0 or x.shape[2] % B.shape[2]:
        raise ValueError(f"{x.shape[2]} heads do not split into {B.shape[2]} groups")
    out, last = FusedChunkScan.apply(x, dt, A, B, C, D, dt_bias, dt_softplus, dt_limit)
    return (out, last) if return_final_states else out
