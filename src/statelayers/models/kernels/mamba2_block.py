"""Mamba-2's mixer between its two projections, in training, as one autograd function
whose kernels read their inputs from the input projection and write their gradients
straight into that projection's gradient.

transformers' ``Mamba2Mixer`` splits the input projection ``zxbcdt`` into the gate
``z``, the convolution's input ``xBC`` and the step sizes ``dt``, and splits the
convolution's output into ``x``, ``B`` and ``C``. Under autograd each split is a view
whose gradients are concatenated again in the backward pass, and each kernel of
:mod:`statelayers.models.kernels` takes and returns its own contiguous tensors, so a
training step copies most ``(batch, length, channels)`` tensors of the layer once more
each way (``aten::cat`` and ``aten::copy_``, about a tenth of the step). Here the
Conv1D (:mod:`~statelayers.models.kernels.causal_conv`), SSD
(:mod:`~statelayers.models.kernels.ssd_quadratic`) and gated RMSNorm
(:mod:`~statelayers.models.kernels.gated_norm`) kernels read the columns of
``zxbcdt`` and of the convolution's output they need in place, and their backward passes
write ``z``'s, ``xBC``'s and ``x``'s gradients into the columns of one buffer each.
The kernels run a little slower on those wider rows, so the step gains less than the
copies took: 2-6 % at one thread (benchmarks/README.md, section ``mamba_step.csv``).

The arithmetic is the unfused path's, operation for operation: the same kernels, and
the step sizes ``clamp(softplus(dt + b))`` and the scores ``C B^T`` by the same
functions (``ssd_quadratic.step_sizes`` and ``ssd_scores``; their backward passes by
autograd, on the saved inputs). So outputs and
gradients are bit-identical to it (``tests/test_mamba2_block.py``); only copies go.
transformers calls it as ``mamba2_split_conv1d_scan_combined``
(:func:`statelayers.models.mamba_scan.split_conv1d_scan_combined`), the hook that
mamba-ssm's fused kernel fills on a GPU.
"""

from __future__ import annotations

import torch

from statelayers.models.kernels.causal_conv import causal_conv_backward, causal_conv_forward
from statelayers.models.kernels.gated_norm import gated_rms_norm_backward, gated_rms_norm_forward
from statelayers.models.kernels.ssd_quadratic import (
    quadratic_ssd_backward,
    quadratic_ssd_forward,
    ssd_scores,
    step_sizes,
)


def _scores(
    conv_out: torch.Tensor, start: int, groups: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``B``, ``C`` (views of ``conv_out``'s columns from ``start``) and their scores."""
    batch, length, channels = conv_out.shape
    state = (channels - start) // (2 * groups)
    B = conv_out[..., start : start + groups * state].view(batch, length, groups, state)
    C = conv_out[..., start + groups * state :].view(batch, length, groups, state)
    return B, C, ssd_scores(B, C)


class SplitConvScanNorm(torch.autograd.Function):
    """``rmsnorm_gated(SSD(conv(xBC), dt), z)`` from ``zxbcdt (batch, L, d_inner +
    conv_dim + heads)``, contiguous float32 CPU tensors, a SiLU convolution, the gate
    after the SSD (``norm_before_gate=False``). ``conv_weight (conv_dim, k)``; returns
    ``(batch, L, d_inner)``."""

    @staticmethod
    def forward(
        ctx, projected, conv_weight, conv_bias, dt_bias, A, D, norm_weight, eps, head_dim, groups, dt_limit
    ):
        projected = projected.detach()
        batch, length, _ = projected.shape
        d_inner, conv_dim = norm_weight.shape[0], conv_weight.shape[0]
        weight_t = conv_weight.detach().t().contiguous()
        bias = conv_weight.new_zeros(conv_dim) if conv_bias is None else conv_bias.detach().contiguous()
        conv_out = causal_conv_forward(projected, d_inner, weight_t, bias, True)
        dt = step_sizes(projected[..., d_inner + conv_dim :], dt_bias.detach(), True, dt_limit)
        _, _, scores = _scores(conv_out, d_inner, groups)
        A, D, norm_weight = (t.detach().contiguous() for t in (A, D, norm_weight))
        y = quadratic_ssd_forward(conv_out, 0, dt, A, scores, D, head_dim).view(batch, length, d_inner)
        out, rstd = gated_rms_norm_forward(y, projected, 0, norm_weight, eps, groups)
        ctx.save_for_backward(
            projected, weight_t, bias, conv_out, dt_bias, A, D, dt, scores, y, norm_weight, rstd
        )
        ctx.has_bias = conv_bias is not None
        ctx.head_dim, ctx.groups, ctx.dt_limit = head_dim, groups, dt_limit
        return out

    @staticmethod
    def backward(ctx, grad_out):
        projected, weight_t, bias, conv_out, dt_bias, A, D, dt, scores, y, norm_weight, rstd = (
            ctx.saved_tensors
        )
        batch, length, d_inner = y.shape
        conv_dim, heads = conv_out.shape[2], dt.shape[2]
        grad_projected = torch.empty_like(projected)
        grad_y, grad_norm_weight = gated_rms_norm_backward(
            y, projected, 0, norm_weight, rstd, grad_out, grad_projected
        )
        grad_conv_out = torch.empty_like(conv_out)
        grad_dt, grad_A, grad_scores, grad_D = quadratic_ssd_backward(
            grad_y.view(batch, length, heads, ctx.head_dim), conv_out, 0, dt, A, scores, D, grad_conv_out
        )
        with torch.enable_grad():  # the PyTorch operations of the forward pass, again, for their gradients
            dt_raw = projected[..., d_inner + conv_dim :].detach().requires_grad_()
            dt_bias_leaf = dt_bias.detach().requires_grad_()
            conv_leaf = conv_out.detach().requires_grad_()
            B, C, scores_again = _scores(conv_leaf, d_inner, ctx.groups)
            grad_B, grad_C, grad_dt_raw, grad_dt_bias = torch.autograd.grad(
                (scores_again, step_sizes(dt_raw, dt_bias_leaf, True, ctx.dt_limit)),
                (B, C, dt_raw, dt_bias_leaf),
                (grad_scores, grad_dt),
            )
        state_columns = ctx.groups * B.shape[3]
        grad_conv_out[..., d_inner : d_inner + state_columns].view_as(B).copy_(grad_B)
        grad_conv_out[..., d_inner + state_columns :].view_as(C).copy_(grad_C)
        grad_weight, grad_bias = causal_conv_backward(
            projected, d_inner, weight_t, bias, True, grad_conv_out, grad_projected
        )
        grad_projected[..., d_inner + conv_dim :] = grad_dt_raw
        return (grad_projected, grad_weight.t(), grad_bias if ctx.has_bias else None, grad_dt_bias, grad_A,
                grad_D, grad_norm_weight, None, None, None, None)  # fmt: skip
