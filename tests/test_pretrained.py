"""Pretrained backbones: fetching, symbol mapping, fine-tuning, and the shared state-edit hooks."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from study_config import cpu_run, train_config, training_settings
from tiny_hf import save_tiny

from statelayers import files
from statelayers.models.pretrained import (
    PretrainedUnavailable,
    fetch,
    pretrained_spec,
    symbol_texts,
    token_ids,
)
from statelayers.models.tagger import SequenceTagger, load_model, pretrained_tagger, save_model
from statelayers.tasks.formal import generate
from statelayers.training import accumulate_gradients, train_checkpoint


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
        ids, added = token_ids(tokenizer, symbol_texts(task, {"k": 2}), vocab_size=40)
        assert added == 0 and len(set(ids)) == len(ids)
        assert [tokenizer.decode([i]) for i in ids] == symbol_texts(task, {"k": 2})


def test_symbols_that_are_not_one_token_get_new_embedding_rows(fetched):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(fetched)
    ids, added = token_ids(tokenizer, ["(", "( x", "zz", "("], vocab_size=40)
    assert ids == (tokenizer.convert_tokens_to_ids("("), 40, 41, 42) and added == 3


def test_codedepth_on_a_small_vocabulary_adds_rows_and_reloads(fetched, tmp_path):
    spec = pretrained_spec(str(fetched), "codedepth", {"max_depth": 4})
    assert spec.added_tokens > 0 and len(set(spec.token_ids)) == spec.vocab_size
    torch.manual_seed(0)
    model = pretrained_tagger(spec).eval()
    assert model.backbone.get_input_embeddings().num_embeddings == 40 + spec.added_tokens
    save_model(model, tmp_path)
    tokens = torch.randint(0, spec.vocab_size, (2, 7))
    torch.testing.assert_close(load_model(tmp_path)(tokens), model(tokens))


def test_half_precision_checkpoints_are_fine_tuned_in_float32(tmp_path):
    fetch("half", str(save_tiny(tmp_path / "hub", "gpt_neox", half=True)), tmp_path / "fetched")
    spec = pretrained_spec(str(tmp_path / "fetched"), "parity")
    for model in (pretrained_tagger(spec), SequenceTagger(spec)):
        assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_an_unsupported_architecture_is_refused_with_its_name(tmp_path):
    with pytest.raises(PretrainedUnavailable, match=r"'tiny-bert'.*'bert' model; supported"):
        fetch("tiny-bert", str(save_tiny(tmp_path / "bert", "bert")), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_offline_fetch_names_the_model_and_says_how_to_provide_it(tmp_path):
    code = (
        "from statelayers.models.pretrained import fetch; "
        "fetch('pythia-x', 'EleutherAI/no-such-model', 'out')"
    )
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
    torch.testing.assert_close(
        model(tokens), model.head(expected)
    )  # the head reads the mapped symbols' states


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
    data = generate("parity", 8, 10, np.random.default_rng(0))
    frame = pd.DataFrame({"seq_id": range(8), **{k: list(v) for k, v in data.items()}})
    files.write_parquet(frame, tmp_path / "validation.parquet")
    training = training_settings(
        max_steps=4, batch_size=4, grad_accumulation=2, precision="fp32", eval_every=2, log_every=2
    )
    spec = {"pretrained": str(fetched), "task": "parity", "task_params": {}}
    inputs = cpu_run(spec, training, tmp_path / "validation.parquet")
    model = train_checkpoint(inputs, out_dir=tmp_path / "model", history_path=tmp_path / "history.csv")
    meta = files.read_json(tmp_path / "model" / "model.json")
    assert meta["spec"]["pretrained"] == str(fetched) and meta["target_params"] is None
    reloaded = load_model(tmp_path / "model")
    tokens = torch.randint(0, 2, (3, 10))
    torch.testing.assert_close(reloaded(tokens), model.eval()(tokens))


def test_gradient_accumulation_equals_one_large_batch(fetched):
    data = generate("parity", 8, 8, np.random.default_rng(1))
    tokens, labels = torch.as_tensor(data["tokens"]), torch.as_tensor(data["labels"])
    torch.manual_seed(0)
    model = pretrained_tagger(pretrained_spec(str(fetched), "parity")).train()
    grads, losses = [], []
    for batch, accumulation in ((8, 1), (4, 2), (2, 4)):
        model.zero_grad()
        config = train_config(batch_size=batch, grad_accumulation=accumulation)
        losses.append(accumulate_gradients(model, tokens, labels, config, torch.device("cpu"))[0].item())
        grads.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
    for other, loss in zip(grads[1:], losses[1:]):
        assert loss == pytest.approx(losses[0], rel=1e-5)
        for a, b in zip(grads[0], other):
            torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("precision,dtype", [("bf16", torch.bfloat16), ("fp32", torch.float32)])
def test_precision_sets_the_dtype_of_the_forward_pass(fetched, precision, dtype):
    data = generate("parity", 4, 8, np.random.default_rng(2))
    model = pretrained_tagger(pretrained_spec(str(fetched), "parity")).train()
    seen = []
    model.head.register_forward_hook(lambda module, args, output: seen.append(output.dtype))
    config = train_config(batch_size=4, precision=precision)
    loss, _ = accumulate_gradients(
        model, torch.as_tensor(data["tokens"]), torch.as_tensor(data["labels"]), config, torch.device("cpu")
    )
    assert seen == [dtype] and np.isfinite(loss)
    assert all(p.grad.dtype == torch.float32 for p in model.parameters() if p.grad is not None)
