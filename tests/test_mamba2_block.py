"""Mamba-2's fused training block (conv, SSD and gated norm reading and writing the input
projection in place) is what a training step runs on CPU, and its outputs and gradients
are bit-identical to the unfused path's; where it does not apply, the unfused path runs."""

from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from transformers.models.mamba2 import modeling_mamba2

from statelayers.models import mamba_scan
from statelayers.models.kernels import mamba2_block
from statelayers.models.tagger import build_model, matched_spec

FAMILY = {"state_size": 64, "head_dim": 32, "chunk_size": 20}
PARITY = {**FAMILY, "head_dim": 16, "time_step_max": 0.01}


def step(options: dict, length: int = 40, threads: int = 1, fused: bool = True, seed: int = 0):
    """Loss and every parameter's gradient of one training forward and backward pass."""
    spec = matched_spec("mamba2", "parity", None, 32, 2, options, 60_000)
    torch.manual_seed(seed)
    model = build_model(spec).train()
    tokens = torch.randint(0, 2, (3, length), generator=torch.Generator().manual_seed(seed))
    hook = mamba_scan.split_conv1d_scan_combined if fused else mamba_scan.UNFUSED_MIXER
    calls = mock.Mock(wraps=mamba2_block.SplitConvScanNorm.apply)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with (
            mock.patch.object(modeling_mamba2, "mamba2_split_conv1d_scan_combined", hook),
            mock.patch.object(mamba2_block.SplitConvScanNorm, "apply", calls),
        ):
            logits = model(tokens)
            loss = F.cross_entropy(logits.flatten(0, 1), tokens.flatten())
            loss.backward()
    finally:
        torch.set_num_threads(before)
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    return loss.detach(), grads, calls.call_count


@pytest.mark.parametrize("options", [FAMILY, PARITY], ids=["family", "parity"])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_fused_block_is_bit_identical_to_the_unfused_path(options, threads):
    loss, grads, calls = step(options, threads=threads)
    loss_ref, grads_ref, calls_ref = step(options, threads=threads, fused=False)
    assert calls == 2 and calls_ref == 0  # every layer fused; none without the hook
    assert torch.equal(loss, loss_ref)
    mixer = [name for name in grads if ".mixer." in name]
    assert {name.split(".mixer.")[1] for name in mixer} >= {"in_proj.weight", "conv1d.weight", "conv1d.bias",
                                                            "dt_bias", "A_log", "D", "norm.weight"}  # fmt: skip
    for name, grad in grads.items():
        assert grad.abs().sum() > 0, name
        assert torch.equal(grad, grads_ref[name]), name


def test_sequences_past_the_quadratic_form_take_the_unfused_path():
    _, grads, calls = step(FAMILY, length=mamba_scan.QUADRATIC_MAX_LENGTH + 6)
    _, grads_ref, _ = step(FAMILY, length=mamba_scan.QUADRATIC_MAX_LENGTH + 6, fused=False)
    assert calls == 0
    assert all(torch.equal(grads[name], grads_ref[name]) for name in grads)


def test_the_block_matches_transformers_reference_mixer_within_float_rounding():
    from statelayers.models.backends import use_backend

    fused_loss, fused_grads, calls = step(FAMILY)
    try:
        use_backend("torch", scan="reference")
        ref_loss, ref_grads, _ = step(FAMILY, fused=False)
    finally:
        use_backend("torch", scan="fast")
    assert calls == 2
    torch.testing.assert_close(fused_loss, ref_loss, rtol=1e-5, atol=1e-6)
    for name, grad in fused_grads.items():
        scale = ref_grads[name].abs().max()
        torch.testing.assert_close(grad / scale, ref_grads[name] / scale, rtol=1e-4, atol=1e-4, msg=name)


def test_evaluation_never_calls_the_training_block():
    spec = matched_spec("mamba2", "parity", None, 32, 2, FAMILY, 60_000)
    model = build_model(spec).eval()
    calls = mock.Mock(wraps=mamba2_block.SplitConvScanNorm.apply)
    with mock.patch.object(mamba2_block.SplitConvScanNorm, "apply", calls), torch.no_grad():
        model(torch.randint(0, 2, (2, 40)))
    assert calls.call_count == 0
