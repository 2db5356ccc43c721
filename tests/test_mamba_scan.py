"""The fast scans (the fused kernels and Mamba-2's quadratic form on CPU, the PyTorch
scan elsewhere) equal transformers' reference in values and gradients, also inside whole
models, and padding a sequence at its end changes no output before the pad."""

import pytest
import torch

from statelayers.models.backends import use_backend
from statelayers.models.mamba_scan import (
    REFERENCE_CHUNK_SCAN,
    REFERENCE_GATED_NORM,
    QUADRATIC_MAX_LENGTH,
    REFERENCE_SCAN,
    SelectiveScan,
    chunk_scan,
    gated_norm_forward,
    selective_scan,
    torch_selective_scan,
)
from statelayers.models.spec import ModelSpec
from statelayers.models.tagger import build_model


def scan_inputs(batch=3, d_inner=5, length=11, state=4):
    g = torch.Generator().manual_seed(0)
    return dict(
        hidden_states=torch.randn(batch, d_inner, length, generator=g),
        dt=torch.randn(batch, d_inner, length, generator=g),
        A=-torch.rand(d_inner, state, generator=g) * 4,
        B=torch.randn(batch, state, length, generator=g),
        C=torch.randn(batch, state, length, generator=g),
        D=torch.randn(d_inner, generator=g),
        z=torch.randn(batch, d_inner, length, generator=g),
        delta_bias=torch.randn(d_inner, generator=g),
    )


def pytorch_scan(hidden_states, **inputs):
    """The scan that runs off the CPU (a GPU without mamba-ssm), called here on CPU tensors."""
    return torch_selective_scan(
        hidden_states, **{k: v for k, v in inputs.items() if k != "return_last_state"}
    )


@pytest.mark.parametrize("fast", [selective_scan, pytorch_scan], ids=["cpu-kernel", "pytorch"])
def test_outputs_last_state_and_gradients_match_reference(fast):
    results = {}
    for name, fn in (("reference", REFERENCE_SCAN), ("fast", fast)):
        inputs = {k: v.clone().requires_grad_() for k, v in scan_inputs().items()}
        y, last = fn(**inputs, delta_softplus=True, return_last_state=True)
        (y.pow(2).sum() + last.sum()).backward()
        results[name] = (y.detach(), last.detach(), {k: v.grad for k, v in inputs.items()})
    (y_ref, last_ref, grad_ref), (y_fast, last_fast, grad_fast) = results["reference"], results["fast"]
    torch.testing.assert_close(y_fast, y_ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(last_fast, last_ref, rtol=1e-5, atol=1e-5)
    for key in grad_ref:
        torch.testing.assert_close(grad_fast[key], grad_ref[key], rtol=1e-4, atol=1e-4, msg=key)


def test_gradcheck_in_double_precision():
    g = torch.Generator().manual_seed(1)
    shapes = {"u": (2, 3, 5), "dt": (2, 3, 5), "A": (3, 2), "B": (2, 2, 5), "C": (2, 2, 5)}
    args = {k: torch.randn(*shape, generator=g, dtype=torch.float64) for k, shape in shapes.items()}
    args["dt"] = torch.nn.functional.softplus(args["dt"])
    args["A"] = -args["A"].abs()
    inputs = [v.requires_grad_() for v in args.values()]
    assert torch.autograd.gradcheck(lambda *a: SelectiveScan.apply(*a)[0], inputs)


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize(
    "arch, options",
    [
        ("mamba", {"state_size": 4}),
        ("mamba2", {"state_size": 8, "head_dim": 8, "chunk_size": 8}),
        ("mamba_noconv", {"state_size": 4}),
        ("mamba2_noconv", {"state_size": 8, "head_dim": 8, "chunk_size": 8}),
    ],
)
def test_models_are_unchanged_by_the_fast_kernels(arch, options, mode):
    """Both families (and their Conv1D-ablated twins) run the fused scan and the fast
    convolution; 17 tokens is no multiple of Mamba-2's chunk of 8."""
    model = build_model(ModelSpec(arch, 5, 3, d_model=16, n_layers=2, options=options))
    getattr(model, mode)()
    tokens = torch.randint(0, 5, (4, 17))
    outputs = {}
    for kind in ("reference", "fast"):
        use_backend("torch", scan=kind)
        model.zero_grad()
        logits = model(tokens)
        logits.logsumexp(-1).sum().backward()
        outputs[kind] = (logits.detach(), [p.grad.clone() for p in model.parameters() if p.requires_grad])
    use_backend("torch", scan="fast")
    torch.testing.assert_close(outputs["fast"][0], outputs["reference"][0], rtol=1e-5, atol=1e-5)
    for fast, ref in zip(outputs["fast"][1], outputs["reference"][1]):
        torch.testing.assert_close(fast, ref, rtol=1e-4, atol=1e-5)


def test_the_switch_really_switches():
    from transformers.models.mamba import modeling_mamba
    from transformers.models.mamba2.modeling_mamba2 import Mamba2RMSNormGated

    use_backend("torch", scan="reference")
    assert modeling_mamba.mamba_selective_scan is REFERENCE_SCAN
    assert Mamba2RMSNormGated.forward is REFERENCE_GATED_NORM
    use_backend("torch", scan="fast")
    assert modeling_mamba.mamba_selective_scan is selective_scan
    assert Mamba2RMSNormGated.forward is gated_norm_forward
    with pytest.raises(ValueError):
        use_backend("torch", scan="cuda-ish")


def test_inference_path_equals_the_differentiable_one():
    inputs = scan_inputs()
    with torch.no_grad():
        y_eval, last_eval = selective_scan(**inputs, delta_softplus=True, return_last_state=True)
    train_inputs = {k: v.clone().requires_grad_() for k, v in inputs.items()}
    y_train, last_train = selective_scan(**train_inputs, delta_softplus=True, return_last_state=True)
    assert y_train.requires_grad and not y_eval.requires_grad
    torch.testing.assert_close(y_eval, y_train.detach())
    torch.testing.assert_close(last_eval, last_train.detach())


def chunk_scan_inputs(length, batch=2, heads=4, head_dim=8, groups=2, state=6):
    g = torch.Generator().manual_seed(3)
    return dict(
        hidden_states=torch.randn(batch, length, heads, head_dim, generator=g),
        dt=torch.randn(batch, length, heads, generator=g),
        A=-torch.rand(heads, generator=g) * 4,
        B=torch.randn(batch, length, groups, state, generator=g),
        C=torch.randn(batch, length, groups, state, generator=g),
        D=torch.randn(heads, generator=g),
        dt_bias=torch.randn(heads, generator=g),
    )


@pytest.mark.parametrize("grad", [True, False], ids=["training", "no-grad"])
@pytest.mark.parametrize("length", [40, QUADRATIC_MAX_LENGTH, QUADRATIC_MAX_LENGTH + 6])
def test_mamba2_chunk_scan_matches_reference_and_picks_its_form_by_length(length, grad, monkeypatch):
    """At most QUADRATIC_MAX_LENGTH long, with or without gradients: the quadratic form;
    longer: the step-by-step kernel. Either way outputs and final states equal transformers'."""
    pytest.importorskip(
        "numba", reason="the step-by-step CPU kernel needs numba, which the GPU machine may lack"
    )
    from statelayers.models.kernels import ssd, ssd_quadratic

    calls = []
    for module in (ssd, ssd_quadratic):
        original = module.mamba_chunk_scan_combined
        monkeypatch.setattr(
            module,
            "mamba_chunk_scan_combined",
            lambda *a, _f=original, _m=module, **k: calls.append(_m) or _f(*a, **k),
        )
    inputs = chunk_scan_inputs(length)
    leaves = {k: v.clone().requires_grad_(grad) for k, v in inputs.items()}
    options = dict(chunk_size=20, dt_softplus=True, dt_limit=(0.0, 4.0), return_final_states=True)
    out, last = chunk_scan(**leaves, **options)
    out_ref, last_ref = REFERENCE_CHUNK_SCAN(**inputs, **options)
    assert calls == [ssd_quadratic if length <= QUADRATIC_MAX_LENGTH else ssd]
    torch.testing.assert_close(out.detach(), out_ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(last.detach(), last_ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scan", ["fast", "reference"])
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_padding_a_mamba2_sequence_at_the_end_leaves_every_earlier_output_unchanged(scan, mode):
    """Evaluation lengths that are no multiple of the chunk may be padded at the end: the
    model is causal, so logits before the pad (and their gradients) are those of the
    unpadded sequence."""
    use_backend("torch", scan=scan)
    try:
        model = build_model(
            ModelSpec(
                "mamba2",
                5,
                3,
                d_model=16,
                n_layers=2,
                options={"state_size": 8, "head_dim": 8, "chunk_size": 8},
            )
        )
        getattr(model, mode)()
        tokens = torch.randint(0, 5, (3, 13), generator=torch.Generator().manual_seed(0))
        padded = torch.cat([tokens, torch.zeros(3, 3, dtype=tokens.dtype)], dim=1)  # 16 = 2 chunks
        grads = []
        for sequence in (tokens, padded):
            model.zero_grad()
            logits = model(sequence)[:, :13]
            logits.logsumexp(-1).sum().backward()
            grads.append(
                (logits.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None])
            )
    finally:
        use_backend("torch", scan="fast")
    (logits, grad), (logits_padded, grad_padded) = grads
    torch.testing.assert_close(logits_padded, logits, rtol=1e-5, atol=1e-6)
    for a, b in zip(grad_padded, grad):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch", [1, 3])
def test_the_quadratic_form_gives_transformers_final_states_for_one_sequence_and_for_several(batch):
    """One sequence makes the scaled input a strided view; the final state must still come out."""
    ssd_quadratic = pytest.importorskip("statelayers.models.kernels.ssd_quadratic", exc_type=ImportError)
    inputs = chunk_scan_inputs(13, batch=batch)
    leaves = {k: v.clone().requires_grad_(True) for k, v in inputs.items()}
    options = dict(chunk_size=8, dt_softplus=True, return_final_states=True)
    out, last = ssd_quadratic.mamba_chunk_scan_combined(
        leaves["hidden_states"], leaves["dt"], leaves["A"], leaves["B"], leaves["C"], 8,
        D=leaves["D"], dt_bias=leaves["dt_bias"], dt_softplus=True, return_final_states=True,
    )  # fmt: skip
    out_ref, last_ref = REFERENCE_CHUNK_SCAN(**inputs, **options)
    torch.testing.assert_close(out.detach(), out_ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(last.detach(), last_ref, rtol=1e-5, atol=1e-5)
