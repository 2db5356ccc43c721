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

from statelayers.models.registry import ARCHS, FAMILIES, SSM, base_arch
from statelayers.pairs import pair_keys, resolve
from statelayers.tasks.formal import TASKS

RUNTIME_KEYS = ("device", "threads", "mamba_scan", "mamba_backend", "protect_checkpoints")
"""``training`` keys that say where and how a job runs, not what it trains: not passed as
training settings, so changing them reruns only what they concern."""
PER_PAIR_KEYS = ("overrides", "pair_budgets")
"""``training`` keys that change the settings of some pairs (:func:`train_settings` applies
them): not training settings themselves."""


def overlaid(base: Mapping, overlay: Mapping) -> dict:
    """``overlay`` laid over ``base``, nested mappings key by key, as Snakemake lays a
    ``--configfile`` over the config (for tools that read an overlay without Snakemake)."""
    out = dict(base)
    for key, value in overlay.items():
        both = isinstance(value, Mapping) and isinstance(base.get(key), Mapping)
        out[key] = overlaid(base[key], value) if both else value
    return out


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
    if train_length not in config["erasures"]["eval_lengths"]:
        raise ValueError(
            f"config: erasures.eval_lengths must include train_length ({train_length}): "
            "readability is compared with necessity at the training length"
        )
    _check_pair_keys("training.overrides", config["training"]["overrides"], ARCHS)
    _check_pair_keys("training.pair_budgets", config["training"]["pair_budgets"] or {}, ARCHS)
    _check_pair_keys("model.options", config["model"]["options"], FAMILIES)
    _check_pair_keys("sweep.pairs", config["sweep"].get("pairs") or {}, ARCHS)
    names = [model["name"] for model in config["pretrained"]["models"]]
    if len(set(names)) < len(names):
        raise ValueError("config: pretrained.models: two models share a name")
    model = config["model"]
    if "transformer" in map(base_arch, config["architectures"]):
        for task in config["tasks"]:
            heads = resolve(model["options"], "transformer", task).get("heads", 4)
            if model["d_model"] % heads:
                key = (
                    "transformer/" + task
                    if "heads" in model["options"].get(f"transformer/{task}", {})
                    else "transformer"
                )
                raise ValueError(
                    f"config: model.options.{key}.heads ({heads}) must divide model.d_model "
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


def check_devices(config: Mapping, pretrained: list[str], has_gpu: bool) -> None:
    """Raise ``ValueError`` when the config asks for CUDA on a machine without an NVIDIA GPU
    (``has_gpu``): ``training.device``, or ``training.mamba_backend`` where a job runs Mamba
    or Mamba-2 (a small SSM architecture, or any ``pretrained`` model: its type is known
    only once fetched). The Snakefile checks at ``onstart``, local runs only: on a cluster
    the submitting host need not have a GPU (jobs check again)."""
    if has_gpu:
        return
    training = config["training"]
    if training["device"] == "cuda":
        raise ValueError(
            "config: training.device is 'cuda' but this machine has no NVIDIA GPU "
            "(nvidia-smi not found); use 'auto' or 'cpu'"
        )
    mamba_jobs = pretrained or [arch for arch in config["architectures"] if base_arch(arch) in SSM]
    if training["mamba_backend"] == "cuda" and mamba_jobs:
        raise ValueError(
            "config: training.mamba_backend is 'cuda' (the mamba-ssm kernels) but this machine "
            "has no NVIDIA GPU (nvidia-smi not found); use 'auto' or 'torch'"
        )


def _check_pair_keys(where: str, mapping: Mapping, names: tuple[str, ...]) -> None:
    """Every key of ``mapping`` is one of ``names`` or ``name/task``; else the error names
    the key. The schema admits keys of that shape; the registry and the task list know
    the names."""
    for key in mapping:
        name, _, task = key.partition("/")
        if name not in names or (task and task not in TASKS):
            raise ValueError(
                f"config: {where}: unknown key {key!r}; expected an architecture of {list(names)} "
                f"or architecture/task with a task of {list(TASKS)}"
            )


def pair_budget(config: Mapping, arch: str, task: str) -> int | None:
    """The fewest steps ``arch`` trains for on ``task``: ``training.pair_budgets`` under
    its most specific key (:func:`statelayers.pairs.pair_keys`); ``None`` where no key
    names the pair or ``pair_budgets`` is null (an overlay switches the budgets off so)."""
    budgets = config["training"]["pair_budgets"] or {}
    named = [budgets[key] for key in pair_keys(arch, task) if key in budgets]
    return named[-1] if named else None


def shared_training(config: Mapping) -> dict:
    """``training``'s settings shared by every run: all but where jobs run and the per-pair keys."""
    training = config["training"]
    return {key: value for key, value in training.items() if key not in RUNTIME_KEYS + PER_PAIR_KEYS}


def train_settings(config: Mapping, arch: str, task: str) -> dict:
    """The training settings of one small architecture on one task: the shared ones, then
    ``training.overrides`` for it (:func:`statelayers.pairs.resolve`), its ``max_steps`` raised to its
    :func:`pair_budget`. A budget is a floor, the steps the pair needs to learn its task,
    so a study with more steps for every pair (config/paper.yaml) needs no reset of it."""
    budget = pair_budget(config, arch, task)
    settings = shared_training(config) | resolve(config["training"]["overrides"], arch, task)
    if budget is not None and budget > settings["max_steps"]:
        settings["max_steps"] = budget
    return settings


def pretrained_training(config: Mapping) -> dict:
    """The fine-tuning settings of every pretrained model: ``pretrained.training`` laid over
    the shared training settings (:func:`shared_training`), so it states only what
    fine-tuning changes."""
    return shared_training(config) | config["pretrained"]["training"]


def model_spec(config: Mapping, arch: str, task: str, options: Mapping | None = None) -> dict:
    """Everything that builds one small architecture for one task: the model's sizes, the
    task's own parameters, and ``model.options`` of its family, then of its family on the
    task (``start_token`` among them, for any architecture), then ``options`` (a sweep's
    grid point). Only keys that are set reach the job, so a run built as before keeps its
    parameters exactly and reruns nothing."""
    model = config["model"]
    return {
        "arch": arch,
        "task": task,
        "task_params": config["task_params"].get(task, {}),
        "d_model": model["d_model"],
        "n_layers": model["n_layers"],
        "options": resolve(model["options"], arch, task) | dict(options or {}),
        "target_params": model["target_params"],
    }


def learnability_settings(config: Mapping, arch: str, task: str) -> dict:
    """A pair's own training settings with ``learnability.max_steps`` as its step budget
    (the schedule spans the cap, so the constant phase is long and no decay cuts a slow
    learner short)."""
    return train_settings(config, arch, task) | {"max_steps": config["learnability"]["max_steps"]}


def learnability_pairs(config: Mapping) -> list[tuple[str, str]]:
    """The (architecture, task) pairs the learnability measurement covers, in the study's
    order: ``learnability.pairs`` (``architecture/task``) or, where that is null, every pair."""
    every = [(arch, task) for arch in config["architectures"] for task in config["tasks"]]
    chosen = config["learnability"]["pairs"]
    if chosen is None:
        return every
    unknown = set(chosen) - {f"{arch}/{task}" for arch, task in every}
    if unknown:
        raise ValueError(f"config: learnability.pairs names pairs outside the study: {sorted(unknown)}")
    return [(arch, task) for arch, task in every if f"{arch}/{task}" in chosen]


def erasure_settings(config: Mapping, pretrained: bool) -> dict:
    """The erasure settings of a run; a pretrained model's on its own, fewer, sequences."""
    settings = {key: value for key, value in config["erasures"].items() if key != "eval_lengths"}
    if pretrained:
        settings["sequences"] = config["pretrained"]["erasure_sequences"]
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
    budgets = {
        key: steps for key, steps in (training["pair_budgets"] or {}).items() if steps > training["max_steps"]
    }
    if budgets:
        scale += f"; per-pair step budgets {budgets}"
    pair_options = {key: value for key, value in model["options"].items() if "/" in key}
    if pair_options:
        scale += f"; per-pair model options {pair_options}"
    if pretrained:
        tuning, tuning_seeds = pretrained_training(config), config["pretrained"]["seeds"]
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
