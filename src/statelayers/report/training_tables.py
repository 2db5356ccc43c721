"""The tables of how every run trained, from what training left beside each checkpoint
(``model.json`` and ``train_log.csv``, :mod:`statelayers.training`): read by the claims,
the figures and the README, so they sit with the report, not with the training loop."""

from __future__ import annotations

import pandas as pd

TRAINING_COLUMNS = (
    "arch",
    "task",
    "seed",
    "steps",
    "reached",
    "validation_token_accuracy",
    "train_seconds",
    "max_steps",
    "target_accuracy",
    "train_length",
)


def training_table(metas: list[dict]) -> pd.DataFrame:
    """``tables/training.csv``: one row per run from its ``model.json``, columns :data:`TRAINING_COLUMNS`."""
    rows = [
        {
            "arch": meta["spec"]["arch"],
            "task": meta["task"],
            "seed": meta["seed"],
            "steps": meta["steps"],
            "reached": meta["reached"],
            "validation_token_accuracy": meta["validation_token_accuracy"],
            "train_seconds": meta["train_seconds"],
            "max_steps": meta["training"]["max_steps"],
            "target_accuracy": meta["training"]["target_accuracy"],
            "train_length": meta["train_length"],
        }
        for meta in metas
    ]
    return pd.DataFrame(rows, columns=list(TRAINING_COLUMNS))


def learning_curves(metas: list[dict], histories: list[pd.DataFrame]) -> pd.DataFrame:
    """``tables/learning_curves.csv``: arch, task, seed, step, validation token and
    sequence accuracy at every validation check of every run (``histories`` are the
    runs' ``train_log.csv`` in the order of ``metas``)."""
    frames = []
    for meta, history in zip(metas, histories, strict=True):
        checks = history.dropna(subset=["validation_token_accuracy"])
        frames.append(
            checks[["step", "validation_token_accuracy", "validation_sequence_accuracy"]].assign(
                arch=meta["spec"]["arch"], task=meta["task"], seed=meta["seed"]
            )
        )
    columns = ["arch", "task", "seed", "step", "validation_token_accuracy", "validation_sequence_accuracy"]
    return pd.concat(frames, ignore_index=True)[columns]
