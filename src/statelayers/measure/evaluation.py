"""A trained run on held-out data: behaviour and hidden states, one forward pass per file.

One job per run does both because starting a process that imports torch and
transformers costs seconds, a sizeable share of a small model's evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from statelayers import files
from statelayers.measure.behaviour import behaviour_row
from statelayers.measure.states import head, states_table, write_states
from statelayers.models.inference import predict
from statelayers.models.tagger import SequenceTagger
from statelayers.tasks.data import to_arrays


def evaluate_run(
    model: SequenceTagger,
    probe_file: str | Path,
    probe_states: str | Path,
    test_files: Mapping[int, str | Path],
    test_states: Mapping[int, str | Path],
    test_sequences: int,
    probe_sequences: int | None = None,
) -> list[dict]:
    """Write every layer's states on the probe split (its first ``probe_sequences``, or
    all) to ``probe_states`` and on the first ``test_sequences`` test sequences of each
    length to ``test_states[length]``; return one behaviour row per length, scored on
    all its test sequences."""
    write_states(model, head(to_arrays(files.read_parquet(probe_file)), probe_sequences), probe_states)
    rows = []
    for length in sorted(test_files):
        data = to_arrays(files.read_parquet(test_files[length]))
        predicted, states = predict(model, data["tokens"], keep_states=test_sequences)
        rows.append(behaviour_row(length, predicted, data["labels"]))
        files.write_parquet(states_table(states, head(data, test_sequences)), test_states[length])
    return rows
