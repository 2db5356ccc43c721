"""Mamba backends: pure PyTorch everywhere, the CUDA kernels where they exist, same numbers.

The CUDA half runs only where a GPU and mamba-ssm + causal-conv1d are present
(``tools/gpu_check.sh`` installs the extra and runs it); elsewhere it is skipped.
Tolerances (float32): logits, states and loss within 1e-3 absolute + relative,
gradients within 1e-2: the kernels sum in another order and fuse the backward pass.

On CPU, stand-ins for the kernels check what the ``cuda`` backend does around them: the
input layout causal-conv1d accepts (:func:`statelayers.models.backends.kernel_layout`),
and whether transformers bound the kernels at all (``kernels_importable``).
"""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
from collections.abc import Callable

import pytest
import torch
from conftest import needs_cuda
from transformers.models.mamba import modeling_mamba
from transformers.models.mamba2 import modeling_mamba2

from statelayers.models import backends
from statelayers.models.backends import (
    KERNEL_FUNCTIONS,
    KERNEL_PACKAGES,
    counting_kernel_calls,
    implementation,
    kernel_layout,
    kernel_strides,
    kernels_importable,
    use_backend,
)
from statelayers.models.causal_conv import causal_conv1d
from statelayers.models.inference import predict
from statelayers.models.mamba_scan import (
    REFERENCE_CHUNK_SCAN,
    REFERENCE_SCAN,
    chunk_scan,
    selective_scan,
    split_conv1d_scan_combined,
)
from statelayers.models.spec import ModelSpec
from statelayers.models.tagger import build_model

OPTIONS = {"mamba": {"state_size": 8}, "mamba2": {"state_size": 16, "head_dim": 8, "chunk_size": 8}}
ARCHS = ["mamba", "mamba2", "mamba_noconv", "mamba2_noconv"]
CUDA = torch.cuda.is_available() and kernels_importable()
needs_kernels = needs_cuda(CUDA)


def kernel_functions():
    for module_name, names in KERNEL_FUNCTIONS.items():
        module = importlib.import_module(module_name)
        for name in names:
            yield f"{module_name}.{name}", getattr(module, name)


FAST = {
    "mamba_selective_scan": selective_scan,
    "mamba2_chunk_scan": chunk_scan,
    "causal_conv1d_fn": causal_conv1d,  # in both modules
    "mamba2_split_conv1d_scan_combined": split_conv1d_scan_combined,
}
"""What ``scan="fast"`` binds in transformers' Mamba and Mamba-2 modules (Mamba-2's fused
training block included); the rest stay transformers'."""


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


@needs_kernels
def test_the_cuda_backend_really_switches_to_the_kernels():
    use_backend("cuda", device="cuda")
    used = {name: implementation(function) for name, function in kernel_functions()}
    assert set(used.values()) <= set(KERNEL_PACKAGES), used
    use_backend("torch", device="cuda")
    assert {implementation(function) for _, function in kernel_functions()} <= {"transformers", "statelayers"}


@needs_kernels
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


REFERENCE_CONV = inspect.unwrap(modeling_mamba2.causal_conv1d_fn)


def stand_in_kernel(calls: list | None = None):
    """causal-conv1d's ``causal_conv1d_fn`` on CPU: the layout checks of its CUDA forward
    (csrc/causal_conv1d.cpp), then transformers' PyTorch convolution."""

    def causal_conv1d_fn(x, weight, bias=None, activation=None, **kwargs):
        assert x.stride(2) == 1 or x.stride(1) == 1
        if x.stride(1) == 1 and x.stride(2) > 1:  # channel-last
            assert x.shape[1] % 8 == 0, "causal_conv1d only supports channel dimension divisible by 8"
            assert x.stride(2) % 8 == 0 and x.stride(0) % 8 == 0, (
                "causal_conv1d with channel last layout requires strides (x.stride(0) and x.stride(2)) "
                f"to be multiples of 8, got {x.stride()}"
            )
        if calls is not None:
            calls.append(x.stride())
        return REFERENCE_CONV(x, weight, bias, activation)

    causal_conv1d_fn.__module__ = "causal_conv1d.causal_conv1d_interface"
    return causal_conv1d_fn


def channel_last(width: int, start: int, channels: int, batch: int = 3, length: int = 7) -> torch.Tensor:
    """``(batch, channels, length)``: channels ``start:start + channels`` of a ``(batch,
    length, width)`` projection, transposed, the view transformers hands the convolution."""
    projected = torch.randn(batch, length, width)
    return projected[..., start : start + channels].transpose(1, 2)


@pytest.mark.parametrize(
    "x, copied",
    [
        (channel_last(84, 32, 48), True),  # Mamba-2 at d_model 16, expand 2: width 84
        (channel_last(908, 384, 512), True),  # expand 3 at the study's d_model 128, state 64, head_dim 32
        (channel_last(30, 6, 12), True),  # channels not a multiple of 8: channels-first
        (channel_last(1168, 512, 640), False),  # the study's expand 4: width 1168
        (torch.randn(3, 48, 7), False),  # channels-first
        (channel_last(84, 32, 48, length=1), True),
    ],
)
def test_the_convolutions_input_gets_strides_the_kernel_accepts_and_the_same_result(x, copied):
    weight, bias = torch.randn(x.shape[1], 4), torch.randn(x.shape[1])
    kernel = stand_in_kernel()
    if copied:
        with pytest.raises(AssertionError, match="causal_conv1d"):
            kernel(x, weight, bias, "silu")
    laid_out = kernel_layout(x)
    assert (laid_out is not x) is copied
    torch.testing.assert_close(laid_out, x, rtol=0, atol=0)
    torch.testing.assert_close(
        kernel_strides(kernel)(x, weight, bias, activation="silu"),
        REFERENCE_CONV(x, weight, bias, "silu"),
        rtol=1e-6,
        atol=1e-6,  # F.conv1d may sum in another order for another layout
    )


def bound(package: str, name: str = "kernel", computes: Callable = lambda *args, **kwargs: None):
    """What transformers binds when ``package`` imports: a wrapper closing over its function
    ``name``, which ``computes``."""

    def kernel(*args, **kwargs):
        return computes(*args, **kwargs)

    kernel.__module__, kernel.__name__ = f"{package}.ops.stand_in", name

    def wrapped(*args, **kwargs):
        return kernel(*args, **kwargs)

    wrapped.__module__ = modeling_mamba2.__name__
    return wrapped


def test_kernels_count_as_importable_only_where_transformers_bound_every_function(monkeypatch):
    for key in backends._RESOLVED:  # whatever this machine bound: transformers' PyTorch references
        monkeypatch.setitem(backends._RESOLVED, key, bound("transformers"))
    assert not kernels_importable()
    key = (modeling_mamba2.__name__, "mamba2_chunk_scan")
    for module_name, name in backends._RESOLVED:
        package = "causal_conv1d" if "causal_conv1d" in name else "mamba_ssm"
        monkeypatch.setitem(backends._RESOLVED, (module_name, name), bound(package))
    assert kernels_importable()
    assert implementation(kernel_strides(bound("causal_conv1d"))) == "causal_conv1d"  # through the layout
    monkeypatch.setattr(modeling_mamba, "is_fast_path_available", False, raising=False)
    assert not kernels_importable()  # a transformers that says so
    monkeypatch.delattr(modeling_mamba, "is_fast_path_available")
    monkeypatch.setitem(backends._RESOLVED, key, bound("transformers"))
    assert not kernels_importable()  # one function fell back to PyTorch


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_the_cuda_backend_lays_out_mamba2s_convolution_input_for_the_kernel(monkeypatch, mode):
    """Mamba-2 at d_model 16 and state 16 (input projection width 100) under a ``cuda``
    backend whose causal-conv1d is the stand-in: the forward and backward pass run through
    it (in training too, here, since the fused kernel is transformers' PyTorch stand-in,
    which hands over to the unfused path)."""
    calls = []
    key = (modeling_mamba2.__name__, "causal_conv1d_fn")
    for other, function in backends._RESOLVED.items():  # a machine with mamba-ssm: its kernels off
        monkeypatch.setitem(backends._RESOLVED, other, inspect.unwrap(function))
    monkeypatch.setitem(backends._RESOLVED, key, stand_in_kernel(calls))
    monkeypatch.setattr(backends, "resolve_backend", lambda backend, device="cpu": "cuda")
    try:
        torch.manual_seed(0)
        spec = ModelSpec("mamba2", 6, 4, d_model=16, n_layers=2, options=OPTIONS["mamba2"])
        model = getattr(build_model(spec, {"backend": "cuda"}), mode)()
        assert model.backend == "cuda" and implementation(modeling_mamba2.causal_conv1d_fn) == "causal_conv1d"
        tokens = torch.randint(0, 6, (3, 9))
        kernels = model(tokens)
        kernels.logsumexp(-1).mean().backward()
        assert len(calls) == 2  # a block each
    finally:
        monkeypatch.undo()
        use_backend("torch")
    if mode == "eval":
        torch.testing.assert_close(kernels, model(tokens), rtol=1e-5, atol=1e-5)


KERNEL_SETTINGS = """import os
from statelayers import runtime
runtime.start()
started = os.environ.get("MAMBA_DETERMINISTIC")
del os.environ["MAMBA_DETERMINISTIC"]
from statelayers.models import backends
print(started, os.environ.get("MAMBA_DETERMINISTIC"))
"""


@pytest.mark.parametrize("preset", [None, "0"])
def test_jobs_and_the_backends_module_run_the_kernels_deterministically_unless_told_otherwise(preset):
    """``runtime.start`` (every job) and importing the backends (the tests, the benchmarks)
    set ``MAMBA_DETERMINISTIC=1``, as tools/gpu_check.sh does, before mamba-ssm is imported;
    a value already in the environment stays."""
    env = {k: v for k, v in os.environ.items() if k != "MAMBA_DETERMINISTIC"}
    if preset is not None:
        env["MAMBA_DETERMINISTIC"] = preset
    code = (
        KERNEL_SETTINGS
        if preset is None
        else KERNEL_SETTINGS.replace('del os.environ["MAMBA_DETERMINISTIC"]', "")
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    expected = preset or "1"
    assert result.stdout.split() == [expected, expected]


PACKAGE_FUNCTIONS = {
    "causal_conv1d_fn": ("causal_conv1d", "causal_conv1d_fn"),
    "mamba_inner_fn": ("mamba_ssm", "mamba_inner_fn"),
    "mamba_selective_scan": ("mamba_ssm", "selective_scan_fn"),
    "mamba2_split_conv1d_scan_combined": ("mamba_ssm", "mamba_split_conv1d_scan_combined"),
    "mamba2_chunk_scan": ("mamba_ssm", "mamba_chunk_scan_combined"),
}
"""The package function behind each kernel function a mixer calls without a cache."""
TRAINING_KERNELS = {"mamba": ["mamba_inner_fn"], "mamba2": ["mamba_split_conv1d_scan_combined"]}
EVALUATION_KERNELS = {
    "mamba": ["causal_conv1d_fn", "selective_scan_fn"],
    "mamba2": ["causal_conv1d_fn", "mamba_chunk_scan_combined"],
}
"""What each family's mixer calls of the packages in training (one fused kernel for the
block, the convolution included) and outside it (the convolution, then the scan)."""


def kernel_calls(model, tokens: torch.Tensor):
    """The kernel calls of a training pass of ``model`` (forward and backward in train
    mode, what a training step runs) and of an evaluation (:func:`predict`, as the jobs evaluate)."""
    with counting_kernel_calls() as training:
        model.train()
        model(tokens).float().logsumexp(-1).mean().backward()
    with counting_kernel_calls() as evaluation:
        predict(model, tokens.cpu().numpy())
    return dict(training), dict(evaluation)


def expected_calls(family: str, kernels: list[str], layers: int) -> dict[str, int]:
    return {f"{family}.{kernel}": layers for kernel in kernels}


@pytest.mark.parametrize("family", ["mamba", "mamba2"])
def test_kernel_calls_are_counted_where_they_enter_the_kernel_package(monkeypatch, family):
    """Stand-ins for the packages' functions, bound as transformers binds them (into the
    module attributes the mixers read) and computing what the torch backend computes. The
    fused kernels' stand-ins return nothing, as transformers' PyTorch references do, so in
    training the mixer goes on to its unfused path: the counts show that too, as they would
    a silent fallback on a GPU."""
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    spec = ModelSpec(family, 6, 4, d_model=16, n_layers=2, options=OPTIONS[family])
    model = build_model(spec)  # the torch backend: nothing is a kernel, nothing is counted
    tokens = torch.randint(0, 6, (3, 9))
    assert kernel_calls(model, tokens) == ({}, {})
    for name, (package, function) in PACKAGE_FUNCTIONS.items():
        if hasattr(module, name):
            computes = [] if function in TRAINING_KERNELS[family] else [getattr(module, name)]  # fused: None
            monkeypatch.setattr(module, name, bound(package, function, *computes))
    training, evaluation = kernel_calls(model, tokens)
    unfused = TRAINING_KERNELS[family] + EVALUATION_KERNELS[family]
    assert training == expected_calls(family, unfused, layers=2)
    assert evaluation == expected_calls(family, EVALUATION_KERNELS[family], layers=2)
    with counting_kernel_calls() as counts:
        pass
    predict(model, tokens.numpy())
    assert not counts  # counted inside the block only
    for name in PACKAGE_FUNCTIONS:
        if hasattr(module, name):
            assert implementation(getattr(module, name)) in KERNEL_PACKAGES  # the functions put back


@needs_kernels
@pytest.mark.parametrize("arch", ARCHS)
def test_under_cuda_a_training_step_and_an_evaluation_call_every_kernel_of_their_mixer(arch):
    """The backends agreeing proves nothing if both ran PyTorch: each kernel must have been
    called, once a layer, and nothing else (a fallback adds the unfused path's calls)."""
    family = arch.removesuffix("_noconv")
    use_backend("cuda", device="cuda")
    try:
        spec = ModelSpec(arch, 6, 4, d_model=16, n_layers=2, options=OPTIONS[family])
        model = build_model(spec, {"backend": "cuda"}, device="cuda").cuda()
        training, evaluation = kernel_calls(model, torch.randint(0, 6, (3, 9), device="cuda"))
    finally:
        use_backend("torch")
    assert training == expected_calls(family, TRAINING_KERNELS[family], layers=2)
    assert evaluation == expected_calls(family, EVALUATION_KERNELS[family], layers=2)
