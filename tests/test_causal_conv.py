"""The fast causal convolution (the numba kernel on CPU, PyTorch multiply-adds elsewhere)
equals transformers' grouped ``F.conv1d`` reference."""

import inspect

import pytest
import torch
from transformers.models.mamba import modeling_mamba

from statelayers.models.causal_conv import causal_conv1d, torch_causal_conv1d

REFERENCE_CONV = inspect.unwrap(modeling_mamba.causal_conv1d_fn)


@pytest.mark.parametrize("fast", [causal_conv1d, torch_causal_conv1d], ids=["cpu-kernel", "pytorch"])
@pytest.mark.parametrize("activation", [None, "silu"])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("length", [1, 3, 11])
def test_values_and_gradients_match_the_reference(fast, activation, with_bias, length):
    g = torch.Generator().manual_seed(length)
    inputs = {
        "hidden_states": torch.randn(2, 6, length, generator=g),
        "weight": torch.randn(6, 4, generator=g),
        "bias": torch.randn(6, generator=g) if with_bias else None,
    }
    results = []
    for fn in (REFERENCE_CONV, fast):
        leaves = {k: v.clone().requires_grad_() for k, v in inputs.items() if v is not None}
        out = fn(**{"bias": None, **leaves}, activation=activation)
        out.pow(2).sum().backward()
        results.append((out.detach(), {k: v.grad for k, v in leaves.items()}))
    (out_ref, grads_ref), (out_fast, grads_fast) = results
    torch.testing.assert_close(out_fast, out_ref, rtol=1e-5, atol=1e-5)
    for key in grads_ref:
        torch.testing.assert_close(grads_fast[key], grads_ref[key], rtol=1e-5, atol=1e-5, msg=key)


@pytest.mark.parametrize("fast", [causal_conv1d, torch_causal_conv1d], ids=["cpu-kernel", "pytorch"])
def test_each_output_sees_only_the_current_and_earlier_positions(fast):
    x = torch.zeros(1, 3, 9, requires_grad=True)
    out = fast(x, torch.randn(3, 4), torch.randn(3))
    out[0, :, 5].sum().backward()
    touched = x.grad[0].abs().sum(0).nonzero().flatten().tolist()
    assert touched == [2, 3, 4, 5]


def test_the_cpu_kernel_takes_the_mixers_transposed_views_and_is_deterministic():
    """transformers passes a (batch, channels, length) view of its (batch, length, 2c)
    projection; results must not depend on the layout, nor differ between reruns."""
    g = torch.Generator().manual_seed(0)
    projected = torch.randn(3, 7, 2 * 70, generator=g)
    weight, bias = torch.randn(70, 4, generator=g), torch.randn(70, generator=g)
    view = projected.transpose(1, 2)[:, :70]
    runs = []
    for x in (view, view.contiguous(), view):
        leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
        out = causal_conv1d(*leaves, activation="silu")
        (out * torch.arange(out.numel()).view_as(out).sin()).sum().backward()
        runs.append((out.detach(), [t.grad for t in leaves]))
    reference = REFERENCE_CONV(view, weight, bias, activation="silu")
    torch.testing.assert_close(runs[0][0], reference, rtol=1e-5, atol=1e-5)
    for out, grads in runs[1:]:
        assert torch.equal(out, runs[0][0]) and all(torch.equal(a, b) for a, b in zip(grads, runs[0][1]))
