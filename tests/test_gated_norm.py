"""Mamba-2's gated RMSNorm kernel equals transformers' ``Mamba2RMSNormGated`` in values
and gradients, is deterministic across thread counts, and is what the ``fast`` path runs."""

import pytest
import torch
from transformers.models.mamba2.modeling_mamba2 import Mamba2RMSNormGated

from statelayers.models.backends import use_backend
from statelayers.models.kernels.gated_norm import GatedRMSNorm, gated_rms_norm
from statelayers.models.mamba_scan import REFERENCE_GATED_NORM, gated_norm_forward


def norm_inputs(batch=3, length=7, channels=24, groups=1, seed=0):
    """A norm with random weights, its input, and its gate as the mixer hands it over: a
    strided slice of the input projection's output."""
    g = torch.Generator().manual_seed(seed)
    norm = Mamba2RMSNormGated(channels, group_size=channels // groups, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(channels, generator=g))
    projection = torch.randn(batch, length, 2 * channels + 5, generator=g)
    gate = projection[..., :channels]
    return norm, torch.randn(batch, length, channels, generator=g), gate


def values_and_gradients(forward, norm, x, gate):
    x, projection = x.clone().requires_grad_(), gate._base.clone().requires_grad_()
    norm.weight.grad = None
    out = forward(norm, x, projection[..., : x.shape[-1]])
    (out * torch.linspace(-1, 1, out.numel()).view_as(out)).pow(2).sum().backward()
    return out.detach(), x.grad, projection.grad, norm.weight.grad.clone()


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_the_kernel_matches_transformers_norm_in_values_and_gradients(groups):
    norm, x, gate = norm_inputs(groups=groups)
    fused = values_and_gradients(gated_norm_forward, norm, x, gate)
    reference = values_and_gradients(REFERENCE_GATED_NORM, norm, x, gate)
    for name, got, expected in zip(("output", "x", "gate", "weight"), fused, reference):
        scale = expected.abs().max()  # float32 rounding, relative to the largest entry
        torch.testing.assert_close(got / scale, expected / scale, rtol=1e-5, atol=1e-5, msg=name)
    assert fused[2][..., x.shape[-1] :].abs().max() == 0  # the rest of the projection gets nothing


def test_gradcheck_of_the_kernel_in_double_precision():
    g = torch.Generator().manual_seed(1)
    x, z = (torch.randn(2, 3, 8, generator=g, dtype=torch.float64).requires_grad_() for _ in range(2))
    weight = torch.randn(8, generator=g, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(lambda *a: GatedRMSNorm.apply(*a, 1e-6, 2), (x, z, weight))


def test_the_kernel_is_bit_identical_run_to_run_and_across_thread_counts():
    norm, x, gate = norm_inputs(batch=5, length=9, channels=40, groups=2)
    results = []
    for threads in (2, 2, 1):
        torch.set_num_threads(threads)
        results.append(values_and_gradients(gated_norm_forward, norm, x, gate))
    for other in results[1:]:
        assert all(torch.equal(a, b) for a, b in zip(other, results[0]))


def test_the_fast_path_runs_the_kernel_and_the_reference_path_transformers_norm(monkeypatch):
    calls = []
    monkeypatch.setattr(GatedRMSNorm, "apply", lambda *args: calls.append(args) or args[0])
    norm, x, gate = norm_inputs()
    try:
        use_backend("torch", scan="reference")
        norm(x, gate)
        assert not calls
        use_backend("torch", scan="fast")
        norm(x, gate)
        assert len(calls) == 1
        norm(x)  # no gate: transformers' norm
        norm(x.double(), gate.double())  # not float32: transformers' norm
        assert len(calls) == 1
    finally:
        use_backend("torch", scan="fast")


def test_the_kernel_rejects_channels_that_do_not_split_into_groups():
    with pytest.raises(ValueError, match="groups of 5"):
        gated_rms_norm(torch.randn(2, 3, 8), torch.randn(2, 3, 8), torch.ones(8), 1e-6, 5)
