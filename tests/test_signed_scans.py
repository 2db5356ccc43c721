"""Signed transitions (``mamba_signed``, ``mamba2_signed``): every scan that runs them equals
a slow step-by-step loop of ``h_t = (2 exp(dt A) - 1) h_{t-1} + dt x_t B_t`` in values and
gradients (float64), they act only inside their own models, and the default
architectures' scans are untouched."""

from functools import partial

import pytest
import torch
import torch.nn.functional as F

from statelayers.models.backends import use_backend
from statelayers.models.kernels import ssd_quadratic
from statelayers.models.kernels.selective_scan import selective_scan_fn
from statelayers.models.mamba_scan import (
    SelectiveScan,
    chunk_scan,
    selective_scan,
    signed_chunk_scan,
    torch_selective_scan,
    transitions,
)
from statelayers.models.registry import SIGNED, base_arch
from statelayers.models.spec import ModelSpec
from statelayers.models.tagger import build_model

DOUBLE = torch.float64


def mamba_inputs(batch=2, d_inner=3, length=7, state=4):
    g = torch.Generator().manual_seed(0)
    return dict(
        u=torch.randn(batch, d_inner, length, generator=g, dtype=DOUBLE),
        delta=torch.randn(batch, d_inner, length, generator=g, dtype=DOUBLE),
        A=-torch.rand(d_inner, state, generator=g, dtype=DOUBLE) * 3,
        B=torch.randn(batch, state, length, generator=g, dtype=DOUBLE),
        C=torch.randn(batch, state, length, generator=g, dtype=DOUBLE),
        D=torch.randn(d_inner, generator=g, dtype=DOUBLE),
        z=torch.randn(batch, d_inner, length, generator=g, dtype=DOUBLE),
        delta_bias=torch.randn(d_inner, generator=g, dtype=DOUBLE),
    )


def slow_mamba(u, delta, A, B, C, D, z, delta_bias):
    """Mamba-1 with signed decays, one position at a time: ``(y, last state)``."""
    dt = F.softplus(delta + delta_bias[:, None])
    state = u.new_zeros(u.shape[0], u.shape[1], A.shape[1])
    ys = []
    for t in range(u.shape[2]):
        decay = 2 * torch.exp(dt[:, :, t, None] * A) - 1
        state = decay * state + (dt[:, :, t] * u[:, :, t])[..., None] * B[:, None, :, t]
        ys.append((state * C[:, None, :, t]).sum(-1) + D * u[:, :, t])
    return torch.stack(ys, -1) * F.silu(z), state


def pytorch_signed(u, delta, A, B, C, D, z, delta_bias):
    return torch_selective_scan(u, delta, A, B, C, D, z, delta_bias, True, signed=True)


def kernel_signed(u, delta, A, B, C, D, z, delta_bias):
    return selective_scan_fn(u, delta, A, B, C, D, z, delta_bias, True, return_last_state=True, signed=True)


def values_and_gradients(fn, inputs):
    leaves = {k: v.clone().requires_grad_() for k, v in inputs.items()}
    y, last = fn(**leaves)
    (y.sin().sum() + last.cos().sum()).backward()
    return y.detach(), last.detach(), {k: v.grad for k, v in leaves.items()}


def assert_equals_slow_loop(fast, slow, inputs):
    """``fast`` and ``slow`` give the same outputs, last state and input gradients (float64)."""
    y_ref, last_ref, grads_ref = values_and_gradients(slow, inputs)
    y, last, grads = values_and_gradients(fast, inputs)
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(last, last_ref)
    assert all(torch.isfinite(g).all() for g in grads.values())
    for key in grads_ref:
        torch.testing.assert_close(grads[key], grads_ref[key], msg=key)


@pytest.mark.parametrize("scan", [pytorch_signed, kernel_signed], ids=["pytorch", "kernel"])
def test_the_signed_mamba_scan_equals_the_slow_loop_forward_and_backward(scan):
    assert_equals_slow_loop(scan, slow_mamba, mamba_inputs())


@pytest.mark.parametrize("threads", [1, 2])
def test_the_signed_mamba_kernel_equals_the_slow_loop_across_channel_blocks_and_threads(threads):
    """65 channels: two of the kernel's channel blocks, one of them partial."""
    torch.set_num_threads(threads)
    assert_equals_slow_loop(kernel_signed, slow_mamba, mamba_inputs(batch=3, d_inner=65, length=11, state=5))


def test_the_signed_mamba_kernel_passes_gradcheck():
    inputs = [v.requires_grad_() for v in mamba_inputs(length=5).values()]
    assert torch.autograd.gradcheck(kernel_signed, inputs)


def test_the_signed_mamba_scan_passes_gradcheck():
    inputs = [v.requires_grad_() for v in mamba_inputs(length=5).values()]
    assert torch.autograd.gradcheck(pytorch_signed, inputs)
    u, delta, A, B, C = (t.detach().clone().requires_grad_() for t in inputs[:5])
    assert torch.autograd.gradcheck(lambda *a: SelectiveScan.apply(*a, True), (u, F.softplus(delta), A, B, C))


def mamba2_inputs(batch=2, length=9, heads=4, head_dim=2, groups=2, state=3):
    g = torch.Generator().manual_seed(1)
    return dict(
        x=torch.randn(batch, length, heads, head_dim, generator=g, dtype=DOUBLE),
        dt=torch.randn(batch, length, heads, generator=g, dtype=DOUBLE),
        A=-torch.rand(heads, generator=g, dtype=DOUBLE) * 3,
        B=torch.randn(batch, length, groups, state, generator=g, dtype=DOUBLE),
        C=torch.randn(batch, length, groups, state, generator=g, dtype=DOUBLE),
        D=torch.randn(heads, generator=g, dtype=DOUBLE),
        dt_bias=torch.randn(heads, generator=g, dtype=DOUBLE),
    )


def slow_mamba2(x, dt, A, B, C, D, dt_bias=None, softplus=True):
    """Mamba-2 with signed decays, one position at a time: ``(y, last state)``."""
    heads = x.shape[2]
    B, C = (t.repeat_interleave(heads // t.shape[2], dim=2) for t in (B, C))
    if softplus:
        dt = F.softplus(dt + dt_bias)
    state = x.new_zeros(x.shape[0], heads, x.shape[3], B.shape[3])
    ys = []
    for t in range(x.shape[1]):
        decay = 2 * torch.exp(dt[:, t] * A) - 1
        drive = (dt[:, t, :, None] * x[:, t])[..., None] * B[:, t, :, None, :]
        state = decay[..., None, None] * state + drive
        ys.append((state * C[:, t, :, None, :]).sum(-1) + D[:, None] * x[:, t])
    return torch.stack(ys, 1), state


def quadratic_signed(x, dt, A, B, C, D, dt_bias=None, softplus=True):
    return signed_chunk_scan(
        x, dt, A, B, C, D=D, dt_bias=dt_bias, dt_softplus=softplus, return_final_states=True
    )


def test_signed_mamba2_scan_equals_the_slow_loop_forward_and_backward():
    assert_equals_slow_loop(quadratic_signed, slow_mamba2, mamba2_inputs())


def test_signed_mamba2_scan_passes_gradcheck():
    inputs = [v.requires_grad_() for v in mamba2_inputs(length=6).values()]
    assert torch.autograd.gradcheck(lambda *a: quadratic_signed(*a)[0], inputs)


def test_a_zero_decay_cuts_the_state_with_finite_gradients():
    """A decay of exactly 0 (dt = ln 2, A = -1) has no logarithm, which SSD's form would need."""
    inputs = mamba2_inputs(length=6)
    inputs["A"] = -torch.ones_like(inputs["A"])
    inputs["dt"] = F.softplus(inputs["dt"])
    inputs["dt"][:, 3] = torch.log(torch.tensor(2.0, dtype=DOUBLE))
    assert (2 * torch.exp(inputs["dt"][:, 3] * inputs["A"]) - 1 == 0).all()
    del inputs["dt_bias"]
    fast, slow = (partial(fn, softplus=False) for fn in (quadratic_signed, slow_mamba2))
    assert_equals_slow_loop(fast, slow, inputs)


def test_the_scans_are_signed_only_inside_the_context_and_it_resets_on_error():
    inputs = {k: v.float() for k, v in mamba_inputs().items()}
    args = [inputs[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")]
    default = selective_scan(*args, delta_softplus=True)
    with transitions(signed=True):
        signed = selective_scan(*args, delta_softplus=True)
    assert not torch.allclose(signed, default)
    with pytest.raises(RuntimeError), transitions(signed=True):
        raise RuntimeError
    assert torch.equal(selective_scan(*args, delta_softplus=True), default)


def test_outside_the_context_the_default_scans_are_the_compiled_kernels_bit_for_bit():
    inputs = {k: v.float() for k, v in mamba_inputs().items()}
    args = [inputs[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")]
    kernel = selective_scan_fn(*args, delta_softplus=True)
    assert torch.equal(selective_scan(*args, delta_softplus=True), kernel)
    m2 = {k: v.float() for k, v in mamba2_inputs(groups=1).items()}
    x, dt, A, B, C, D, bias = m2.values()
    fast = chunk_scan(x, dt, A, B, C, chunk_size=8, D=D, dt_bias=bias, dt_softplus=True)
    kernel = ssd_quadratic.mamba_chunk_scan_combined(x, dt, A, B, C, 8, D=D, dt_bias=bias, dt_softplus=True)
    assert torch.equal(fast, kernel)


OPTIONS = {"mamba": {"state_size": 4}, "mamba2": {"state_size": 8, "head_dim": 8, "chunk_size": 8}}


def tagger(arch: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(ModelSpec(arch, 5, 3, d_model=16, n_layers=2, options=OPTIONS[base_arch(arch)]))


def slow_selective_scan(
    hidden_states, dt, A, B, C, D=None, z=None, delta_bias=None, return_last_state=False, **_
):
    """transformers' ``mamba_selective_scan`` signature on :func:`slow_mamba` (softplus on,
    as Mamba calls it)."""
    y, last = slow_mamba(hidden_states, dt, A, B, C, D, z, delta_bias)
    return (y, last) if return_last_state else y


def slow_chunk_scan(
    hidden_states, dt, A, B, C, chunk_size, D=None, dt_bias=None, dt_limit=(0.0, float("inf")), **_
):
    """transformers' ``mamba2_chunk_scan`` signature on :func:`slow_mamba2` (no clamp: the default limit)."""
    assert tuple(dt_limit) == (0.0, float("inf"))
    return slow_mamba2(hidden_states, dt, A, B, C, D, dt_bias)[0]


@pytest.mark.parametrize("mode", ["train", "eval"])  # Mamba-2 trains through a fused, unsigned kernel
@pytest.mark.parametrize("arch", sorted(SIGNED))
def test_a_signed_model_is_its_family_with_the_slow_signed_loop_and_leaves_the_family_unchanged(
    arch, mode, monkeypatch
):
    from transformers.models.mamba import modeling_mamba
    from transformers.models.mamba2 import modeling_mamba2

    from statelayers.models.mamba_scan import UNFUSED_MIXER

    family, signed = getattr(tagger(base_arch(arch)), mode)(), getattr(tagger(arch), mode)()
    signed.load_state_dict(family.state_dict())
    assert signed.signed and not family.signed
    tokens = torch.randint(0, 5, (3, 17), generator=torch.Generator().manual_seed(2))
    before = family(tokens)
    fast = signed(tokens)
    assert torch.equal(family(tokens), before)
    monkeypatch.setattr(modeling_mamba, "mamba_selective_scan", slow_selective_scan)
    monkeypatch.setattr(modeling_mamba2, "mamba2_chunk_scan", slow_chunk_scan)
    monkeypatch.setattr(modeling_mamba2, "mamba2_split_conv1d_scan_combined", UNFUSED_MIXER)
    slow = family.double()(tokens)
    torch.testing.assert_close(fast, slow.float(), rtol=1e-5, atol=1e-5)
    assert not torch.allclose(slow.float(), before, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("arch", sorted(SIGNED))
def test_a_signed_model_trains_end_to_end_in_both_modes(arch):
    model = tagger(arch).train()
    tokens = torch.randint(0, 5, (3, 17), generator=torch.Generator().manual_seed(3))
    model(tokens).logsumexp(-1).sum().backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert torch.isfinite(model.eval()(tokens)).all()


@pytest.mark.parametrize("arch", sorted(SIGNED))
def test_a_signed_model_refuses_a_scan_without_signed_transitions(arch):
    with pytest.raises(ValueError, match="fast scan"):
        build_model(ModelSpec(arch, 5, 3, d_model=16, n_layers=2, options=OPTIONS[base_arch(arch)]),
                    {"backend": "torch", "scan": "reference"})  # fmt: skip
    use_backend("torch", scan="fast")
