"""The five taggers: shapes, per-layer states, edits, parameter matching, checkpoints."""

import json
from collections import Counter
from dataclasses import replace

import pytest
import torch

from statelayers.models.registry import ARCHS
from statelayers.models.spec import ModelSpec
from statelayers.models.tagger import (
    build_model,
    count_parameters,
    load_model,
    match_width,
    matched_spec,
    save_model,
)
from statelayers.report.tables import params_table

TINY = {
    "transformer": {"heads": 2},
    "mamba": {"state_size": 4},
    "mamba2": {"state_size": 8, "head_dim": 8, "chunk_size": 8},
}


def tiny(arch: str, vocab: int = 6, classes: int = 6) -> torch.nn.Module:
    return build_model(ModelSpec(arch, vocab, classes, d_model=16, n_layers=3, options=TINY.get(arch, {})))


@pytest.mark.parametrize("arch", ARCHS)
def test_logits_and_every_layer_state(arch):
    model = tiny(arch).eval()
    tokens = torch.randint(0, 6, (3, 13))
    logits, states = model(tokens, return_states=True)
    assert logits.shape == (3, 13, 6)
    assert len(states) == 4  # embedding + 3 blocks
    assert all(s.shape == (3, 13, 16) for s in states)
    torch.testing.assert_close(model(tokens), logits)  # the hooks change nothing by themselves
    torch.testing.assert_close(states[0], model.backbone.get_input_embeddings()(tokens))


@pytest.mark.parametrize("arch", ARCHS)
def test_states_are_causal(arch):
    model = tiny(arch).eval()
    a = torch.randint(0, 6, (2, 12))
    b = a.clone()
    b[:, 8:] = (b[:, 8:] + 1) % 6
    _, sa = model(a, return_states=True)
    _, sb = model(b, return_states=True)
    for layer_a, layer_b in zip(sa, sb):
        torch.testing.assert_close(layer_a[:, :8], layer_b[:, :8])
    assert not torch.allclose(sa[-1][:, 8:], sb[-1][:, 8:])


@pytest.mark.parametrize("arch", ARCHS)
def test_edits_replace_exactly_the_targeted_layer(arch):
    model = tiny(arch).eval()
    tokens = torch.randint(0, 6, (2, 9))
    logits, states = model(tokens, return_states=True)
    identity_logits, identity_states = model(tokens, edits={2: lambda h: h}, return_states=True)
    torch.testing.assert_close(identity_logits, logits)
    zeroed_logits, zeroed = model(tokens, edits={2: torch.zeros_like}, return_states=True)
    torch.testing.assert_close(zeroed[1], states[1])  # upstream untouched
    assert torch.count_nonzero(zeroed[2]) == 0  # the edit fired
    assert not torch.allclose(zeroed[3], states[3])  # and downstream saw it
    assert not torch.allclose(zeroed_logits, logits)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_pass_resumed_at_a_tap_equals_the_full_pass(arch):
    model = tiny(arch).eval()
    tokens = torch.randint(0, 6, (3, 11))
    calls = Counter()
    for i, block in enumerate(model.backbone.layers):
        block.register_forward_hook(lambda *_, i=i: calls.update([i]))
    with torch.no_grad():
        _, states = model(tokens, return_states=True)
        for tap in range(len(states)):
            edit = {tap: lambda h: h * 0.5 + 1.0}
            full_logits, full_states = model(tokens, edits=edit, return_states=True)
            calls.clear()
            with model.resumed_at(tap, states[tap]):
                logits, resumed = model(tokens, edits=edit, return_states=True)
            assert set(calls) == set(range(tap, len(states) - 1))  # only the blocks after the tap ran
            torch.testing.assert_close(logits, full_logits, rtol=1e-5, atol=1e-6)
            for later in range(tap, len(states)):
                torch.testing.assert_close(resumed[later], full_states[later], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(model(tokens), model(tokens, return_states=True)[0])
        assert not any(type(layer).__name__ == "Replay" for layer in model.backbone.layers)


def test_match_width_hits_the_target_where_a_knob_exists():
    for arch, tolerance in [("transformer", 0.02), ("mamba2", 0.10), ("mamba", 0.02)]:
        spec = matched_spec(arch, "s3", None, d_model=128, n_layers=4, options={}, target_params=830_000)
        count = count_parameters(build_model(spec))
        assert abs(count / 830_000 - 1) <= tolerance, (arch, spec.width, count)
        # No other knob value is closer to the target.
        step = 1 if arch == "mamba2" else 16
        for other in (spec.width - step, spec.width + step):
            if other >= step:
                alt = count_parameters(build_model(replace(spec, width=other)))
                assert abs(alt - 830_000) >= abs(count - 830_000)
    lstm = match_width(ModelSpec("lstm", 2, 2), 830_000)
    assert lstm.width is None


def test_unknown_architecture_is_rejected():
    with pytest.raises(ValueError, match="unknown architecture"):
        ModelSpec("rwkv", 2, 2)


@pytest.mark.parametrize("arch", ARCHS)
def test_checkpoint_round_trip(tmp_path, arch):
    model = tiny(arch, vocab=4, classes=3).eval()
    save_model(model, tmp_path, extra={"task": "dyck"})
    loaded = load_model(tmp_path)
    tokens = torch.randint(0, 4, (2, 10))
    torch.testing.assert_close(loaded(tokens), model(tokens))
    table = params_table([json.loads((tmp_path / "model.json").read_text())], target=count_parameters(model))
    assert table.loc[0, "params"] == count_parameters(model)
    assert table.loc[0, "relative_deviation"] == 0


def test_transformer_runs_beyond_training_length():
    model = tiny("transformer").eval()
    assert model(torch.randint(0, 6, (1, 300))).shape == (1, 300, 6)
