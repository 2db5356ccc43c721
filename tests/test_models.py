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


def tiny(arch: str, vocab: int = 6, classes: int = 6, start_token: bool = False) -> torch.nn.Module:
    options = TINY.get(arch, {})
    return build_model(
        ModelSpec(arch, vocab, classes, d_model=16, n_layers=3, options=options, start_token=start_token)
    )


RESUMED_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
"""float32 summation order only: a resumed pass runs other matmul shapes, whose kernels
(oneDNN on AMX/AVX512-FP16 CPUs) add up in another order (3.5e-6 apart seen); a wrong
resumed state is off by O(1)."""


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
            torch.testing.assert_close(logits, full_logits, **RESUMED_TOLERANCE)
            for later in range(tap, len(states)):
                torch.testing.assert_close(resumed[later], full_states[later], **RESUMED_TOLERANCE)
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
    lstm = match_width(ModelSpec("lstm", 2, 2, d_model=128, n_layers=4), 830_000)
    assert lstm.width is None


def test_unknown_architecture_is_rejected():
    with pytest.raises(ValueError, match="unknown architecture"):
        ModelSpec("rwkv", 2, 2, d_model=16, n_layers=2)


@pytest.mark.parametrize("arch", ARCHS)
def test_checkpoint_round_trip(tmp_path, arch):
    model = tiny(arch, vocab=4, classes=3).eval()
    save_model(model, tmp_path, extra={"task": "dyck"})
    loaded = load_model(tmp_path)
    tokens = torch.randint(0, 4, (2, 10))
    torch.testing.assert_close(loaded(tokens), model(tokens))
    meta = json.loads((tmp_path / "model.json").read_text())
    assert meta["params"] == sum(p.numel() for p in loaded.parameters())  # the model the checkpoint rebuilds
    table = params_table([meta], target=2 * meta["params"])
    assert table.loc[0, "params"] == meta["params"]
    assert table.loc[0, "relative_deviation"] == -0.5 and not table.loc[0, "within_tolerance"]


@pytest.mark.parametrize("cell, gates", [("lstm", 4), ("gru", 3)])
def test_a_recurrent_tagger_records_the_parameter_count_derived_by_hand(tmp_path, cell, gates):
    """Embedding (vocab x d); per layer, ``gates`` gate blocks of an input and a recurrent
    weight (d x d) and two biases (d); the head (d x classes, plus a bias)."""
    vocab, classes, d, layers = 4, 3, 16, 3
    by_hand = vocab * d + layers * gates * (2 * d * d + 2 * d) + d * classes + classes
    save_model(tiny(cell, vocab=vocab, classes=classes), tmp_path)
    assert json.loads((tmp_path / "model.json").read_text())["params"] == by_hand


def test_transformer_runs_beyond_training_length():
    model = tiny("transformer").eval()
    assert model(torch.randint(0, 6, (1, 300))).shape == (1, 300, 6)


def test_the_transformer_block_takes_rotary_share_and_residual_layout_from_its_options():
    today = tiny("transformer").backbone.layers[0]
    assert today.use_parallel_residual and today.attention.rotary_ndims == 8 // 4  # head 8, a quarter
    spec = ModelSpec(
        "transformer",
        6,
        6,
        d_model=16,
        n_layers=2,
        options={"heads": 2, "rotary_pct": 1.0, "use_parallel_residual": False},
    )
    block = build_model(spec).backbone.layers[0]
    assert not block.use_parallel_residual and block.attention.rotary_ndims == 8


@pytest.mark.parametrize("arch", ARCHS)
def test_a_start_token_adds_one_embedding_row_and_callers_see_positions_1_to_L(arch):
    model = tiny(arch, start_token=True).eval()
    assert model.backbone.get_input_embeddings().num_embeddings == 7  # six symbols and the start
    assert count_parameters(model) == count_parameters(tiny(arch)) + 16
    tokens = torch.randint(0, 6, (3, 13))
    logits, states = model(tokens, return_states=True)
    assert logits.shape == (3, 13, 6)
    assert all(s.shape == (3, 13, 16) for s in states)
    torch.testing.assert_close(model(tokens), logits)
    torch.testing.assert_close(states[0], model.backbone.get_input_embeddings()(tokens))
    # The first input token sees the start symbol before it: its embedding row matters.
    with torch.no_grad():
        model.backbone.get_input_embeddings().weight[6] += 1.0
    assert not torch.allclose(model(tokens, return_states=True)[1][-1][:, 0], states[-1][:, 0])


def _start_position_inputs(model) -> list[torch.Tensor]:
    """Registers pre-hooks that record the start position of what every block and the
    head receive: tap i's output (edited, if it was) enters block i, the last tap's the head."""
    seen: list[torch.Tensor] = []
    consumers = [*model.backbone.layers, model.head]
    for module in consumers:
        module.register_forward_pre_hook(lambda _, args: seen.append(args[0][:, 0].clone()))
    return seen


@pytest.mark.parametrize("arch", ARCHS)
def test_an_edit_at_any_tap_never_sees_nor_changes_the_start_position(arch):
    model = tiny(arch, start_token=True).eval()
    tokens = torch.randint(0, 6, (2, 9))
    seen = _start_position_inputs(model)
    with torch.no_grad():
        _, clean = model(tokens, return_states=True)
        start = list(seen)
        for tap in range(len(clean)):
            seen.clear()
            shapes = []
            edit = {tap: lambda h, shapes=shapes: shapes.append(h.shape) or h * 0 + 100.0}
            _, edited = model(tokens, edits=edit, return_states=True)
            assert shapes == [(2, 9, 16)]  # the edit is handed positions 1..L only
            assert torch.all(edited[tap] == 100.0)
            for before, after in zip(start, seen, strict=True):
                torch.testing.assert_close(after, before, rtol=0, atol=0)


@pytest.mark.parametrize("arch", ["transformer", "mamba", "mamba2", "gru"])
def test_a_pass_resumed_at_a_tap_equals_the_full_pass_with_a_start_token(arch):
    model = tiny(arch, start_token=True).eval()
    tokens = torch.randint(0, 6, (3, 11))
    with torch.no_grad():
        _, states = model(tokens, return_states=True)
        for tap in range(len(states)):
            edit = {tap: lambda h: h * 0.5 + 1.0}
            full_logits, full_states = model(tokens, edits=edit, return_states=True)
            with model.resumed_at(tap, states[tap]):
                logits, resumed = model(tokens, edits=edit, return_states=True)
            torch.testing.assert_close(logits, full_logits, **RESUMED_TOLERANCE)
            for later in range(tap, len(states)):
                torch.testing.assert_close(resumed[later], full_states[later], **RESUMED_TOLERANCE)


@pytest.mark.parametrize("arch", ["transformer", "lstm"])
def test_a_model_with_a_start_token_reloads_from_disk_equal(tmp_path, arch):
    model = tiny(arch, vocab=4, classes=3, start_token=True).eval()
    save_model(model, tmp_path)
    loaded = load_model(tmp_path)
    assert loaded.spec == model.spec and loaded.spec.start_token
    tokens = torch.randint(0, 4, (2, 10))
    torch.testing.assert_close(loaded(tokens), model(tokens), rtol=0, atol=0)


def test_a_checkpoint_saved_before_the_start_token_existed_loads_without_one(tmp_path):
    model = tiny("gru", vocab=4, classes=3).eval()
    save_model(model, tmp_path)
    meta = json.loads((tmp_path / "model.json").read_text())
    del meta["spec"]["start_token"]
    (tmp_path / "model.json").write_text(json.dumps(meta))
    assert not load_model(tmp_path).spec.start_token


def test_a_pretrained_backbone_takes_no_start_token():
    with pytest.raises(ValueError, match="start_token applies to the small models only"):
        ModelSpec(
            "transformer", 4, 3, d_model=16, n_layers=2, pretrained="resources/models/x", start_token=True
        )


def test_a_start_token_among_the_options_goes_to_the_spec_not_to_the_backbone():
    spec = matched_spec("gru", "s3", None, 16, 2, {"start_token": True}, target_params=1000)
    assert spec.start_token and spec.options == {}
    assert not matched_spec("gru", "s3", None, 16, 2, {}, target_params=1000).start_token


@pytest.mark.parametrize("arch", ["mamba", "mamba2"])
def test_the_time_step_range_sets_every_channels_initial_step_size(arch):
    """``time_step_min``/``time_step_max`` reach transformers' initialisation: every initial
    dt (softplus of Mamba's ``dt_proj.bias``, of Mamba-2's per-head ``dt_bias``) lies in the
    range (the sweeps' dt knob)."""
    for low, high in [(0.001, 0.1), (0.01, 0.1), (0.001, 0.01)]:
        options = {**TINY[arch], "time_step_min": low, "time_step_max": high}
        model = build_model(ModelSpec(arch, 6, 6, d_model=16, n_layers=2, options=options))
        biases = [
            m.dt_proj.bias if arch == "mamba" else m.dt_bias for m in model.modules() if hasattr(m, "A_log")
        ]
        steps = torch.nn.functional.softplus(torch.cat(biases))
        assert steps.numel() > 0
        assert (steps >= low * (1 - 1e-4)).all() and (steps <= high * (1 + 1e-4)).all()
        assert steps.max() / steps.min() > 0.5 * high / low  # drawn across the range, not one value


def test_mamba2_a_init_range_draws_every_heads_decay_rate_from_the_range():
    options = {**TINY["mamba2"], "A_init_range": [4.0, 8.0]}
    default, ranged = (
        build_model(ModelSpec("mamba2", 6, 6, d_model=16, n_layers=3, options=opts))
        for opts in (TINY["mamba2"], options)
    )
    rates = [m.A_log.exp() for m in ranged.modules() if hasattr(m, "A_log")]
    assert len(rates) == 3
    for a in rates:
        assert ((a >= 4.0) & (a <= 8.0)).all() and a.unique().numel() == a.numel()
    defaults = [m.A_log.exp() for m in default.modules() if hasattr(m, "A_log")]
    torch.testing.assert_close(defaults[0], torch.arange(1.0, 1 + defaults[0].numel()))
