"""Pretrained backbones: fetching, symbol mapping, fine-tuning, and the shared intervention hooks."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from tiny_hf import save_tiny

from statelayers import io
from statelayers.models import load_model
from statelayers.pretrained import (
    PretrainedUnavailable,
    fetch,
    pretrained_spec,
    pretrained_tagger,
    symbol_texts,
    token_ids,
)
from statelayers.tasks import generate
from statelayers.train import TrainConfig, train, train_checkpoint


@pytest.fixture(scope="module", params=["gpt_neox", "mamba", "mamba2"])
def fetched(request, tmp_path_factory):
    """A tiny model saved like a hub model, then fetched through from_pretrained."""
    root = tmp_path_factory.mktemp(request.param)
    fetch(request.param, str(save_tiny(root / "hub", request.param)), root / "fetched")
    return root / "fetched"


def test_fetch_writes_model_and_tokenizer_that_load_back(fetched):
    from transformers import AutoModel, AutoTokenizer

    assert (fetched / "config.json").exists()
    assert not fetched.with_name("fetched.tmp").exists()
    assert AutoModel.from_pretrained(fetched).config.num_hidden_layers == 3
    assert AutoTokenizer.from_pretrained(fetched).encode("(", add_special_tokens=False)


def test_every_task_symbol_gets_its_own_token(fetched):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(fetched)
    for task in ("parity", "s3", "dyck"):
        ids = token_ids(tokenizer, symbol_texts(task, {"k": 2}))
        assert len(set(ids)) == len(ids)
        assert [tokenizer.decode([i]) for i in ids] == symbol_texts(task, {"k": 2})


def test_symbols_sharing_a_token_are_an_error(fetched):
    from transformers import AutoTokenizer

    with pytest.raises(ValueError, match="share a token id"):
        token_ids(AutoTokenizer.from_pretrained(fetched), ["(x", "(y"])


def test_an_unsupported_architecture_is_refused_with_its_name(tmp_path):
    with pytest.raises(PretrainedUnavailable, match=r"'tiny-bert'.*'bert' model; supported"):
        fetch("tiny-bert", str(save_tiny(tmp_path / "bert", "bert")), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_offline_fetch_names_the_model_and_says_how_to_provide_it(tmp_path):
    code = "from statelayers.pretrained import fetch; fetch('pythia-x', 'EleutherAI/no-such-model', 'out')"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "PretrainedUnavailable: pretrained model 'pythia-x' (EleutherAI/no-such-model)" in result.stderr
    assert "local copy" in result.stderr and "pretrained.models.pythia-x" in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_tagger_starts_from_the_pretrained_weights_and_maps_symbols(fetched):
    from transformers import AutoModel

    spec = pretrained_spec(str(fetched), "dyck", {"k": 2})
    assert (spec.d_model, spec.n_layers, spec.num_classes, spec.vocab_size) == (16, 3, 3, 4)
    model = pretrained_tagger(spec)
    reference = AutoModel.from_pretrained(fetched)
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(model.backbone.state_dict()[name], value, rtol=0, atol=0)
    tokens = torch.tensor([[0, 1, 3, 2]])
    mapped = torch.tensor([spec.token_ids])[:, [0, 1, 3, 2]]
    reference.eval(), model.eval()
    expected = reference(input_ids=mapped).last_hidden_state
    torch.testing.assert_close(model.features(tokens), expected)


def test_every_layer_is_a_tap_and_edits_fire_there(fetched):
    model = pretrained_tagger(pretrained_spec(str(fetched), "parity")).eval()
    tokens = torch.randint(0, 2, (2, 6))
    logits, clean = model(tokens, return_states=True)
    assert len(clean) == 3 + 1
    for tap in range(len(clean)):
        edited_logits, edited = model(tokens, edits={tap: torch.zeros_like}, return_states=True)
        assert torch.count_nonzero(edited[tap]) == 0
        for earlier in range(tap):
            torch.testing.assert_close(edited[earlier], clean[earlier])
        assert not torch.allclose(edited_logits, logits)


def test_fine_tuning_saves_a_checkpoint_that_reloads_identically(fetched, tmp_path):
    rng = np.random.default_rng(0)
    for split, n in (("train", 64), ("validation", 8)):
        data = generate("parity", n, 10, rng)
        frame = pd.DataFrame({"seq_id": range(n), **{k: list(v) for k, v in data.items()}})
        io.write_parquet(frame, tmp_path / f"{split}.parquet")
    training = dict(steps=4, batch_size=4, grad_accumulation=2, precision="fp32", eval_every=2, log_every=2)
    spec_params = {"pretrained": str(fetched), "task": "parity", "task_params": {}}
    model = train_checkpoint(
        spec_params,
        training,
        seed=0,
        device="cpu",
        mamba=None,
        train_path=str(tmp_path / "train.parquet"),
        validation_path=str(tmp_path / "validation.parquet"),
        out_dir=tmp_path / "model",
        history_path=tmp_path / "history.csv",
    )
    meta = io.read_json(tmp_path / "model" / "model.json")
    assert meta["spec"]["pretrained"] == str(fetched) and meta["target_params"] is None
    reloaded = load_model(tmp_path / "model")
    tokens = torch.randint(0, 2, (3, 10))
    torch.testing.assert_close(reloaded(tokens), model.eval()(tokens))


def test_gradient_accumulation_equals_one_large_batch(fetched):
    data = generate("parity", 32, 8, np.random.default_rng(1))
    arrays = (data["tokens"], data["labels"])
    weights = []
    for batch, accumulation in ((8, 1), (4, 2)):
        torch.manual_seed(0)
        model = pretrained_tagger(pretrained_spec(str(fetched), "parity"))
        config = TrainConfig(steps=1, batch_size=batch, grad_accumulation=accumulation, eval_every=1, lr=1e-2)
        train(model, arrays, arrays, config, seed=0, device=torch.device("cpu"))
        weights.append(model.head.weight.detach().clone())
    torch.testing.assert_close(weights[0], weights[1], rtol=1e-4, atol=1e-6)


def test_bf16_autocast_trains_with_finite_loss(fetched):
    data = generate("parity", 16, 8, np.random.default_rng(2))
    model = pretrained_tagger(pretrained_spec(str(fetched), "parity"))
    config = TrainConfig(steps=2, batch_size=4, precision="bf16", eval_every=2, log_every=1)
    history = train(
        model,
        (data["tokens"], data["labels"]),
        (data["tokens"], data["labels"]),
        config,
        0,
        torch.device("cpu"),
    )
    assert all(np.isfinite(row["loss"]) for row in history)
