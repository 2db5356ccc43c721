"""config/config.yaml as the tests read it: the one source of the study's settings."""

from dataclasses import fields
from pathlib import Path

import yaml

from statelayers.training import RunInputs, TrainConfig

CONFIG = yaml.safe_load((Path(__file__).parents[1] / "config" / "config.yaml").read_text())


def training_settings(**changes) -> dict:
    """config.yaml's shared training settings (the fields of TrainConfig), with ``changes``."""
    names = {field.name for field in fields(TrainConfig)}
    return {key: value for key, value in CONFIG["training"].items() if key in names} | changes


def train_config(**changes) -> TrainConfig:
    """:func:`training_settings` as a TrainConfig."""
    return TrainConfig(**training_settings(**changes))


def cpu_run(spec: dict, training: dict, validation_path, seed: int = 0, train_length: int = 10) -> RunInputs:
    """A run on the CPU of data seed 0, without Mamba settings or a corpus."""
    return RunInputs(
        spec=spec,
        training=training,
        seed=seed,
        data_seed=0,
        train_length=train_length,
        device="cpu",
        mamba=None,
        validation_path=str(validation_path),
        corpus_path=None,
    )
