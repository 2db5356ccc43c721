"""Tiny random GPT-NeoX / Mamba / Mamba-2 models with a tokenizer, saved like hub models.

They stand in for Pythia and Mamba-130M: same classes, same ``save_pretrained`` layout,
loaded through the same ``from_pretrained`` code path, no network.
"""

from __future__ import annotations

from pathlib import Path

from statelayers.models.pretrained import symbol_texts

SYMBOLS = sorted({text for task in ("parity", "s3", "dyck") for text in symbol_texts(task, {"k": 2})})


def save_tiny(directory: str | Path, kind: str, n_layers: int = 3, half: bool = False) -> Path:
    """Save a random ``kind`` (gpt_neox | mamba | mamba2 | bert) model and a word-level
    tokenizer; ``half`` saves float16 weights, as Pythia's hub checkpoints are."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        BertConfig,
        BertModel,
        GPTNeoXConfig,
        GPTNeoXModel,
        Mamba2Config,
        Mamba2Model,
        MambaConfig,
        MambaModel,
        PreTrainedTokenizerFast,
    )

    vocab = {text: i for i, text in enumerate(["[UNK]", *SYMBOLS])}
    common = {"vocab_size": 40, "hidden_size": 16, "num_hidden_layers": n_layers}
    model = {
        "gpt_neox": lambda: GPTNeoXModel(
            GPTNeoXConfig(**common, num_attention_heads=2, intermediate_size=32)
        ),
        "mamba": lambda: MambaModel(MambaConfig(**common, state_size=4, expand=2)),
        "mamba2": lambda: Mamba2Model(
            Mamba2Config(**common, state_size=8, expand=2, head_dim=8, num_heads=4, n_groups=1, chunk_size=8)
        ),
        "bert": lambda: BertModel(BertConfig(**common, num_attention_heads=2, intermediate_size=32)),
    }[kind]()
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    directory = Path(directory)
    (model.half() if half else model).save_pretrained(directory)
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]").save_pretrained(directory)
    return directory
