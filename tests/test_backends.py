"""Mamba backends: pure PyTorch everywhere, the CUDA kernels where they exist, same numbers.

The CUDA half runs only where a GPU and mamba-ssm + causal-conv1d are present
(``tools/gpu_check.sh`` installs the extra and runs it); elsewhere it is skipped.
Tolerances (float32): logits, states and loss within 1e-3 absolute + relative,
gradients within 1e-2: the kernels sum in another order and fuse the backward pass.
"""

from __future__ import annotations

import importlib
import inspect

import pytest
import torch
from transformers.models.mamba import modeling_mamba
from transformers.models.mamba2 import modeling_mamba2

from statelayers.models.backends import (
    KERNEL_FUNCTIONS,
    KERNEL_PACKAGES,
    implementation,
    kernels_importable,
    use_backend,
)
from statelayers.models.causal_conv import causal_conv1d
from statelayers.models.mamba_scan import REFERENCE_CHUNK_SCAN, REFERENCE_SCAN, chunk_scan, selective_scan
from statelayers.models.spec import ModelSpec
from statelayers.models.tagger import build_model

OPTIONS = {"mamba": {"state_size": 8}, "mamba2": {"state_size": 16, "head_dim": 8, "chunk_size": 8}}
ARCHS = ["mamba", "mamba2", "mamba_noconv", "mamba2_noconv"]
CUDA = torch.cuda.is_available() and kernels_importable()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU and mamba-ssm + causal-conv1d")


def kernel_functions():
    for module_name, names in KERNEL_FUNCTIONS.items():
        module = importlib.import_module(module_name)
        for name in names:
            yield f"{module_name}.{name}", getattr(module, name)


FAST = {
    "mamba_selective_scan": selective_scan,
    "mamba2_chunk_scan": chunk_scan,
    "causal_conv1d_fn": causal_conv1d,  # in both modules
}
"""What ``scan="fast"`` binds in transformers' Mamba and Mamba-2 modules; the rest stay transformers'."""


def test_torch_backend_runs_every_kernel_function_in_pytorch():
    try:
        assert use_backend("torch", scan="reference") == "torch"
        for where, function in kernel_functions():
            assert inspect.unwrap(function) is function, where  # no kernel wrapper left
            assert implementation(function) == "transformers", where
        assert modeling_mamba.mamba_selective_scan is REFERENCE_SCAN
        assert modeling_mamba2.mamba2_chunk_scan is REFERENCE_CHUNK_SCAN
        assert use_backend("torch", scan="fast") == "torch"
        redirected = set()
        for where, function in kernel_functions():
            name = where.rsplit(".", 1)[1]
            if name in FAST:
                assert function is FAST[name], where
                redirected.add(name)
            else:
                assert inspect.unwrap(function) is function, where
                assert implementation(function) == "transformers", where
        assert redirected == set(FAST)
    finally:
        use_backend("torch", scan="fast")


def test_auto_is_torch_without_cuda_and_cuda_without_a_gpu_is_an_error():
    assert use_backend("auto", device="cpu") == "torch"
    with pytest.raises(RuntimeError, match=r"needs the model on a CUDA device.*pip install -e '\.\[gpu\]'"):
        use_backend("cuda", device="cpu")
    with pytest.raises(ValueError, match="unknown Mamba backend"):
        use_backend("triton")


@pytest.mark.parametrize("arch", ["mamba", "mamba2", "gru"])
def test_the_model_says_which_backend_it_runs_under(arch):
    model = build_model(ModelSpec(arch, 4, 3, d_model=16, n_layers=1, options=OPTIONS.get(arch, {})))
    assert model.backend == (None if arch == "gru" else "torch")


def run(model, tokens, backend):
    """Logits, every layer's state, loss and gradients under ``backend``."""
    use_backend(backend, device="cuda")
    model.zero_grad()
    logits, states = model(tokens, return_states=True)
    loss = logits.float().logsumexp(-1).mean()
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return logits.detach(), [s.detach() for s in states], loss.detach(), grads


@needs_cuda
def test_the_cuda_backend_really_switches_to_the_kernels():
    use_backend("cuda", device="cuda")
    used = {name: implementation(function) for name, function in kernel_functions()}
    assert set(used.values()) <= set(KERNEL_PACKAGES), used
    use_backend("torch", device="cuda")
    assert {implementation(function) for _, function in kernel_functions()} <= {"transformers", "statelayers"}


@needs_cuda
@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("arch", ARCHS)
def test_both_backends_give_the_same_numbers(arch, mode):
    torch.manual_seed(0)
    family = arch.removesuffix("_noconv")
    model = build_model(ModelSpec(arch, 6, 4, d_model=32, n_layers=2, options=OPTIONS[family]), device="cuda")
    model = getattr(model.cuda(), mode)()
    tokens = torch.randint(0, 6, (4, 40), device="cuda")
    reference, kernels = run(model, tokens, "torch"), run(model, tokens, "cuda")
    for ours, theirs in zip(reference[:3], kernels[:3]):
        if isinstance(ours, list):
            for a, b in zip(ours, theirs):
                torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-3)
        else:
            torch.testing.assert_close(theirs, ours, rtol=1e-3, atol=1e-3)
    assert reference[3].keys() == kernels[3].keys()
    for name, grad in reference[3].items():
        torch.testing.assert_close(kernels[3][name], grad, rtol=1e-2, atol=1e-2, msg=name)
    use_backend("torch")
