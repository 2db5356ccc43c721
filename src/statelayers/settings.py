"""What each job of the workflow is given, from the validated config; torch-free.

The Snakefile reads this at parse time, so nothing here imports torch. The schema
(``workflow/schemas/config.schema.yaml``) checks each value alone; :func:`check_config`
checks what only the values together decide, so a config no job could run stops before
any job starts, with a message that names the keys.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from statelayers.models.registry import base_arch

RUNTIME_KEYS = ("device", "threads", "mamba_scan", "mamba_backend", "overrides", "protect_checkpoints")
"""``training`` keys that say where and how a job runs, not what it trains: not passed as
training settings, so changing them reruns only what they concern."""


def check_config(config: Mapping) -> None:
    """Raise ``ValueError`` for settings that pass the schema but cannot work together."""
    train_length = config["train_length"]
    dyck_depth = config["task_params"]["dyck"]["max_depth"]
    if dyck_depth > train_length:
        raise ValueError(
            f"config: task_params.dyck.max_depth ({dyck_depth}) exceeds train_length ({train_length}); "
            "no training sequence could reach it"
        )
    if train_length not in config["eval_lengths"]:
        raise ValueError(
            f"config: eval_lengths must include train_length ({train_length}): the claims check "
            "reads whether a run learned its task from its test accuracy at the training length"
        )
    if train_length not in config["interventions"]["eval_lengths"]:
        raise ValueError(
            f"config: interventions.eval_lengths must include train_length ({train_length}): "
            "readability is compared with necessity at the training length"
        )
    names = [model["name"] for model in config["pretrained"]["models"]]
    if len(set(names)) < len(names):
        raise ValueError("config: pretrained.models: two models share a name")
    model = config["model"]
    heads = model["options"].get("transformer", {}).get("heads", 4)
    if "transformer" in map(base_arch, config["architectures"]) and model["d_model"] % heads:
        raise ValueError(
            f"config: model.options.transformer.heads ({heads}) must divide model.d_model "
            f"({model['d_model']}): every attention head gets d_model / heads dimensions"
        )


def check_pretrained_sources(sources: Mapping[str, str], backbone_dir: Callable[[str], str]) -> None:
    """Raise ``ValueError`` when a pretrained model (name: hub id or local directory) cannot
    be had: a local source that does not exist, or a hub id while offline
    (``HF_HUB_OFFLINE``) that is neither fetched to ``backbone_dir(name)`` nor in the
    Hugging Face cache."""
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    for name, source in sources.items():
        if Path(backbone_dir(name)).is_dir() or Path(source).expanduser().is_dir():
            continue
        if Path(source).is_absolute() or source.startswith((".", "~")):
            raise ValueError(f"config: pretrained.models.{name}: local directory {source} does not exist")
        if offline:
            from huggingface_hub import try_to_load_from_cache

            if not isinstance(try_to_load_from_cache(source, "config.json"), str):
                raise ValueError(
                    f"config: pretrained.models.{name}: {source} is not fetched and HF_HUB_OFFLINE is set; "
                    f"put a local copy (save_pretrained or `hf download {source} --local-dir DIR`) "
                    f"in {backbone_dir(name)} or set pretrained.models.{name} to its directory"
                )


def train_settings(config: Mapping, arch: str) -> dict:
    """The training settings of one small architecture: the shared ones, then its family's
    overrides, then its own (a Conv1D-ablated twin trains like its family unless told)."""
    training = config["training"]
    shared = {key: value for key, value in training.items() if key not in RUNTIME_KEYS}
    overrides = training["overrides"]
    return shared | overrides.get(base_arch(arch), {}) | overrides.get(arch, {})


def intervention_settings(config: Mapping, pretrained: bool) -> dict:
    """The erasure settings of a run; a pretrained model's on its own, fewer, sequences."""
    settings = {key: value for key, value in config["interventions"].items() if key != "eval_lengths"}
    if pretrained:
        settings["sequences"] = config["pretrained"]["intervention_sequences"]
    return settings


def run_scale(config: Mapping, pretrained: list[str], patching_tasks: list[str]) -> str:
    """One line that says at what scale the run measured, for the claims."""
    seeds, training, model = config["seeds"], config["training"], config["model"]
    scale = (
        f"{_count(len(seeds), 'seed')}; {len(config['architectures'])} architectures x "
        f"{len(config['tasks'])} tasks; {model['n_layers']} layers, d_model {model['d_model']}, "
        f"~{model['target_params']} parameters; at most {training['max_steps']} steps x batch "
        f"{training['batch_size']} of fresh sequences at L {config['train_length']}, stopping at "
        f"validation token accuracy {training['target_accuracy']} (two checks in a row, every "
        f"{training['eval_every']} steps); eval lengths {sorted(config['eval_lengths'])}"
    )
    if training["overrides"]:
        scale += f"; per-architecture settings {training['overrides']}"
    if pretrained:
        tuning, tuning_seeds = config["pretrained"]["training"], config["pretrained"]["seeds"]
        scale += (
            f"; pretrained {', '.join(pretrained)} fine-tuned at most {tuning['max_steps']} steps x "
            f"{tuning['batch_size'] * tuning['grad_accumulation']} sequences, "
            f"{_count(len(tuning_seeds), 'seed')}"
        )
    if patching_tasks:
        scale += f"; patching on {config['patching']['pairs']} pairs per run"
    return scale


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"
