"""Pretrained backbones (Pythia, Mamba, Mamba-2) as sequence taggers for the formal tasks.

A model is fetched once with transformers' ``from_pretrained`` (a hub id, or a local
directory) and saved with ``save_pretrained`` into ``resources/models/{name}/``: the
base model (no language-model head) and its tokenizer. Fine-tuning then loads it from
there with ``from_pretrained`` again, so a cluster job never needs the network.

Task symbols are mapped to the backbone's vocabulary through its tokenizer, so the
model starts from its own embeddings of familiar characters:

============ ===========================================================
parity       ``0 1``
s3           ``A B C D E F`` (the six permutations in :data:`formal.S3_ELEMENTS` order)
dyck         openers ``( [ { <``, closers ``) ] } >`` (types 0..k-1, k <= 4)
codedepth    keywords and operators as themselves; the token classes as
             ``x 1 "s" NEWLINE NL INDENT DEDENT ?`` (name, number, string, ...)
============ ===========================================================

A symbol whose text is one token of its own takes that token's id. Any other symbol
(its text splits into several tokens, as many of Code-Depth's operators do in BPE
vocabularies) gets a new embedding row appended to the backbone's, initialised by
transformers' ``resize_token_embeddings`` from the mean and covariance of the
existing rows. A token-classification head (linear, on the final hidden state) is
trained with the whole backbone, in float32 whatever dtype the checkpoint was saved in.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from pathlib import Path

from statelayers.models.registry import PRETRAINED_MODEL_TYPES
from statelayers.models.spec import ModelSpec

log = logging.getLogger(__name__)


DYCK_BRACKETS = ("()", "[]", "{}", "<>")
CODE_CLASS_TEXT = {
    "<name>": "x",
    "<number>": "1",
    "<string>": '"s"',
    "<newline>": "NEWLINE",
    "<nl>": "NL",
    "<indent>": "INDENT",
    "<dedent>": "DEDENT",
    "<other>": "?",
}


class PretrainedUnavailable(RuntimeError):
    """A pretrained model could not be loaded (offline, wrong id, no local copy)."""


def symbol_texts(task: str, params: Mapping | None = None) -> list[str]:
    """The text of each task symbol, in token-id order (see the module table)."""
    params = dict(params or {})
    if task == "parity":
        return ["0", "1"]
    if task == "s3":
        return list("ABCDEF")
    if task == "dyck":
        k = params.get("k", 2)
        if k > len(DYCK_BRACKETS):
            raise ValueError(f"dyck with k={k} has no bracket text beyond {len(DYCK_BRACKETS)} types")
        return [pair[0] for pair in DYCK_BRACKETS[:k]] + [pair[1] for pair in DYCK_BRACKETS[:k]]
    if task == "codedepth":
        from statelayers.tasks.codedepth import VOCAB

        return [CODE_CLASS_TEXT.get(entry, entry) for entry in VOCAB]
    raise ValueError(f"no symbol text for task {task!r}")


def token_ids(tokenizer, texts: list[str], vocab_size: int) -> tuple[tuple[int, ...], int]:
    """Each text's id in a vocabulary of ``vocab_size`` embedding rows, and how many rows
    must be appended: a text that is one token not already taken keeps that token,
    every other text (several tokens, the unknown token, or a token taken) gets the next
    new row (``vocab_size``, ``vocab_size + 1``, ...)."""
    ids: list[int] = []
    added = 0
    for text in texts:
        encoded = tokenizer.encode(text, add_special_tokens=False)
        own = len(encoded) == 1 and encoded[0] != tokenizer.unk_token_id and encoded[0] < vocab_size
        if own and encoded[0] not in ids:
            ids.append(int(encoded[0]))
        else:
            ids.append(vocab_size + added)
            added += 1
    return tuple(ids), added


def fetch(name: str, source: str, out_dir: str | Path) -> None:
    """Load ``source`` (hub id or directory) with ``from_pretrained`` and save model and
    tokenizer to ``out_dir`` (written to a temporary directory, then renamed)."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    out_dir = Path(out_dir)
    try:
        model_type = AutoConfig.from_pretrained(source).model_type
        if model_type not in PRETRAINED_MODEL_TYPES:
            raise PretrainedUnavailable(
                f"pretrained model {name!r} ({source}) is a {model_type!r} model; "
                f"supported: {', '.join(PRETRAINED_MODEL_TYPES)}"
            )
        model = AutoModel.from_pretrained(source, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as err:
        raise PretrainedUnavailable(
            f"pretrained model {name!r} ({source}) cannot be loaded: {err}\n"
            "Without network (or with HF_HUB_OFFLINE=1) provide a local copy: on a machine with "
            f"network run `hf download {source} --local-dir <dir>` (or save_pretrained model and "
            f"tokenizer there), copy <dir> here and set `pretrained.models.{name}: <dir>` in the config."
        ) from err
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    log.info(
        "%s: %s (%s, %d layers) saved to %s",
        name,
        source,
        model_type,
        model.config.num_hidden_layers,
        out_dir,
    )


def pretrained_spec(pretrained: str, task: str, task_params: Mapping | None = None) -> ModelSpec:
    """The spec of a tagger on the fetched backbone in ``pretrained`` for ``task``."""
    from transformers import AutoConfig, AutoTokenizer

    from statelayers.tasks.formal import task_spec

    config = AutoConfig.from_pretrained(pretrained)
    if config.model_type not in PRETRAINED_MODEL_TYPES:
        raise ValueError(f"{pretrained}: unsupported model_type {config.model_type!r}")
    sizes = task_spec(task, task_params)
    ids, added = token_ids(
        AutoTokenizer.from_pretrained(pretrained), symbol_texts(task, task_params), config.vocab_size
    )
    return ModelSpec(
        PRETRAINED_MODEL_TYPES[config.model_type],
        sizes.vocab_size,
        sizes.num_classes,
        d_model=config.hidden_size,
        n_layers=config.num_hidden_layers,
        pretrained=str(pretrained),
        token_ids=ids,
        added_tokens=added,
    )


def pretrained_backbone(spec: ModelSpec, with_weights: bool = True):
    """The backbone of ``spec.pretrained`` in float32 with ``spec.added_tokens`` new
    embedding rows: with its pretrained weights (new rows drawn from the existing rows'
    mean and covariance), or only its architecture, for a checkpoint to fill."""
    import torch
    from transformers import AutoConfig, AutoModel

    if with_weights:
        backbone = AutoModel.from_pretrained(spec.pretrained, dtype=torch.float32)
    else:
        backbone = AutoModel.from_config(AutoConfig.from_pretrained(spec.pretrained), dtype=torch.float32)
    if spec.added_tokens:
        rows = backbone.config.vocab_size + spec.added_tokens
        backbone.resize_token_embeddings(rows, mean_resizing=with_weights)
    return backbone
