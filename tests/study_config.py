"""config/config.yaml as the tests read it (the one source of the study's settings), and
variants of it that no job could run."""

from dataclasses import fields, replace
from pathlib import Path

import yaml

from statelayers.measure.erasures import ErasureConfig
from statelayers.measure.probes import ProbeConfig
from statelayers.report.stats import IntervalConfig
from statelayers.training import RunInputs, TrainConfig

CONFIG = yaml.safe_load((Path(__file__).parents[1] / "config" / "config.yaml").read_text())


def probe_config(**changes) -> ProbeConfig:
    """config.yaml's ``probes`` as a ProbeConfig, with ``changes``."""
    return ProbeConfig(**CONFIG["probes"] | changes)


def erasure_config(**changes) -> ErasureConfig:
    """config.yaml's ``erasures`` (less the lengths and sequences, which choose the data) as
    an ErasureConfig, with ``changes``."""
    data = ("eval_lengths", "sequences")
    settings = {key: value for key, value in CONFIG["erasures"].items() if key not in data}
    return replace(ErasureConfig.from_settings(settings), **changes)


def interval_config() -> IntervalConfig:
    """config.yaml's ``statistics`` as an IntervalConfig."""
    return IntervalConfig(**CONFIG["statistics"])


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


def with_bad_value(config: dict, path: list[str], value) -> dict:
    """``config`` with the key at ``path`` set to ``value`` (deleted for ``KeyError``)."""
    node = config
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return config


BAD_CONFIGS = [
    (["architectures"], ["transformer", "rwkv"], "architectures"),
    (["tasks"], ["parity", "copying"], "tasks"),
    (["eval_lengths"], [40, 0], "eval_lengths"),
    (["train_length"], 0, "train_length"),
    (["probes"], KeyError, "'probes' is a required property"),
    (["seeds"], "zero", "seeds"),
    (["training", "lr"], "fast", "lr"),
    (["model", "hidden"], 64, "hidden"),
    (["task_params", "dyck", "max_depth"], 50, "max_depth"),
    (["pretrained", "models"], [{"name": "gru", "source": "EleutherAI/pythia-160m"}], "gru"),
    (["pretrained", "training", "precision"], "fp8", "precision"),
    (["training", "target_accuracy"], 1.5, "target_accuracy"),
    (["training", "target_accuracy"], 0, "target_accuracy"),
    (["training", "max_steps"], 0, "max_steps"),
    (["sweep", "lr"], [], "['sweep']['lr']"),
    (["sweep", "lr"], [0.001, 0.0], "['sweep']['lr']"),
    (["eval_lengths"], [60, 80], "eval_lengths must include train_length"),
    (["model", "options", "transformer", "heads"], 3, "must divide model.d_model"),
    (["training", "overrides"], {"lstm/s4": {"lr": 0.003}}, "unknown key 'lstm/s4'"),
    (["model", "options", "rwkv/s3"], {"start_token": True}, "rwkv/s3"),
    (["model", "options", "transformer/parity"], {"rotary_share": 1.0}, "rotary_share"),
]
"""Configs no job could run, and what the refusal must name."""
