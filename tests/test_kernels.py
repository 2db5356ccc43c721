"""The fused numba kernels and Mamba-2's quadratic single-chunk SSD equal transformers'
PyTorch code; the kernels are deterministic, follow torch's thread count, and their
exponential is vectorised."""

import os
import platform
import re
import subprocess
import sys

import numba
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from numba import njit

from statelayers.models.kernels.elementwise import FASTMATH, exp, sigmoid, softplus
from statelayers.models.kernels.selective_scan import selective_scan_fn
from statelayers.models.kernels.ssd import mamba_chunk_scan_combined
from statelayers.models.kernels.ssd_quadratic import QuadraticSSD, decays_to_end
from statelayers.models.kernels.ssd_quadratic import mamba_chunk_scan_combined as quadratic_chunk_scan
from statelayers.models.mamba_scan import REFERENCE_CHUNK_SCAN, REFERENCE_SCAN


def mamba_inputs(batch=3, channels=70, length=11, state=4, dtype=torch.float32, seed=0):
    """Mamba-1 scan inputs; 70 channels span two channel blocks, the second partial."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: torch.randn(*shape, generator=g, dtype=dtype)  # noqa: E731
    return dict(
        u=r(batch, channels, length),
        delta=r(batch, channels, length),
        A=-torch.rand(channels, state, generator=g, dtype=dtype) * 4,
        B=r(batch, state, length),
        C=r(batch, state, length),
        D=r(channels),
        z=r(batch, channels, length),
        delta_bias=r(channels),
    )


def mamba2_inputs(batch=3, length=13, heads=4, head_dim=5, groups=2, state=6, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: torch.randn(*shape, generator=g, dtype=dtype)  # noqa: E731
    return dict(
        x=r(batch, length, heads, head_dim),
        dt=r(batch, length, heads),
        A=-torch.rand(heads, generator=g, dtype=dtype) * 3,
        B=r(batch, length, groups, state),
        C=r(batch, length, groups, state),
        D=r(heads),
        dt_bias=r(heads),
    )


def mamba_fused(i, **options):
    return selective_scan_fn(
        i["u"], i["delta"], i["A"], i["B"], i["C"], i.get("D"), i.get("z"), i.get("delta_bias"),
        delta_softplus=options.get("softplus", True), return_last_state=True,
    )  # fmt: skip


def mamba_reference(i, **options):
    return REFERENCE_SCAN(
        i["u"], i["delta"], i["A"], i["B"], i["C"], D=i.get("D"), z=i.get("z"),
        delta_bias=i.get("delta_bias"), delta_softplus=options.get("softplus", True), return_last_state=True,
    )  # fmt: skip


def mamba2_fused(i, chunk_size=5, dt_limit=(0.0, float("inf"))):
    return mamba_chunk_scan_combined(
        i["x"], i["dt"], i["A"], i["B"], i["C"], chunk_size, D=i.get("D"), dt_bias=i.get("dt_bias"),
        dt_softplus=True, dt_limit=dt_limit, return_final_states=True,
    )  # fmt: skip


def mamba2_quadratic(i, chunk_size=5, dt_limit=(0.0, float("inf"))):
    return quadratic_chunk_scan(
        i["x"], i["dt"], i["A"], i["B"], i["C"], chunk_size, D=i.get("D"), dt_bias=i.get("dt_bias"),
        dt_softplus=True, dt_limit=dt_limit, return_final_states=True,
    )  # fmt: skip


MAMBA2_SCANS = pytest.mark.parametrize(
    "scan", [mamba2_fused, mamba2_quadratic], ids=["step-by-step", "quadratic"]
)


def mamba2_reference(i, chunk_size=5, dt_limit=(0.0, float("inf"))):
    return REFERENCE_CHUNK_SCAN(
        i["x"], i["dt"], i["A"], i["B"], i["C"], chunk_size, D=i.get("D"), dt_bias=i.get("dt_bias"),
        dt_softplus=True, dt_limit=dt_limit, return_final_states=True,
    )  # fmt: skip


def outputs_and_gradients(fn, inputs, **options):
    leaves = {k: v.clone().requires_grad_() for k, v in inputs.items()}
    out, last = fn(leaves, **options)
    (out.pow(2).sum() + (last * torch.linspace(-1, 1, last.numel()).view_as(last)).sum()).backward()
    return out.detach(), last.detach(), {k: v.grad for k, v in leaves.items()}


def assert_same(fused, reference, rtol=1e-4, atol=1e-4):
    (out, last, grads), (out_ref, last_ref, grads_ref) = fused, reference
    torch.testing.assert_close(out, out_ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(last, last_ref, rtol=1e-5, atol=1e-5)
    assert grads.keys() == grads_ref.keys()
    for key in grads_ref:
        # gradients of a squared sum reach 1e4: compare relative to the largest (A's is 0 at length 1)
        scale = grads_ref[key].abs().max().clamp_min(1e-12)
        torch.testing.assert_close(grads[key] / scale, grads_ref[key] / scale, rtol=rtol, atol=atol, msg=key)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "drop",
    [(), ("D",), ("z",), ("delta_bias",), ("D", "z", "delta_bias")],
    ids=lambda d: "-".join(d) or "all",
)
def test_the_mamba_kernel_matches_transformers_in_values_and_gradients(threads, drop):
    torch.set_num_threads(threads)
    inputs = {k: v for k, v in mamba_inputs().items() if k not in drop}
    assert_same(outputs_and_gradients(mamba_fused, inputs), outputs_and_gradients(mamba_reference, inputs))


def test_the_mamba_kernel_without_softplus_takes_the_step_size_as_given():
    inputs = mamba_inputs()
    inputs["delta"], inputs["delta_bias"] = inputs["delta"].abs(), inputs["delta_bias"].abs()  # steps >= 0
    fused = outputs_and_gradients(mamba_fused, inputs, softplus=False)
    assert_same(fused, outputs_and_gradients(mamba_reference, inputs, softplus=False))


@MAMBA2_SCANS
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("length, chunk_size", [(13, 5), (40, 20), (64, 20), (60, 20), (7, 20), (1, 4)])
def test_both_mamba2_scans_match_transformers_at_every_length(scan, threads, length, chunk_size):
    """Lengths that are and are not multiples of the chunk (transformers pads those)."""
    torch.set_num_threads(threads)
    inputs = mamba2_inputs(length=length)
    ours = outputs_and_gradients(scan, inputs, chunk_size=chunk_size)
    assert_same(ours, outputs_and_gradients(mamba2_reference, inputs, chunk_size=chunk_size))


@MAMBA2_SCANS
@pytest.mark.parametrize("heads, groups", [(4, 1), (4, 4), (6, 3)])
def test_both_mamba2_scans_match_transformers_for_any_grouping_of_heads(scan, heads, groups):
    inputs = mamba2_inputs(length=40, heads=heads, groups=groups)
    ours = outputs_and_gradients(scan, inputs, chunk_size=20)
    assert_same(ours, outputs_and_gradients(mamba2_reference, inputs, chunk_size=20))


@MAMBA2_SCANS
def test_both_mamba2_scans_clamp_step_sizes_like_transformers(scan):
    inputs = mamba2_inputs()
    limits = {"dt_limit": (0.2, 1.5)}
    ours, reference = (
        outputs_and_gradients(scan, inputs, **limits),
        outputs_and_gradients(mamba2_reference, inputs, **limits),
    )
    assert_same(ours, reference)
    unclamped = outputs_and_gradients(scan, inputs)
    assert not torch.allclose(ours[0], unclamped[0])  # the limits bind on these inputs


@MAMBA2_SCANS
def test_both_mamba2_scans_without_skip_or_bias_match_transformers(scan):
    inputs = {k: v for k, v in mamba2_inputs().items() if k not in ("D", "dt_bias")}
    assert_same(outputs_and_gradients(scan, inputs), outputs_and_gradients(mamba2_reference, inputs))


def test_the_quadratic_form_equals_the_step_by_step_kernel_where_decays_are_extreme():
    """Step sizes up to ~30 and decay rates up to 40 drive the running sum of exponents
    to -10^4 within 64 steps: nothing overflows, underflows into NaN or loses accuracy."""
    inputs = mamba2_inputs(length=64, heads=4, groups=1)
    inputs["A"] = -torch.linspace(0.5, 40, 4)
    inputs["dt"] = inputs["dt"] * 10
    quadratic, stepwise = outputs_and_gradients(mamba2_quadratic, inputs), outputs_and_gradients(
        mamba2_fused, inputs
    )
    assert all(torch.isfinite(t).all() for t in (quadratic[0], quadratic[1], *quadratic[2].values()))
    assert_same(quadratic, stepwise)


def quadratic_ssd_inputs(batch=2, length=64, heads=4, head_dim=5, groups=2, dtype=torch.float32, seed=0):
    """Step sizes and decay rates whose running sums of exponents reach about -2000 within 64 steps."""
    generator = torch.Generator().manual_seed(seed)
    return (
        torch.randn(batch, length, heads, head_dim, generator=generator, dtype=dtype),  # x
        torch.rand(batch, length, heads, generator=generator, dtype=dtype) * 2,  # dt
        -torch.rand(heads, generator=generator, dtype=dtype) * 30,  # A
        torch.randn(batch, groups, length, length, generator=generator, dtype=dtype),  # scores
        torch.randn(heads, generator=generator, dtype=dtype),  # D
    )


def test_the_fused_quadratic_ssd_equals_its_formula_summed_pair_by_pair_in_float64():
    """``y_t = D x_t + sum_{s<=t} exp(sum_{s<r<=t} dt_r A) scores_ts dt_s x_s``, the sums of
    exponents in float64 from each pair's own terms: differences of a float32 cumulative sum
    would be off by ~1e-4 relative here, float64 prefix sums leave float32's rounding of
    each exponent (at most 80 x 6e-8 where the decay is not 0). Heads 0-1 read group 0's
    scores, heads 2-3 group 1's; entries of ``scores`` above the diagonal change nothing;
    the last row of the decays is :func:`decays_to_end`."""
    x, dt, A, scores, D = quadratic_ssd_inputs()
    out = QuadraticSSD.apply(x, dt, A, scores, D).double()
    a = (dt * A).double().transpose(1, 2)  # (batch, heads, length)
    decay = torch.zeros(2, 4, 64, 64, dtype=torch.float64)
    for t in range(64):
        for s in range(t + 1):
            decay[..., t, s] = a[..., s + 1 : t + 1].sum(-1).exp()
    weights = decay * scores.double().repeat_interleave(2, dim=1) * dt.double().transpose(1, 2)[:, :, None, :]
    expected = torch.einsum("bhts,bshp->bthp", weights, x.double()) + D.double()[:, None] * x.double()
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    assert torch.equal(
        QuadraticSSD.apply(x, dt, A, scores + torch.ones(64, 64).triu(1) * 1e6, D), out.float()
    )
    torch.testing.assert_close(
        decays_to_end(dt.transpose(1, 2) * A[:, None]).double(), decay[..., -1, :], rtol=1e-5, atol=2e-35
    )


@MAMBA2_SCANS
@pytest.mark.parametrize("groups", [1, 2])
def test_gradcheck_of_both_mamba2_scans_in_double_precision(scan, groups):
    inputs = mamba2_inputs(
        batch=2, length=4, heads=2, head_dim=3, groups=groups, state=2, dtype=torch.float64, seed=1
    )
    names = list(inputs)
    leaves = [inputs[k].requires_grad_() for k in names]
    assert torch.autograd.gradcheck(lambda *args: scan(dict(zip(names, args))), leaves)


def test_gradcheck_of_the_fused_quadratic_ssd_and_the_decays_to_the_end_in_double_precision():
    """Decays from ``e^{-0.4}`` to ``e^{-40}`` per step, none below the underflow cut-off within 6 steps."""
    inputs = quadratic_ssd_inputs(length=6, head_dim=3, dtype=torch.float64, seed=2)
    x, dt, A, scores, D = (t.requires_grad_() for t in inputs)
    assert torch.autograd.gradcheck(QuadraticSSD.apply, (x, dt, A, scores, D))
    assert torch.autograd.gradcheck(decays_to_end, ((dt * A).transpose(1, 2),))


@pytest.mark.parametrize(
    "kernel, inputs",
    [(mamba_fused, mamba_inputs), (mamba2_fused, mamba2_inputs), (mamba2_quadratic, mamba2_inputs)],
    ids=["mamba", "mamba2-step-by-step", "mamba2-quadratic"],
)
def test_the_kernels_are_bit_identical_run_to_run_and_across_thread_counts(kernel, inputs):
    results = []
    for threads in (2, 2, 1):
        torch.set_num_threads(threads)
        results.append(outputs_and_gradients(kernel, inputs()))
    for other in results[1:]:
        assert torch.equal(other[0], results[0][0]) and torch.equal(other[1], results[0][1])
        for key, grad in results[0][2].items():
            assert torch.equal(other[2][key], grad), key


@pytest.mark.parametrize("threads", [1, 2])
def test_kernel_threads_follow_torchs_thread_count(threads):
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip(f"numba has {numba.config.NUMBA_NUM_THREADS} threads on this machine")
    torch.set_num_threads(threads)
    mamba_fused(mamba_inputs(batch=1, channels=4, length=3, state=2))
    assert numba.get_num_threads() == threads


def test_inference_under_no_grad_equals_the_differentiable_call():
    inputs = mamba_inputs()
    with torch.no_grad():
        out, last = mamba_fused(inputs)
    train_out, train_last = mamba_fused({k: v.clone().requires_grad_() for k, v in inputs.items()})
    assert not out.requires_grad and train_out.requires_grad
    assert torch.equal(out, train_out.detach()) and torch.equal(last, train_last.detach())


@njit(fastmath=FASTMATH)
def _apply(x, out, which):
    for i in range(x.shape[0]):
        out[i] = exp(x[i]) if which == 0 else softplus(x[i]) if which == 1 else sigmoid(x[i])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "which, reference",
    [(0, torch.exp), (1, F.softplus), (2, torch.sigmoid)],
    ids=["exp", "softplus", "sigmoid"],
)
def test_elementwise_functions_are_accurate_over_the_whole_float32_range(which, reference, dtype):
    x = np.linspace(-87, 88, 100_001).astype(dtype)
    out = np.empty_like(x)
    _apply(x, out, which)
    expected = reference(torch.from_numpy(x.astype(np.float64))).numpy()
    relative = np.abs(out - expected) / np.maximum(np.abs(expected), np.finfo(np.float32).tiny)
    # float64: torch's softplus returns x above 20, ours x + log1p(exp(-x)), 2e-9 more
    assert relative.max() < (5e-7 if dtype == np.float32 else 1e-9)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="checks x86 instructions")
def test_the_float32_exponential_compiles_to_packed_vector_code_without_libm_calls():
    @njit(fastmath=FASTMATH)
    def decays(dt, A, out):  # the kernels' hot loop: exp(dt * A) over a block of channels
        for j in range(out.shape[0]):
            out[j] = exp(dt[j] * A[j])

    x = np.ones(64, np.float32)
    decays(x, x, np.empty_like(x))
    assembly = decays.inspect_asm(decays.signatures[0])
    assert re.search(r"\bv?(mul|fmadd\d*)ps\b", assembly), "no packed single-precision arithmetic"
    assert "expf" not in assembly


def test_a_jobs_thread_count_sizes_numbas_pool_before_the_kernels_import_numba():
    """runtime.start is the first thing every job does; numba sizes its pool when imported."""
    code = (
        "from statelayers import runtime\n"
        "runtime.start(None, 1)\n"
        "import sys, torch\n"
        "assert 'numba' not in sys.modules\n"
        "from statelayers.models.mamba_scan import selective_scan\n"
        "r = torch.randn\n"
        "selective_scan(r(2, 8, 5), r(2, 8, 5), -r(8, 4).abs(), r(2, 4, 5), r(2, 4, 5))\n"
        "import numba\n"
        "print(numba.config.NUMBA_NUM_THREADS, numba.get_num_threads())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["1", "1"]


def test_make_envs_compile_step_runs_every_cached_kernel():
    """``python -m statelayers.models.kernels`` (what ``make env`` runs) calls every kernel that numba
    caches, so its cache holds them all and no job compiles one. Run in a fresh process, which loads
    them from the cache this suite already warmed, and list the cached kernels it left uncompiled."""
    code = """
import importlib, pkgutil, runpy
from numba.core.dispatcher import Dispatcher
import statelayers.models.kernels as package
runpy.run_module(package.__name__, run_name="__main__")
for info in pkgutil.iter_modules(package.__path__):
    module = importlib.import_module(package.__name__ + "." + info.name)
    for name, value in vars(module).items():
        if isinstance(value, Dispatcher) and value.__module__ == module.__name__:
            if type(value._cache).__name__ != "NullCache":
                print("cached", info.name + "." + name, len(value.signatures))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    kernels = dict(line.split()[1:] for line in result.stdout.splitlines() if line.startswith("cached "))
    assert {"gated_norm._forward", "ssd_quadratic._backward"} <= set(kernels), kernels
    assert [name for name, signatures in kernels.items() if signatures == "0"] == []
