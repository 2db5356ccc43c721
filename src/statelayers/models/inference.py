"""A tagger's predictions (and, in the same pass, its layer states) over many sequences.

Training's validation checks and every measurement score a model this way, so it sits
with the models, below both.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from tqdm import tqdm

from statelayers.console import progress_file
from statelayers.models.tagger import SequenceTagger, StateEdit

FORWARD_BATCH = 32
"""Sequences per inference forward pass. Small on purpose: on one CPU core Mamba-2's
chunked PyTorch scan at L = 120 takes 15.1 s for 256 sequences in one batch and 3.7 s
in batches of 32 (its per-chunk tensors leave the cache); the other four architectures
run at the same speed either way."""


@torch.no_grad()
def predict(
    model: SequenceTagger,
    tokens: np.ndarray,
    batch_size: int = FORWARD_BATCH,
    edits: Mapping[int, StateEdit] | None = None,
    keep_states: int = 0,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Predicted labels ``(n, length)`` of ``model`` on int array ``tokens``, optionally
    with layer ``edits`` (see :meth:`SequenceTagger.forward`).

    With ``keep_states > 0`` the same pass also returns the hidden states
    ``(layers, keep_states, length, d_model)`` (float32) of the first ``keep_states``
    sequences, so behaviour and states of one data file cost one forward pass.
    """
    model.eval()
    device = next(model.parameters()).device
    predicted, states = [], []
    progress = progress_file()
    for start in tqdm(
        range(0, len(tokens), batch_size),
        desc="forward",
        mininterval=10,
        file=progress,
        disable=progress is None or len(tokens) <= batch_size,
    ):
        x = torch.as_tensor(tokens[start : start + batch_size], device=device)
        keep = min(len(x), max(keep_states - start, 0))
        if keep:
            logits, layers = model(x, edits=edits, return_states=True)
            states.append(torch.stack(layers)[:, :keep].float().cpu().numpy())
        else:
            logits = model(x, edits=edits)
        predicted.append(logits.argmax(-1).cpu().numpy())
    return np.concatenate(predicted), (np.concatenate(states, axis=1) if states else None)


def scores(predicted: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(token accuracy, whole-sequence accuracy) of predictions ``(n, length)``."""
    hit = predicted == labels
    return float(hit.mean()), float(hit.all(axis=1).mean())


def accuracy(
    model: SequenceTagger,
    tokens: np.ndarray,
    labels: np.ndarray,
    batch_size: int = FORWARD_BATCH,
    edits: Mapping[int, StateEdit] | None = None,
) -> tuple[float, float]:
    """(token accuracy, whole-sequence accuracy) of ``model`` on ``tokens`` against ``labels``."""
    return scores(predict(model, tokens, batch_size, edits)[0], labels)
