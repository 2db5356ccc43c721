"""On a GPU, the fast Mamba-1 scan equals mamba-ssm's CUDA kernel and transformers' reference.

tests/test_mamba_scan.py checks the fast scan against the reference on CPU; the kernel
(``selective_scan_cuda``, behind ``selective_scan_fn``) is what the ``cuda`` backend
runs in eval mode. Skipped without a GPU and the kernels (tools/gpu_check.sh builds
them). Tolerances as in tests/test_backends.py: the kernel sums in another order. The
loss leaves out the last state, which the kernel's backward pass ignores.
"""

import pytest
import torch
from conftest import needs_cuda
from test_mamba_scan import scan_inputs

from statelayers.models.backends import kernels_importable
from statelayers.models.mamba_scan import REFERENCE_SCAN, selective_scan

CUDA = torch.cuda.is_available() and kernels_importable()


@needs_cuda(CUDA)
def test_the_fast_scan_on_a_gpu_matches_the_cuda_kernel_and_the_reference_with_gradients():
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn

    results = {}
    for name, scan in (
        ("kernel", selective_scan_fn),
        ("fast", selective_scan),
        ("reference", REFERENCE_SCAN),
    ):
        inputs = {k: v.cuda().requires_grad_() for k, v in scan_inputs(length=40).items()}
        # positional: the kernel names its arguments u, delta, ..., transformers hidden_states, dt, ...
        y, last = scan(*inputs.values(), delta_softplus=True, return_last_state=True)
        y.pow(2).sum().backward()
        results[name] = (y.detach(), last.detach(), {k: v.grad for k, v in inputs.items()})
    y_kernel, last_kernel, grad_kernel = results["kernel"]
    for name in ("fast", "reference"):
        y, last, grads = results[name]
        torch.testing.assert_close(y, y_kernel, rtol=1e-3, atol=1e-3, msg=lambda m: f"{name} y: {m}")
        torch.testing.assert_close(
            last, last_kernel, rtol=1e-3, atol=1e-3, msg=lambda m: f"{name} state: {m}"
        )
        for key, grad in grad_kernel.items():
            torch.testing.assert_close(
                grads[key], grad, rtol=1e-2, atol=1e-2, msg=lambda m: f"{name} {key}: {m}"
            )
