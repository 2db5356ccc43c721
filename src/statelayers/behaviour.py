"""Task behaviour of a trained model: token and whole-sequence accuracy per length."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from statelayers import io
from statelayers.data import to_arrays
from statelayers.models import SequenceTagger, StateEdit


@torch.no_grad()
def accuracy(
    model: SequenceTagger,
    tokens: np.ndarray,
    labels: np.ndarray,
    batch_size: int = 256,
    edits: Mapping[int, StateEdit] | None = None,
) -> tuple[float, float]:
    """(token accuracy, whole-sequence accuracy) of ``model`` on int arrays ``(n, length)``,
    optionally with layer ``edits`` (see :meth:`SequenceTagger.forward`)."""
    model.eval()
    device = next(model.parameters()).device
    correct_tokens = correct_sequences = 0
    for start in range(0, len(tokens), batch_size):
        x = torch.as_tensor(tokens[start : start + batch_size], device=device)
        y = torch.as_tensor(labels[start : start + batch_size], device=device)
        hit = model(x, edits=edits).argmax(-1) == y
        correct_tokens += hit.sum().item()
        correct_sequences += hit.all(dim=1).sum().item()
    return correct_tokens / labels.size, correct_sequences / len(labels)


def behaviour(model: SequenceTagger, test_files: Mapping[int, str]) -> list[dict]:
    """One row per evaluation length from the test data files keyed by length."""
    rows = []
    for length, path in sorted(test_files.items()):
        data = to_arrays(io.read_parquet(path))
        token_accuracy, sequence_accuracy = accuracy(model, data["tokens"], data["labels"])
        rows.append(
            {
                "eval_length": length,
                "token_accuracy": token_accuracy,
                "sequence_accuracy": sequence_accuracy,
                "n_sequences": len(data["tokens"]),
            }
        )
    return rows
