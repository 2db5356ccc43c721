"""The fast causal convolution equals transformers' grouped ``F.conv1d`` reference."""

import inspect

import pytest
import torch
from transformers.models.mamba import modeling_mamba

from statelayers.causal_conv import causal_conv1d

REFERENCE_CONV = inspect.unwrap(modeling_mamba.causal_conv1d_fn)


@pytest.mark.parametrize("activation", [None, "silu"])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("length", [1, 3, 11])
def test_values_and_gradients_match_the_reference(activation, with_bias, length):
    g = torch.Generator().manual_seed(length)
    inputs = {
        "hidden_states": torch.randn(2, 6, length, generator=g),
        "weight": torch.randn(6, 4, generator=g),
        "bias": torch.randn(6, generator=g) if with_bias else None,
    }
    results = []
    for fn in (REFERENCE_CONV, causal_conv1d):
        leaves = {k: v.clone().requires_grad_() for k, v in inputs.items() if v is not None}
        out = fn(**{"bias": None, **leaves}, activation=activation)
        out.pow(2).sum().backward()
        results.append((out.detach(), {k: v.grad for k, v in leaves.items()}))
    (out_ref, grads_ref), (out_fast, grads_fast) = results
    torch.testing.assert_close(out_fast, out_ref, rtol=1e-5, atol=1e-5)
    for key in grads_ref:
        torch.testing.assert_close(grads_fast[key], grads_ref[key], rtol=1e-5, atol=1e-5, msg=key)


def test_each_output_sees_only_the_current_and_earlier_positions():
    x = torch.zeros(1, 3, 9, requires_grad=True)
    out = causal_conv1d(x, torch.randn(3, 4), torch.randn(3))
    out[0, :, 5].sum().backward()
    touched = x.grad[0].abs().sum(0).nonzero().flatten().tolist()
    assert touched == [2, 3, 4, 5]
