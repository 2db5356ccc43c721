"""Task behaviour of a trained model: token and whole-sequence accuracy per evaluation length."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from statelayers import files
from statelayers.models.inference import predict, scores
from statelayers.models.tagger import SequenceTagger
from statelayers.tasks.data import to_arrays


def behaviour_row(length: int, predicted: np.ndarray, labels: np.ndarray) -> dict:
    token_accuracy, sequence_accuracy = scores(predicted, labels)
    return {
        "eval_length": length,
        "token_accuracy": token_accuracy,
        "sequence_accuracy": sequence_accuracy,
        "n_sequences": len(labels),
    }


def behaviour(model: SequenceTagger, test_files: Mapping[int, str | Path]) -> list[dict]:
    """One behaviour row per evaluation length, from the test data files keyed by length."""
    rows = []
    for length in sorted(test_files):
        data = to_arrays(files.read_parquet(test_files[length]))
        rows.append(behaviour_row(length, predict(model, data["tokens"])[0], data["labels"]))
    return rows
