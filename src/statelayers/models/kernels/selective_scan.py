"""Mamba-1's selective scan as one fused numba kernel, forward and backward, on CPU.

The interface and semantics are mamba-ssm's ``selective_scan_fn`` for the layout
transformers' Mamba uses (input-dependent ``B`` and ``C`` of one group):

.. math::
    \\Delta_t = \\mathrm{softplus}(\\delta_t + b),\\quad
    h_t = e^{\\Delta_t A} \\odot h_{t-1} + \\Delta_t u_t B_t,\\quad
    y_t = \\big(C_t^\\top h_t + D u_t\\big)\\, \\mathrm{silu}(z_t),

with ``u, delta, z: (batch, d, length)``, ``A: (d, n)``, ``B, C: (batch, n, length)``,
``D, delta_bias: (d,)`` and ``h_{-1} = 0``. Softplus, bias, the ``D`` skip and the
gate run inside the kernel, as in the CUDA kernel.

With ``signed`` the decay :math:`e^{\\Delta_t A}` becomes :math:`2 e^{\\Delta_t A} - 1`
(signed transitions, :mod:`statelayers.models.mamba_scan`). Both are
:math:`a_t = \\gamma e^{\\Delta_t A} - o`, with :math:`(\\gamma, o) = (1, 0)` or :math:`(2, 1)`
passed as scalars of the inputs' dtype, so one compiled loop serves both and the default
stays exact (:math:`e \\cdot 1 - 0 = e`).

Layout: the kernel walks time in the outer loop and vectorises over a block of
``BLOCK`` channels, keeping the block's ``(n, BLOCK)`` state in cache, so the
exponentials (:mod:`statelayers.models.kernels.elementwise`) and multiply-adds run as
AVX2/AVX-512 code. Work items are ``(sequence, channel block)`` pairs, spread over
numba's threads, which follow ``torch.get_num_threads()`` (the job's ``threads``).

Backward: each work item first reruns its forward recurrence, keeping its states and
decays (``length x n x BLOCK`` floats each, in cache), then runs the reverse
recurrence of the state gradient :math:`g_t = \\partial L/\\partial h_t`:

.. math::
    g_t = \\dot y_t C_t + g_{t+1} \\odot a_{t+1},\\qquad
    \\partial \\Delta_t = \\textstyle\\sum_n g_t \\odot (u_t B_t + A\\, (a_t + o)\\, h_{t-1}),

with ``\\dot y_t`` the gradient of the pre-gate output and :math:`a_t + o = \\gamma e^{\\Delta_t A}`
the decay's slope in :math:`\\Delta_t A`. Gradients that sum over
channels (``B``, ``C``) or over the batch (``A``, ``D``, ``delta_bias``) are written per
work item and summed afterwards in a fixed order, so results are bit-identical run to
run at any thread count.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from numba import njit, prange

from statelayers.models.kernels.elementwise import FASTMATH, exp, sigmoid, silu, silu_grad, softplus, zero
from statelayers.models.kernels.threads import use_torch_threads

BLOCK = 64
"""Channels per work item: the state block (n x 64 floats) and its history stay in cache."""


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _forward(u, delta, A, B, C, D, z, bias, delta_softplus, gated, gain, offset, out, last):
    # Inner loops index 1-d views with the loop counter only: numba's negative-index
    # handling of computed indices (``lo + j``) would keep them from vectorising.
    batch, length, dim = u.shape
    n_state = A.shape[0]
    blocks = (dim + BLOCK - 1) // BLOCK
    for item in prange(batch * blocks):
        b, lo = item // blocks, (item % blocks) * BLOCK
        hi = min(lo + BLOCK, dim)
        width = hi - lo
        h = np.zeros((n_state, width), u.dtype)
        dt, drive, y = np.empty(width, u.dtype), np.empty(width, u.dtype), np.empty(width, u.dtype)
        D_, bias_ = D[lo:hi], bias[lo:hi]
        for t in range(length):
            u_t, delta_t = u[b, t, lo:hi], delta[b, t, lo:hi]
            for j in range(width):
                x = delta_t[j] + bias_[j]
                dt[j] = softplus(x) if delta_softplus else x
                drive[j] = dt[j] * u_t[j]
                y[j] = D_[j] * u_t[j]
            for n in range(n_state):
                b_n, c_n, h_n, A_n = B[b, t, n], C[b, t, n], h[n], A[n, lo:hi]
                for j in range(width):
                    state = (gain * exp(dt[j] * A_n[j]) - offset) * h_n[j] + drive[j] * b_n
                    h_n[j] = state
                    y[j] += c_n * state
            out_t = out[b, t, lo:hi]
            if gated:
                z_t = z[b, t, lo:hi]
                for j in range(width):
                    out_t[j] = y[j] * silu(z_t[j])
            else:
                out_t[:] = y
        last[b, :, lo:hi] = h


@njit(parallel=True, fastmath=FASTMATH, cache=True)
def _backward(
    u, delta, A, B, C, D, z, bias, delta_softplus, gated, gain, offset, grad_out, grad_last,
    grad_u, grad_delta, grad_z, grad_A, grad_B, grad_C, grad_D, scratch_states, scratch_decays,
):  # fmt: skip
    batch, length, dim = u.shape
    n_state = A.shape[0]
    blocks = (dim + BLOCK - 1) // BLOCK
    for item in prange(batch * blocks):
        b, block = item // blocks, item % blocks
        lo = block * BLOCK
        hi = min(lo + BLOCK, dim)
        width = hi - lo
        D_, bias_ = D[lo:hi], bias[lo:hi]
        # Per-thread buffers: allocating ~160 KB per item costs an mmap and its page faults.
        states = scratch_states[numba.get_thread_id()]  # states[t + 1] = h_t, states[0] = 0
        decays = scratch_decays[numba.get_thread_id()]
        states[0] = 0
        dts = np.empty((length, width), u.dtype)
        pre_gate = np.empty((length, width), u.dtype)
        for t in range(length):
            u_t, delta_t, dt, y = u[b, t, lo:hi], delta[b, t, lo:hi], dts[t], pre_gate[t]
            for j in range(width):
                x = delta_t[j] + bias_[j]
                dt[j] = softplus(x) if delta_softplus else x
                y[j] = D_[j] * u_t[j]
            for n in range(n_state):
                b_n, c_n, A_n = B[b, t, n], C[b, t, n], A[n, lo:hi]
                h_prev, h_n, a_n = states[t, n], states[t + 1, n], decays[t, n]
                for j in range(width):
                    decay = gain * exp(dt[j] * A_n[j]) - offset
                    state = decay * h_prev[j] + dt[j] * u_t[j] * b_n
                    a_n[j] = decay
                    h_n[j] = state
                    y[j] += c_n * state
        grad_state = grad_last[b, :, lo:hi].copy()
        grad_y, grad_dt, grad_u_t = (
            np.empty(width, u.dtype),
            np.empty(width, u.dtype),
            np.empty(width, u.dtype),
        )
        grad_D_b = np.zeros(width, u.dtype)
        grad_A_b = np.zeros((n_state, width), u.dtype)
        for t in range(length - 1, -1, -1):
            u_t, dt, g_out = u[b, t, lo:hi], dts[t], grad_out[b, t, lo:hi]
            if gated:
                z_t, grad_z_t, y = z[b, t, lo:hi], grad_z[b, t, lo:hi], pre_gate[t]
                for j in range(width):
                    grad_z_t[j] = g_out[j] * y[j] * silu_grad(z_t[j])
                    grad_y[j] = g_out[j] * silu(z_t[j])
            else:
                grad_y[:] = g_out
            for j in range(width):
                grad_D_b[j] += grad_y[j] * u_t[j]
                grad_u_t[j] = grad_y[j] * D_[j]
                grad_dt[j] = 0
            for n in range(n_state):
                b_n, c_n, A_n, g_n, grad_A_n = B[b, t, n], C[b, t, n], A[n, lo:hi], grad_state[n], grad_A_b[n]
                h_prev, h_n, a_n = states[t, n], states[t + 1, n], decays[t, n]
                sum_B = sum_C = zero(b_n)
                for j in range(width):
                    g = g_n[j] + grad_y[j] * c_n
                    grad_exponent = g * (a_n[j] + offset) * h_prev[j]
                    sum_C += grad_y[j] * h_n[j]
                    sum_B += g * dt[j] * u_t[j]
                    grad_dt[j] += g * u_t[j] * b_n + grad_exponent * A_n[j]
                    grad_u_t[j] += g * dt[j] * b_n
                    grad_A_n[j] += grad_exponent * dt[j]
                    g_n[j] = g * a_n[j]
                grad_B[block, b, t, n] = sum_B
                grad_C[block, b, t, n] = sum_C
            grad_u[b, t, lo:hi] = grad_u_t
            grad_delta_t, delta_t = grad_delta[b, t, lo:hi], delta[b, t, lo:hi]
            if delta_softplus:
                for j in range(width):
                    grad_delta_t[j] = grad_dt[j] * sigmoid(delta_t[j] + bias_[j])
            else:
                grad_delta_t[:] = grad_dt
        grad_D[b, lo:hi] = grad_D_b
        grad_A[b, :, lo:hi] = grad_A_b


def _kernel_inputs(u, delta, A, B, C, D, z, delta_bias):
    """The kernel's layout: time before channels, ``A`` as ``(n, d)``; absent ``D`` and
    ``delta_bias`` as zeros (an exact no-op), absent ``z`` as an empty array."""
    channels = u.shape[1]
    zeros = u.new_zeros(channels)
    arrays = (
        u.transpose(1, 2),
        delta.transpose(1, 2),
        A.t(),
        B.transpose(1, 2),
        C.transpose(1, 2),
        zeros if D is None else D,
        u.new_empty(0, 0, 0) if z is None else z.transpose(1, 2),
        zeros if delta_bias is None else delta_bias,
    )
    return tuple(t.detach().contiguous() for t in arrays)


def _numpy(*tensors: torch.Tensor) -> tuple[np.ndarray, ...]:
    return tuple(t.numpy() for t in tensors)


def _decay_form(u: torch.Tensor, signed: bool) -> tuple[np.generic, np.generic]:
    """``(gain, offset)`` of the decay ``gain exp(dt A) - offset``, in ``u``'s dtype: a
    Python float would promote the float32 loops to float64."""
    scalar = u.numpy().dtype.type
    return (scalar(2), scalar(1)) if signed else (scalar(1), scalar(0))


class FusedSelectiveScan(torch.autograd.Function):
    """Autograd for the fused kernel; ``forward`` returns ``(out, last_state)``."""

    @staticmethod
    def forward(ctx, u, delta, A, B, C, D, z, delta_bias, delta_softplus, signed):
        arrays = _kernel_inputs(u, delta, A, B, C, D, z, delta_bias)
        batch, channels, length = u.shape
        out = u.new_empty(batch, length, channels)
        last = u.new_empty(batch, A.shape[1], channels)
        use_torch_threads()
        form = _decay_form(arrays[0], signed)
        _forward(*_numpy(*arrays), bool(delta_softplus), z is not None, *form, *_numpy(out, last))
        ctx.save_for_backward(*arrays)
        ctx.form = form
        ctx.delta_softplus, ctx.present = (
            bool(delta_softplus),
            (D is not None, z is not None, delta_bias is not None),
        )
        return out.transpose(1, 2), last.transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_out, grad_last):
        arrays = ctx.saved_tensors
        u, A = arrays[0], arrays[2]
        batch, length, channels = u.shape
        n_state, blocks = A.shape[0], -(-channels // BLOCK)
        has_D, gated, has_bias = ctx.present
        grad_out = grad_out.transpose(1, 2).contiguous()
        grad_last = (
            u.new_zeros(batch, n_state, channels)
            if grad_last is None
            else grad_last.transpose(1, 2).contiguous()
        )
        grad_u, grad_delta = torch.empty_like(u), torch.empty_like(u)
        grad_z = torch.empty_like(u) if gated else u.new_empty(0, 0, 0)
        grad_A = u.new_empty(batch, n_state, channels)
        grad_B, grad_C = (
            u.new_empty(blocks, batch, length, n_state),
            u.new_empty(blocks, batch, length, n_state),
        )
        grad_D = u.new_empty(batch, channels)
        threads = use_torch_threads()
        scratch_states = u.new_empty(threads, length + 1, n_state, BLOCK)
        scratch_decays = u.new_empty(threads, length, n_state, BLOCK)
        _backward(
            *_numpy(*arrays),
            ctx.delta_softplus,
            gated,
            *ctx.form,
            *_numpy(grad_out, grad_last, grad_u, grad_delta, grad_z, grad_A, grad_B, grad_C, grad_D),
            *_numpy(scratch_states, scratch_decays),
        )
        return (
            grad_u.transpose(1, 2),
            grad_delta.transpose(1, 2),
            grad_A.sum(0).t(),
            grad_B.sum(0).transpose(1, 2),
            grad_C.sum(0).transpose(1, 2),
            grad_D.sum(0) if has_D else None,
            grad_z.transpose(1, 2) if gated else None,
            grad_delta.sum((0, 1)) if has_bias else None,
            None,
            None,
        )


def selective_scan_fn(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
    delta_softplus: bool = False,
    return_last_state: bool = False,
    signed: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """mamba-ssm's ``selective_scan_fn`` on CPU tensors of one floating dtype (float32 in
    the workflow, float64 for ``gradcheck``), with the signed decay if ``signed``; returns
    ``out`` or ``(out, last_state)``."""
    if B.dim() != 3 or C.dim() != 3:
        raise ValueError("the fused CPU scan takes input-dependent B and C of shape (batch, n, length)")
    out, last = FusedSelectiveScan.apply(u, delta, A, B, C, D, z, delta_bias, delta_softplus, signed)
    return (out, last) if return_last_state else out
