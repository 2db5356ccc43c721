"""Conv1D ablation acts on the path the models really run; attribution statistics."""

from unittest import mock

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from transformers.models.mamba2 import modeling_mamba2

from statelayers.measure.conv1d import inference_behaviour
from statelayers.models.mamba_scan import UNFUSED_MIXER
from statelayers.models.spec import ModelSpec
from statelayers.models.tagger import build_model, conv_layers, make_conv_identity
from statelayers.report.conv1d import conv1d_summary, conv1d_table, holm, per_seed_differences
from statelayers.training import parameter_groups
from study_config import interval_config
from conftest import CUDA_SKIP

OPTIONS = {"mamba": {"state_size": 4}, "mamba2": {"state_size": 8, "head_dim": 8, "chunk_size": 4}}


def tiny(arch):
    family = arch.removesuffix("_noconv")
    torch.manual_seed(0)
    return build_model(ModelSpec(arch, 5, 3, d_model=16, n_layers=2, options=OPTIONS[family]))


def recorded_conv_calls(monkeypatch, family):
    """Wrap the causal-conv function the mixers call (they read ``conv1d.weight`` and never
    call the module, so a hook on it would not fire); record (input, output) pairs, and
    return them with the function wrapped."""
    import importlib

    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    original, calls = module.causal_conv1d_fn, []

    def recording(hidden_states, weight, bias=None, activation=None, **kwargs):
        out = original(hidden_states, weight, bias, activation=activation, **kwargs)
        calls.append((hidden_states.detach(), out.detach(), activation))
        return out

    monkeypatch.setattr(module, "causal_conv1d_fn", recording)
    return calls, original


@pytest.mark.parametrize("backend, scan", [("torch", "fast"), ("torch", "reference"), ("cuda", "fast")])
@pytest.mark.parametrize("family", ["mamba", "mamba2"])
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_the_no_conv_variants_convolution_is_the_identity_on_every_path(
    monkeypatch, family, mode, backend, scan
):
    """Every convolution there is: this package's and transformers' PyTorch ones, the kernel."""
    from statelayers.models.backends import kernels_importable
    from statelayers.models.causal_conv import causal_conv1d

    if backend == "cuda" and not (torch.cuda.is_available() and kernels_importable()):
        pytest.skip(f"{CUDA_SKIP} needs CUDA and mamba-ssm + causal-conv1d")
    if backend == "cuda" and mode == "train":
        pytest.skip("training runs a fused kernel with no separate convolution: tests/test_backends.py")
    device = "cuda" if backend == "cuda" else "cpu"
    models = {}
    for arch in (family, f"{family}_noconv"):
        torch.manual_seed(0)
        spec = ModelSpec(arch, 5, 3, d_model=16, n_layers=2, options=OPTIONS[family])
        mamba = {"backend": backend, "scan": scan}
        models[arch] = getattr(build_model(spec, mamba, device=device).to(device), mode)()
    calls, original = recorded_conv_calls(monkeypatch, family)  # after building: the backend sets it
    assert (original is causal_conv1d) is (backend == "torch" and scan == "fast")
    if family == "mamba2" and mode == "train" and (backend, scan) == ("torch", "fast"):
        # the unfused path, whose convolution this records; the fused block's: the test below
        monkeypatch.setattr(modeling_mamba2, "mamba2_split_conv1d_scan_combined", UNFUSED_MIXER)
    for arch, model in models.items():
        calls.clear()
        model(torch.randint(0, 5, (2, 9), device=device))
        assert len(calls) == 2  # one per block: the recorded path is the one that ran
        for hidden, out, activation in calls:
            assert activation == "silu"
            assert torch.allclose(out, F.silu(hidden), atol=1e-6) is arch.endswith("_noconv")


def test_the_fused_mamba2_training_block_convolves_the_no_conv_variant_as_the_identity(monkeypatch):
    """Mamba-2's fused training block (kernels.mamba2_block) runs the Conv1D kernel on the
    input projection's columns; record what that kernel reads and writes."""
    from statelayers.models.kernels import causal_conv, mamba2_block

    kernel, calls = causal_conv._forward, []

    def recording(x, offset, weight, bias, gated, out):
        kernel(x, offset, weight, bias, gated, out)
        calls.append(
            (torch.from_numpy(x[..., offset : offset + out.shape[2]].copy()), torch.from_numpy(out.copy()))
        )

    monkeypatch.setattr(causal_conv, "_forward", recording)
    for arch in ("mamba2", "mamba2_noconv"):
        calls.clear()
        block_calls = mock.Mock(wraps=mamba2_block.SplitConvScanNorm.apply)
        with mock.patch.object(mamba2_block.SplitConvScanNorm, "apply", block_calls):
            tiny(arch).train()(torch.randint(0, 5, (2, 9)))
        assert block_calls.call_count == 2 and len(calls) == 2  # one per block, through the fused block
        for hidden, out in calls:
            assert torch.allclose(out, F.silu(hidden), atol=1e-6) is arch.endswith("_noconv")


def test_a_frozen_identity_convolution_survives_training_steps():
    model = tiny("mamba_noconv").train()
    optimizer = torch.optim.AdamW(parameter_groups(model, 0.1), lr=0.1)
    before = [conv.weight.clone() for conv in conv_layers(model)]
    for _ in range(3):
        model(torch.randint(0, 5, (4, 9))).logsumexp(-1).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    for conv, weight in zip(conv_layers(model), before):
        torch.testing.assert_close(conv.weight, weight, rtol=0, atol=0)
        assert weight[:, 0, -1].eq(1).all() and weight[:, 0, :-1].eq(0).all()


def test_inference_ablation_changes_only_the_convolutions(tmp_path):
    from statelayers import files
    from statelayers.tasks.data import make_split

    model = tiny("mamba").eval()
    others = {k: v.clone() for k, v in model.state_dict().items() if "conv1d" not in k}
    tokens = torch.randint(0, 5, (3, 8))
    before = model(tokens)
    files.write_parquet(
        make_split("dyck", "test", 6, 8, seed=0, task_params={"k": 2, "max_depth": 4, "open_prob": 0.5}), tmp_path / "t.parquet"
    )
    rows = inference_behaviour(model, {8: tmp_path / "t.parquet"})
    assert rows[0]["eval_length"] == 8 and 0 <= rows[0]["token_accuracy"] <= 1
    assert not torch.allclose(model(tokens), before)
    for key, value in model.state_dict().items():
        if key in others:
            torch.testing.assert_close(value, others[key], rtol=0, atol=0)
    with pytest.raises(ValueError, match="no Conv1D"):
        inference_behaviour(build_model(ModelSpec("gru", 5, 3, d_model=8, n_layers=1)), {})


def test_identity_weights_make_a_causal_convolution_the_identity():
    model = tiny("mamba")
    make_conv_identity(model)
    conv = conv_layers(model)[0]
    x = torch.randn(2, conv.in_channels, 7)
    torch.testing.assert_close(conv(x)[..., :7], x)


def test_holm_matches_a_hand_computed_example():
    adjusted = holm(np.array([0.01, 0.04, 0.03, np.nan, 0.5]))
    np.testing.assert_allclose(adjusted[[0, 2, 1, 4]], [0.04, 0.09, 0.09, 0.5])
    assert np.isnan(adjusted[3])


def behaviour_rows(arch, task, seed, accuracy):
    return [
        {
            "arch": arch,
            "task": task,
            "seed": seed,
            "eval_length": length,
            "token_accuracy": accuracy,
            "sequence_accuracy": 0.0,
            "n_sequences": 8,
        }
        for length in (40, 80)
    ]


def test_summary_pairs_seeds_and_flags_a_consistent_drop():
    behaviour, inference = [], []
    for seed, noise in enumerate([0.0, 0.01, -0.01, 0.02]):
        behaviour += behaviour_rows("mamba", "s3", seed, 0.9 + noise)
        behaviour += behaviour_rows("mamba_noconv", "s3", seed, 0.7 + noise + 0.005 * seed)
        behaviour += behaviour_rows("mamba", "dyck", seed, 0.8 + noise)
        behaviour += behaviour_rows("mamba_noconv", "dyck", seed, 0.8 - noise)
        inference += behaviour_rows("mamba", "s3", seed, 0.5) + behaviour_rows(
            "mamba", "dyck", seed, 0.8 + noise
        )
    table = conv1d_table(pd.DataFrame(behaviour), pd.DataFrame(inference))
    assert set(table["variant"]) == {"conv", "noconv_trained", "noconv_inference"}
    diffs = per_seed_differences(table).set_index(["task", "variant", "seed"])["difference_pp"]
    assert diffs[("s3", "noconv_trained", 0)] == pytest.approx(-20.0)
    summary = conv1d_summary(table, interval_config()).set_index(["task", "variant"])
    assert summary.loc[("s3", "noconv_trained"), "significant"]
    assert summary.loc[("s3", "noconv_trained"), "ci_high"] < 0
    assert not summary.loc[("dyck", "noconv_trained"), "significant"]
    assert (summary["p_holm"].dropna() >= summary["p_value"].dropna()).all()
