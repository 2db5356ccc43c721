"""The ``fast`` scans that transformers' Mamba and Mamba-2 mixers call under the
``torch`` backend: fused numba kernels (and SSD's quadratic form) on CPU, PyTorch elsewhere.

On CPU tensors :func:`selective_scan` (Mamba-1) runs
:func:`statelayers.models.kernels.selective_scan.selective_scan_fn`: softplus, bias, skip
and gate fused into one compiled pass, forward and backward. :func:`chunk_scan` (Mamba-2)
runs :func:`statelayers.models.kernels.ssd_quadratic.mamba_chunk_scan_combined` on
sequences of up to :data:`QUADRATIC_MAX_LENGTH` positions (the study's training and
in-distribution lengths): SSD as one attention-like chunk, one compiled pass each way,
faster than the step-by-step kernel in training and without gradients alike (per layer,
batch 64, 16 heads of 32, ``benchmarks/mamba_step.py --ssd 40 64`` in a one-thread job's
process: forward and backward 13.5 against 71.5 ms at length 40, 29.8 against 105.2 ms
at 64; forward alone 3.9 against 12.7 ms and 9.7 against 18.8 ms). On longer sequences,
whose quadratic terms outgrow it, it runs
:func:`statelayers.models.kernels.ssd.mamba_chunk_scan_combined`, which keeps no states
under ``torch.no_grad``.
On other devices
(a GPU without mamba-ssm), or without numba, Mamba-1 runs the PyTorch scan below and Mamba-2
transformers' chunked PyTorch scan, as does a Mamba-2 call with an initial state
(generation with a cache, which the workflow never does).

transformers' reference scan indexes ``discrete_A[:, :, t]`` inside its loop; autograd
then materialises a full-size zero gradient per step, so its backward pass is
quadratic in length. Here the recurrence

.. math::
    h_t = \\exp(\\Delta_t A) \\odot h_{t-1} + \\Delta_t u_t B_t,\\qquad y_t = C_t^\\top h_t

runs in :class:`SelectiveScan`, an autograd function whose backward is the reverse
recurrence written out by hand:

.. math::
    g_t = \\bar g_t + y'_t C_t,\\quad
    \\bar g_{t-1} = g_t \\odot e^{\\Delta_t A},\\quad
    \\partial(\\Delta_t A) = g_t \\odot h_{t-1} \\odot e^{\\Delta_t A},

so each step touches ``(batch, d_inner, state)`` tensors only and nothing of size
``length x batch x d_inner x state`` is differentiated through. The skip ``D u`` and the
gate ``silu(z)`` stay in ordinary autograd. Under ``torch.no_grad`` (states, behaviour,
erasures, patching) the loop keeps no per-step states at all. The signature equals
transformers' ``mamba_selective_scan``; the tests check outputs and gradients against it.

Signed transitions (the ``mamba_signed`` and ``mamba2_signed`` architectures, after Grazzi
et al., "Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues"): inside
:func:`transitions` with ``signed=True`` both scans replace the decay by

.. math::
    a_t = 2\\exp(\\Delta_t A) - 1 \\in (-1, 1],

so a diagonal state can flip its sign at every step, which parity needs and which a decay
in ``(0, 1]`` never does. Mamba-1 then runs the compiled kernel with the signed decay on CPU
and the PyTorch scan, :class:`SelectiveScan`, elsewhere, both with the slope
:math:`\\partial a_t / \\partial(\\Delta_t A) = a_t + 1` in their backward passes; Mamba-2
runs :func:`signed_chunk_scan`, whose products of decays are cumulative products, because
SSD's sums of log-decays have no logarithm of a negative decay. Outside that context
(every other architecture) nothing in the default paths changes.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
import torch.nn.functional as F
from transformers.models.mamba import modeling_mamba
from transformers.models.mamba2 import modeling_mamba2

from statelayers.models.kernels import runs_cpu_kernels

REFERENCE_SCAN = inspect.unwrap(modeling_mamba.mamba_selective_scan)
"""transformers' PyTorch loop (never a CUDA kernel), the reference the tests compare with."""
REFERENCE_CHUNK_SCAN = inspect.unwrap(modeling_mamba2.mamba2_chunk_scan)
"""transformers' chunked PyTorch SSD for Mamba-2, likewise."""
REFERENCE_GATED_NORM = modeling_mamba2.Mamba2RMSNormGated.forward
"""transformers' PyTorch gated RMSNorm of the Mamba-2 mixer (``Mamba2RMSNormGated.forward``)."""
UNFUSED_MIXER = inspect.unwrap(modeling_mamba2.mamba2_split_conv1d_scan_combined)
"""transformers' stand-in for mamba-ssm's fused Mamba-2 mixer: it returns ``None``, on
which ``Mamba2Mixer`` runs its unfused path (what the ``reference`` scan and the GPU
without mamba-ssm run in training, and what the tests and benchmarks compare with)."""

QUADRATIC_MAX_LENGTH = 64
"""The longest sequence Mamba-2 runs in SSD's quadratic form; its terms outgrow the step-by-step kernel beyond."""

_SIGNED: ContextVar[bool] = ContextVar("signed_transitions", default=False)
"""Whether the scans called now use signed transitions: the mixers call the scans as
module globals with no room for an option, so the tagger of a signed architecture says
it around its forward pass (:func:`transitions`)."""


@contextmanager
def transitions(signed: bool) -> Iterator[None]:
    """Within the context, the scans use the signed decay ``2 exp(dt A) - 1`` if ``signed``,
    else the default ``exp(dt A)``; the setting before is restored on exit, also on error."""
    token = _SIGNED.set(signed)
    try:
        yield
    finally:
        _SIGNED.reset(token)


def _scan(u, dt, A, B, C, keep_states: bool, signed: bool = False):
    """Run the recurrence; return ``y (b, d, l)``, the last state and what the backward needs.

    With ``keep_states`` every step's state and decay are kept, as one tensor per step,
    not slices of one ``(l, b, d, n)`` buffer: a buffer that large is a fresh ``mmap`` on
    every call, and its first-touch page faults cost more than the arithmetic;
    step-sized blocks are reused by the allocator. Keeping the decays spares the
    backward pass recomputing its exponentials, the costliest operation per element.
    """
    dt_t, u_t = dt.permute(2, 0, 1).contiguous(), u.permute(2, 0, 1).contiguous()
    B_t, C_t = B.permute(2, 0, 1).contiguous(), C.permute(2, 0, 1).contiguous()
    drive_t = dt_t * u_t
    states, decays, outputs = [], [], []
    state = u.new_zeros(u.shape[0], u.shape[1], A.shape[1])
    for t in range(len(u_t)):
        decay = torch.mul(dt_t[t].unsqueeze(-1), A).exp_()
        if signed:
            decay = decay.mul_(2).sub_(1)
        state = torch.mul(drive_t[t].unsqueeze(-1), B_t[t].unsqueeze(1)).addcmul_(decay, state)
        if keep_states:
            states.append(state)
            decays.append(decay)
        # (state * C).sum(-1) outruns a batched matrix-vector product here.
        outputs.append((state * C_t[t].unsqueeze(1)).sum(-1))
    return torch.stack(outputs, dim=-1), state, (dt_t, u_t, drive_t, B_t, C_t, states, decays)


class SelectiveScan(torch.autograd.Function):
    """``y = scan(u, dt, A, B, C)`` with ``u, dt: (b, d, l)``, ``A: (d, n)``, ``B, C: (b, n, l)``;
    with ``signed`` the decay is ``2 exp(dt A) - 1``."""

    @staticmethod
    def forward(ctx, u, dt, A, B, C, signed=False):
        y, state, (dt_t, u_t, drive_t, B_t, C_t, states, decays) = _scan(
            u, dt, A, B, C, keep_states=True, signed=signed
        )
        ctx.length, ctx.signed = len(states), signed
        ctx.save_for_backward(dt_t, u_t, drive_t, A, B_t, C_t, *states, *decays)
        return y, state

    @staticmethod
    def backward(ctx, grad_y, grad_last_state):
        dt_t, u_t, drive_t, A, B_t, C_t, *kept = ctx.saved_tensors
        states, decays = kept[: ctx.length], kept[ctx.length :]
        grad_y = grad_y.permute(2, 0, 1)
        grad_B, grad_C = torch.empty_like(B_t), torch.empty_like(C_t)
        grad_drive, grad_exponent_dt = torch.empty_like(dt_t), torch.zeros_like(dt_t)
        grad_A_per_batch = torch.zeros_like(states[0])  # summed over the batch once, after the loop
        grad_state = torch.zeros_like(states[0]) if grad_last_state is None else grad_last_state.clone()
        for t in range(ctx.length - 1, -1, -1):
            grad_state = torch.addcmul(grad_state, grad_y[t].unsqueeze(-1), C_t[t].unsqueeze(1))
            grad_C[t] = torch.matmul(grad_y[t].unsqueeze(1), states[t]).squeeze(1)
            grad_drive[t] = (grad_state * B_t[t].unsqueeze(1)).sum(-1)
            grad_B[t] = torch.matmul(drive_t[t].unsqueeze(1), grad_state).squeeze(1)
            carried = grad_state * decays[t]  # the gradient of h_{t-1}
            if t > 0:  # h_{-1} = 0: the first decay multiplies nothing
                # d decay / d(dt A): exp(dt A) = decay, or 2 exp(dt A) = decay + 1 when signed
                grad_exponent = (grad_state * (decays[t] + 1) if ctx.signed else carried) * states[t - 1]
                grad_exponent_dt[t] = (grad_exponent * A).sum(-1)
                grad_A_per_batch.addcmul_(grad_exponent, dt_t[t].unsqueeze(-1))
            grad_state = carried
        grad_dt = grad_exponent_dt.addcmul_(grad_drive, u_t)
        return (
            (grad_drive * dt_t).permute(1, 2, 0),
            grad_dt.permute(1, 2, 0),
            grad_A_per_batch.sum(0),
            grad_B.permute(1, 2, 0),
            grad_C.permute(1, 2, 0),
            None,
        )


def selective_scan(
    hidden_states: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
    delta_softplus: bool = False,
    return_last_state: bool = False,
    **_: object,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """transformers' ``mamba_selective_scan`` signature; float32 throughout, also under
    bf16 autocast (both backward passes are float32), with signed transitions inside
    :func:`transitions`: the compiled kernel runs either decay on CPU, the PyTorch scan
    elsewhere."""
    dtype = hidden_states.dtype
    signed = _SIGNED.get()
    with torch.autocast(hidden_states.device.type, enabled=False):
        inputs = [None if t is None else t.float() for t in (hidden_states, dt, A, B, C, D, z, delta_bias)]
        if runs_cpu_kernels(hidden_states):
            from statelayers.models.kernels.selective_scan import selective_scan_fn

            y, last_state = selective_scan_fn(
                *inputs, delta_softplus=delta_softplus, return_last_state=True, signed=signed
            )
        else:
            y, last_state = torch_selective_scan(*inputs, delta_softplus=delta_softplus, signed=signed)
    y = y.to(dtype)
    return (y, last_state) if return_last_state else y


def differentiated(*tensors: torch.Tensor | None) -> bool:
    """Whether autograd will need this call's backward: the scans keep no per-step states otherwise."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def torch_selective_scan(u, dt, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False, signed=False):
    """The scan in PyTorch operations (:class:`SelectiveScan`), with the signed decay if
    ``signed``; returns ``(y, last_state)``."""
    if delta_bias is not None:
        dt = dt + delta_bias[..., None]
    if delta_softplus:
        dt = F.softplus(dt)
    inputs = (u, dt, A, B, C)
    if differentiated(*inputs):
        y, last_state = SelectiveScan.apply(*inputs, signed)
    else:  # inference: nothing to differentiate, so no per-step states are kept
        y, last_state, _ = _scan(*inputs, keep_states=False, signed=signed)
    if D is not None:
        y = y + u * D[None, :, None]
    if z is not None:
        y = y * F.silu(z)
    return y, last_state


def chunk_scan(
    hidden_states: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    chunk_size: int,
    D: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    initial_states: torch.Tensor | None = None,
    dt_softplus: bool = False,
    dt_limit: tuple[float, float] = (0.0, float("inf")),
    return_final_states: bool = False,
    **kwargs: object,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """transformers' ``mamba2_chunk_scan`` signature; float32 throughout, like it. Signed
    transitions (:func:`transitions`) run :func:`signed_chunk_scan` on every device."""
    if _SIGNED.get():
        return signed_chunk_scan(
            hidden_states, dt, A, B, C, D=D, dt_bias=dt_bias, initial_states=initial_states,
            dt_softplus=dt_softplus, dt_limit=dt_limit, return_final_states=return_final_states,
        )  # fmt: skip
    if not runs_cpu_kernels(hidden_states) or initial_states is not None:
        return REFERENCE_CHUNK_SCAN(
            hidden_states, dt, A, B, C, chunk_size, D=D, dt_bias=dt_bias, initial_states=initial_states,
            dt_softplus=dt_softplus, dt_limit=dt_limit, return_final_states=return_final_states, **kwargs,
        )  # fmt: skip
    from statelayers.models.kernels import ssd, ssd_quadratic

    short = hidden_states.shape[1] <= QUADRATIC_MAX_LENGTH
    scan = ssd_quadratic.mamba_chunk_scan_combined if short else ssd.mamba_chunk_scan_combined
    with torch.autocast("cpu", enabled=False):
        inputs = [None if t is None else t.float() for t in (hidden_states, dt, A, B, C, D, dt_bias)]
        x, dt, A, B, C, D, dt_bias = inputs
        return scan(
            x, dt, A, B, C, chunk_size, D=D, dt_bias=dt_bias, dt_softplus=dt_softplus, dt_limit=dt_limit,
            return_final_states=return_final_states,
        )  # fmt: skip


def signed_chunk_scan(
    hidden_states: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    initial_states: torch.Tensor | None = None,
    dt_softplus: bool = False,
    dt_limit: tuple[float, float] = (0.0, float("inf")),
    return_final_states: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Mamba-2's scan with signed decays, in SSD's quadratic form over the whole sequence.

    With ``x: (b, l, h, p)``, ``dt: (b, l, h)``, ``A: (h,)`` and ``B, C: (b, l, g, n)``,
    the recurrence :math:`h_t = a_t h_{t-1} + \\Delta_t x_t B_t^\\top`,
    :math:`y_t = h_t C_t + D x_t` with :math:`a_t = 2 e^{\\Delta_t A} - 1` unrolls to

    .. math::
        y_t = \\sum_{s \\le t} \\Big(\\prod_{r=s+1}^{t} a_r\\Big)\\,(C_t^\\top B_s)\\,\\Delta_s x_s + D x_t.

    The products are ``torch.cumprod`` along ``t`` of a matrix holding ``a_t`` below the
    diagonal and 1 elsewhere: a product keeps its sign and stays exact where a decay is
    zero, which SSD's differences of cumulative log-decays cannot. The
    ``(b, h, l, l)`` matrix is small at the study's lengths (at most 120). Arguments and
    dt's softplus, bias and clamp are those of transformers' ``mamba2_chunk_scan``; an
    initial state (generation with a cache) is not supported. It computes in float32, as
    that does, or in float64 for float64 inputs (the tests' gradient checks).
    """
    if initial_states is not None:
        raise ValueError("signed transitions start from a zero state: initial_states is not supported")
    if dt_bias is not None:
        dt = dt + dt_bias
    if dt_softplus:
        dt = F.softplus(dt)
    dtype = torch.promote_types(hidden_states.dtype, torch.float32)
    dt = torch.clamp(dt, min=dt_limit[0], max=dt_limit[1]).to(dtype)
    x = hidden_states.to(dtype)
    heads = x.shape[2]
    B, C = (t.to(dtype).repeat_interleave(heads // t.shape[2], dim=2) for t in (B, C))
    decay = (2 * torch.exp(dt * A.to(dtype)) - 1).transpose(1, 2)  # (b, h, l)
    length = decay.shape[-1]
    below = torch.ones(length, length, dtype=torch.bool, device=x.device).tril(-1)
    factors = torch.where(below, decay.unsqueeze(-1), torch.ones_like(decay).unsqueeze(-1))
    products = torch.cumprod(factors, dim=-2).tril()  # [t, s]: a_{s+1} ... a_t for s <= t
    drive = x * dt.unsqueeze(-1)  # (b, l, h, p)
    weights = torch.einsum("bthn,bshn->bhts", C, B) * products
    y = torch.einsum("bhts,bshp->bthp", weights, drive)
    if D is not None:
        y = y + D.to(dtype)[:, None] * x
    if not return_final_states:
        return y
    final = torch.einsum("bhs,bshp,bshn->bhpn", products[:, :, -1], drive, B)
    return y, final


def split_conv1d_scan_combined(
    zxbcdt: torch.Tensor,
    conv1d_weight: torch.Tensor,
    conv1d_bias: torch.Tensor | None,
    dt_bias: torch.Tensor,
    A: torch.Tensor,
    D: torch.Tensor | None,
    chunk_size: int,
    initial_states: torch.Tensor | None = None,
    dt_limit: tuple[float, float] = (0.0, float("inf")),
    return_final_states: bool = False,
    activation: str = "silu",
    rmsnorm_weight: torch.Tensor | None = None,
    rmsnorm_eps: float = 1e-6,
    outproj_weight: torch.Tensor | None = None,
    outproj_bias: torch.Tensor | None = None,
    headdim: int | None = None,
    ngroups: int = 1,
    norm_before_gate: bool = True,
    seq_idx: torch.Tensor | None = None,
    **kwargs: object,
) -> torch.Tensor | None:
    """transformers' ``mamba2_split_conv1d_scan_combined`` signature, which ``Mamba2Mixer``
    calls in training: on CPU, for float32 sequences of up to
    :data:`QUADRATIC_MAX_LENGTH` positions,
    :class:`statelayers.models.kernels.mamba2_block.SplitConvScanNorm` and the output
    projection, bit-identical to the unfused path; ``None`` otherwise, on which the mixer
    runs its unfused path (Conv1D, :func:`chunk_scan`, gated norm)."""
    tensors = (zxbcdt, conv1d_weight, dt_bias, A, D, rmsnorm_weight, outproj_weight)
    if not (
        runs_cpu_kernels(zxbcdt)
        and not torch.is_autocast_enabled("cpu")
        and all(t is not None and t.dtype == torch.float32 for t in tensors)
        and zxbcdt.is_contiguous()
        and zxbcdt.shape[1] <= QUADRATIC_MAX_LENGTH
        and initial_states is None
        and seq_idx is None
        and not return_final_states
        and activation in ("silu", "swish")
        and not norm_before_gate
        and headdim
        and not _SIGNED.get()
    ):
        return None
    from statelayers.models.kernels.mamba2_block import SplitConvScanNorm

    normed = SplitConvScanNorm.apply(
        zxbcdt, conv1d_weight, conv1d_bias, dt_bias, A, D, rmsnorm_weight, rmsnorm_eps, headdim, ngroups,
        tuple(dt_limit),
    )  # fmt: skip
    return F.linear(normed, outproj_weight, outproj_bias)


def gated_norm_forward(
    self: modeling_mamba2.Mamba2RMSNormGated, hidden_states: torch.Tensor, gate: torch.Tensor | None = None
) -> torch.Tensor:
    """``Mamba2RMSNormGated.forward`` under the ``fast`` path: on CPU, for the float32
    output of the SSD and a gate, :func:`statelayers.models.kernels.gated_norm.gated_rms_norm`
    (one compiled pass per row each way instead of about ten tensor operations forward and
    twenty backward); otherwise transformers' own."""
    if gate is None or hidden_states.dtype != torch.float32 or not runs_cpu_kernels(hidden_states):
        return REFERENCE_GATED_NORM(self, hidden_states, gate)
    from statelayers.models.kernels.gated_norm import gated_rms_norm

    return gated_rms_norm(hidden_states, gate.float(), self.weight, self.variance_epsilon, self.group_size)
