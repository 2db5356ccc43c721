"""One training loop for every architecture: cross-entropy over all positions, AdamW.

Data: every step draws ``batch_size x grad_accumulation`` new sequences from the run's
:class:`statelayers.tasks.data.TrainingStream` (one seeded stream per run), so no training
batch repeats; validation is a fixed file.

Stopping: the validation token accuracy is measured every ``eval_every`` steps and at
``max_steps``; the run stops at the first check that makes two consecutive checks
(:data:`~statelayers.stopping.CONSECUTIVE_CHECKS`) reach ``target_accuracy``, or at ``max_steps``.
``model.json`` records the steps used and whether the criterion was reached.

The learning rate warms up linearly, stays constant, and decays with a cosine to zero
over the last ``decay_fraction`` of ``max_steps`` (warmup-stable-decay, transformers'
``get_wsd_schedule``; ``decay_fraction = 1 - warmup_fraction`` is the usual cosine).
The schedule is defined on ``max_steps`` whatever the criterion does: a run that stops
early is the first steps of the full-length run, truncated (typically before its
decay), not a shorter schedule. A long constant phase matters for tasks that are
learned in a sudden transition, such as S3: a cosine that starts decaying at once can
end training before it.

On a GPU the step never waits for the device: the batch goes over from pinned memory,
loss and accuracy accumulate as device tensors, and the host reads them only at history
rows, validation checks and resume saves, so it queues step ``n + 1`` while the GPU runs
step ``n``. On CPU the same arithmetic gives the same bits as reading every value back as a Python float.

Resuming: every ``resume_every`` seconds (or 20 times the last save's duration, if
longer, so saving a large model costs at most 5 % of its training) the loop saves
everything it depends on (weights, optimizer, schedule, the training stream's state,
running averages, validation checks, history) to a resume file beside the checkpoint,
tagged with a fingerprint of the run's inputs (for a pretrained model, its backbone
files too). A job killed mid-training and started again with the same inputs continues
from the last save and ends with the same weights as an uninterrupted run (on CPU bit for
bit; on a GPU to float rounding, see :data:`statelayers.runtime.KERNEL_ENVIRONMENT`); a resume
file with another fingerprint is ignored. The file is removed once training finishes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from statelayers import files
from statelayers.models.inference import accuracy
from statelayers.models.tagger import SequenceTagger, build_model, count_parameters, matched_spec, save_model
from statelayers.runtime import resolve_device
from statelayers.stopping import CONSECUTIVE_CHECKS, reached_target
from statelayers.tasks.curriculum import PositionCurriculum
from statelayers.tasks.data import TrainingStream, to_arrays, training_rng

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """A run's training settings, every one given: ``training`` of config/config.yaml (as
    :func:`statelayers.settings.train_settings` resolves it for a pair) or
    ``pretrained.training`` is their one source, so nothing here has a default."""

    max_steps: int
    target_accuracy: float
    """Validation token accuracy that stops the run at :data:`~statelayers.stopping.CONSECUTIVE_CHECKS` checks in a row."""
    batch_size: int
    lr: float
    weight_decay: float
    warmup_fraction: float
    decay_fraction: float
    grad_clip: float
    eval_every: int
    log_every: int
    grad_accumulation: int
    """Micro-batches of ``batch_size`` per optimizer step (the step sees their mean loss)."""
    precision: str
    """``fp32``, or ``bf16``: forward passes under bfloat16 autocast, weights and optimizer in fp32."""
    curriculum: dict | None
    """A position curriculum (``start``, ``step``, ``threshold`` of
    :class:`statelayers.tasks.curriculum.PositionCurriculum`); ``None``: the loss covers
    every position."""


@dataclass(frozen=True)
class RunInputs:
    """Everything that decides one training run, of train, sweep and learnability alike. A
    job's ``run`` param (``run_params`` in workflow/rules/common.smk) holds every field but
    the two paths, which are the job's input files (:meth:`of_job`)."""

    spec: dict
    """The model: :func:`statelayers.settings.model_spec`, or a pretrained backbone's
    directory (``pretrained``) with ``task`` and ``task_params``."""
    training: dict
    """The training settings: the fields of :class:`TrainConfig`."""
    seed: int
    """The initial weights' seed and the run's stream of training sequences'."""
    data_seed: int
    train_length: int
    device: str
    """``auto``, ``cpu`` or ``cuda``."""
    mamba: dict | None
    """How Mamba and Mamba-2 run (``backend``, ``scan``); ``None`` for the other families."""
    validation_path: str
    corpus_path: str | None
    """Code-Depth's corpus, whose training files the training windows are cut from; ``None``
    for the formal tasks."""

    @classmethod
    def of_job(cls, params: Mapping, files) -> RunInputs:
        """A Snakemake job's run: its ``run`` param with its ``validation`` and, for
        Code-Depth, ``corpus`` input files (``files``: the job's named input)."""
        return cls(**params, validation_path=str(files["validation"]), corpus_path=files.get("corpus"))

    @property
    def config(self) -> TrainConfig:
        """The training settings as :class:`TrainConfig`."""
        return TrainConfig(**self.training)


def parameter_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on matrices only: not on biases, norms, nor Mamba's ``A_log`` and ``D``
    (decaying the SSM's decay rates towards zero is not regularisation)."""
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        exempt = parameter.dim() < 2 or name.endswith(("A_log", ".D"))
        (no_decay if exempt else decay).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


@dataclass(frozen=True)
class ResumeFile:
    """Where to keep the resume state, and which inputs it belongs to."""

    path: Path
    fingerprint: str
    every_seconds: float = 60.0

    def load(self) -> dict | None:
        if not self.path.exists():
            return None
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)
        except (RuntimeError, EOFError, OSError, pickle.UnpicklingError) as err:
            log.warning("ignoring unreadable resume file %s (%s)", self.path, err)
            return None
        if state.get("fingerprint") != self.fingerprint:
            log.warning("ignoring resume file %s: it belongs to other inputs", self.path)
            return None
        return state

    def save(self, state: dict) -> None:
        files.write_with(lambda p: torch.save({**state, "fingerprint": self.fingerprint}, p), self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def fingerprint(*parts: object, files: tuple[str | Path, ...] = ()) -> str:
    """SHA-256 over JSON-serialisable ``parts`` and the bytes of ``files``."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode())
    for path in files:
        with open(path, "rb") as stream:  # in chunks: a pretrained backbone is gigabytes
            for chunk in iter(lambda: stream.read(1 << 24), b""):
                digest.update(chunk)
    return digest.hexdigest()


def make_optimizer(model: torch.nn.Module, config: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW over :func:`parameter_groups`: on CUDA the fused kernel, since a small model's
    step is bound by kernel launches and foreach (CUDA's default) launches one kernel per
    arithmetic operation; on CPU foreach, which loops over the tensors in C++ rather than
    Python and is bit-identical to the per-tensor loop, torch's CPU default (tested)."""
    fused = device.type == "cuda"
    return torch.optim.AdamW(
        parameter_groups(model, config.weight_decay),
        lr=config.lr,
        fused=fused or None,
        foreach=None if fused else True,
    )


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` on ``device``. From host memory onto a GPU it goes through pinned memory,
    asynchronously: a copy from pageable memory would wait for every queued kernel first.
    Any other tensor (already on ``device``, or on another device) moves with a plain
    ``to``, a no-op when it is there already: only CPU memory can be pinned, and
    ``pin_memory()`` raises on a CUDA tensor."""
    if device.type == "cuda" and tensor.device.type == "cpu":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def accumulate_gradients(
    model: SequenceTagger,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    config: TrainConfig,
    device: torch.device,
    positions: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Add the gradient of the mean cross-entropy over ``tokens`` to ``model``'s, in
    micro-batches of ``config.batch_size`` (under bf16 autocast if configured); return
    the mean loss and token accuracy of the micro-batches as float64 scalars on
    ``device``. With ``positions`` (a position curriculum) only the first ``positions``
    tokens are fed and scored: the models are causal, so their logits are those of the
    whole sequence. Nothing here reads a value back to the host, so on a GPU the host queues
    the next step while this one runs; float64 keeps the sums those of the Python floats
    they replace, bit for bit."""
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    acc_sum = torch.zeros((), dtype=torch.float64, device=device)
    tokens, labels = to_device(tokens, device), to_device(labels, device)
    micro_batches = tokens.split(config.batch_size)
    for x, y in zip(micro_batches, labels.split(config.batch_size)):
        if positions is not None:
            x, y = x[:, :positions], y[:, :positions]
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=config.precision == "bf16"):
            logits = model(x)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        (loss / len(micro_batches)).backward()
        loss_sum += loss.detach().double()
        acc_sum += (logits.argmax(-1) == y).float().mean().double()
    return loss_sum / len(micro_batches), acc_sum / len(micro_batches)


def training_step(
    model: SequenceTagger,
    optimizer: torch.optim.Optimizer,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    config: TrainConfig,
    device: torch.device,
    positions: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimizer step on a batch: :func:`accumulate_gradients` (on the first
    ``positions`` tokens, if given), clipping to ``config.grad_clip``, ``optimizer``; the
    batch's mean loss and token accuracy stay on ``device`` (the benchmarks time this same step)."""
    optimizer.zero_grad(set_to_none=True)
    loss, acc = accumulate_gradients(model, tokens, labels, config, device, positions)
    torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
    optimizer.step()
    return loss, acc


@dataclass(frozen=True)
class Outcome:
    """What a training run did: its history rows, the steps it took, and whether it stopped
    at the criterion (``False``: it ran to ``max_steps`` without reaching it)."""

    history: list[dict]
    steps: int
    reached: bool


def train(
    model: SequenceTagger,
    stream: TrainingStream,
    validation_data: tuple[np.ndarray, np.ndarray],
    config: TrainConfig,
    seed: int,
    device: torch.device,
    resume: ResumeFile | None = None,
) -> Outcome:
    """Train in place on fresh batches of ``stream`` until the criterion or ``max_steps``.

    History rows (every ``log_every`` steps and at every validation check): step, the
    learning rate of that step, mean loss and training token accuracy since the last
    row, seconds, and at checks the validation token and sequence accuracy. With a
    position curriculum (``config.curriculum``) the loss and training accuracy are those
    of the covered positions, and rows also hold ``covered_positions`` (of the next step).
    """
    # Imported here, so that the LSTM's and GRU's untrained twins never import transformers.
    from transformers import get_wsd_schedule

    torch.manual_seed(seed)
    model.to(device).train()
    optimizer = make_optimizer(model, config, device)
    warmup = int(config.warmup_fraction * config.max_steps)
    decay = min(int(config.decay_fraction * config.max_steps), config.max_steps - warmup)
    schedule = get_wsd_schedule(optimizer, warmup, decay, num_training_steps=config.max_steps)
    history: list[dict] = []
    checks: list[float] = []
    running_loss, running_acc = (torch.zeros((), dtype=torch.float64, device=device) for _ in range(2))
    running_steps, elapsed = 0, 0.0
    first_step = 1
    curriculum = (
        PositionCurriculum(**config.curriculum, length=stream.length) if config.curriculum else None
    )
    saved = resume.load() if resume else None
    if saved:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        schedule.load_state_dict(saved["schedule"])
        stream.restore(saved["stream"])
        torch.set_rng_state(saved["torch_rng"])
        history, checks, elapsed = saved["history"], saved["checks"], saved["elapsed"]
        loss, acc, running_steps = saved["running"]
        running_loss, running_acc = (torch.tensor(v, dtype=torch.float64, device=device) for v in (loss, acc))
        first_step = saved["step"] + 1
        if curriculum:
            curriculum.covered = saved["covered_positions"]
        log.info("resuming from step %d (%s)", saved["step"], resume.path)
    start = time.perf_counter() - elapsed
    last_save, save_interval = time.perf_counter(), resume.every_seconds if resume else 0.0
    reached = False
    step = first_step - 1
    for step in range(first_step, config.max_steps + 1):
        batch = stream.draw(config.batch_size * config.grad_accumulation)
        lr = schedule.get_last_lr()[0]
        tokens, labels = torch.as_tensor(batch["tokens"]), torch.as_tensor(batch["labels"])
        positions = curriculum.covered if curriculum else None
        loss, acc = training_step(model, optimizer, tokens, labels, config, device, positions)
        if curriculum:  # reads the accuracy back to the host: only with a curriculum
            curriculum.update(acc.item())
        running_loss += loss
        running_acc += acc
        running_steps += 1
        schedule.step()
        check = step % config.eval_every == 0 or step == config.max_steps
        if check or step % config.log_every == 0:
            row = {
                "step": step,
                "lr": lr,
                "loss": (running_loss / running_steps).item(),  # reads from the device: rows, saves
                "train_token_accuracy": (running_acc / running_steps).item(),
                "seconds": time.perf_counter() - start,
            }
            if curriculum:
                row["covered_positions"] = curriculum.covered
            running_loss.zero_()
            running_acc.zero_()
            running_steps = 0
            if check:
                row["validation_token_accuracy"], row["validation_sequence_accuracy"] = accuracy(
                    model, *validation_data
                )
                model.train()
                checks.append(row["validation_token_accuracy"])
                reached = reached_target(checks, config.target_accuracy)
            history.append(row)
            log.info(
                "step %d/%d loss %.4f acc %.3f%s (%.0fs)",
                step,
                config.max_steps,
                row["loss"],
                row["train_token_accuracy"],
                f" val {row['validation_token_accuracy']:.3f}" if check else "",
                row["seconds"],
            )
            if reached:
                log.info(
                    "validation token accuracy reached %s on %d checks in a row: stopping",
                    config.target_accuracy,
                    CONSECUTIVE_CHECKS,
                )
                break
        if resume and time.perf_counter() - last_save >= save_interval and step < config.max_steps:
            saving = time.perf_counter()
            resume.save(
                {
                    "step": step,
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(),
                    "stream": stream.state,
                    "torch_rng": torch.get_rng_state(),
                    "history": history,
                    "checks": checks,
                    "running": (running_loss.item(), running_acc.item(), running_steps),
                    "elapsed": time.perf_counter() - start,
                }
                | ({"covered_positions": curriculum.covered} if curriculum else {})
            )
            last_save = time.perf_counter()
            save_interval = max(resume.every_seconds, 20 * (last_save - saving))
    model.eval()
    return Outcome(history, step, reached)


def backbone_files(spec_params: dict) -> list[Path]:
    """A pretrained backbone's files (config, weights, tokenizer), for the resume fingerprint."""
    directory = spec_params.get("pretrained")
    return sorted(p for p in Path(directory).iterdir() if p.is_file()) if directory else []


@dataclass
class Run:
    """A model ready to train with its inputs: the training stream, validation arrays,
    device, and the fingerprint of everything that decides the run."""

    model: SequenceTagger
    stream: TrainingStream
    validation: tuple[np.ndarray, np.ndarray]
    device: torch.device
    fingerprint: str


def initial_model(
    spec_params: dict, seed: int, mamba: dict | None, device: torch.device | str = "cpu"
) -> SequenceTagger:
    """The model a run of ``seed`` starts from: the matched architecture at its seeded
    initial weights, or a pretrained backbone with a fresh seeded head."""
    if "pretrained" in spec_params:
        from statelayers.models.pretrained import pretrained_spec
        from statelayers.models.tagger import pretrained_tagger

        spec = pretrained_spec(**spec_params)
        torch.manual_seed(seed)  # the seed decides the head's initial weights (and added rows)
        return pretrained_tagger(spec, mamba, device=device)
    spec = matched_spec(**spec_params)  # instantiates trial models: seed only after it
    torch.manual_seed(seed)  # the seed decides the initial weights too
    return build_model(spec, mamba, device=device)


def untrained_checkpoint(
    spec_params: dict, seed: int, out_dir: str | Path, mamba: dict | None = None, device: str = "cpu"
) -> SequenceTagger:
    """Save the untrained twin of a run: :func:`initial_model` of the same spec and seed,
    with no training step; return it in eval mode on ``device`` (``auto``, ``cpu``, ``cuda``),
    Mamba under ``mamba``'s backend. Its probes say what the architecture makes readable
    before any learning (the untrained baseline of :mod:`statelayers.measure.probes`)."""
    resolved = resolve_device(device)
    model = initial_model(spec_params, seed, mamba, resolved)
    save_model(
        model,
        out_dir,
        extra={
            "task": spec_params["task"],
            "task_params": spec_params["task_params"],
            "target_params": spec_params.get("target_params"),
            "seed": seed,
            "steps": 0,
            "untrained": True,
        },
    )
    log.info("saved the untrained %s (seed %d) to %s", model.spec.arch, seed, out_dir)
    return model.to(resolved).eval()


def prepare_run(inputs: RunInputs) -> Run:
    """Build the matched model (or a pretrained backbone with a fresh head), its training
    stream (:func:`statelayers.tasks.data.training_rng` of the data seed, the task, the
    training length and the run's seed; Code-Depth windows from the corpus) and the
    validation data."""
    spec_params, train_length = inputs.spec, inputs.train_length
    resolved = resolve_device(inputs.device)
    model = initial_model(spec_params, inputs.seed, inputs.mamba, resolved)
    spec = model.spec
    log.info(
        "%s on %s: %d parameters (width %s), device %s, Mamba backend %s",
        spec.arch,
        spec_params["task"],
        count_parameters(model),
        spec.width,
        resolved,
        model.backend,
    )
    validation = to_arrays(files.read_parquet(inputs.validation_path))
    if validation["tokens"].shape[1] != train_length:
        raise ValueError(
            f"{inputs.validation_path} holds length {validation['tokens'].shape[1]}, not {train_length}"
        )
    corpus_path = inputs.corpus_path
    stream = TrainingStream(
        spec_params["task"],
        train_length,
        training_rng(inputs.data_seed, spec_params["task"], train_length, inputs.seed),
        spec_params["task_params"],
        corpus=files.read_parquet(corpus_path) if corpus_path else None,
    )
    digest = fingerprint(
        spec_params,
        inputs.training,
        inputs.seed,
        inputs.data_seed,
        train_length,
        str(resolved),
        model.backend,
        model.mamba_scan,
        torch.get_num_threads(),
        files=(inputs.validation_path, *([corpus_path] if corpus_path else []), *backbone_files(spec_params)),
    )
    return Run(model, stream, (validation["tokens"], validation["labels"]), resolved, digest)


def train_checkpoint(
    inputs: RunInputs, out_dir: str | Path, history_path: str | Path, resume_every: float = 60.0
) -> SequenceTagger:
    """Train one run (see :func:`prepare_run`), save checkpoint and history.

    With ``inputs.spec["pretrained"]`` (a fetched backbone's directory, plus ``task`` and
    ``task_params``) the model is that backbone with a fresh head, fine-tuned.
    ``inputs.mamba`` (``backend``, ``scan``) says how Mamba and Mamba-2 run (see
    :func:`statelayers.models.tagger.build_model`). ``model.json`` records the spec, the
    training settings, seed, device, the Mamba backend and scan in use, the steps used
    and whether the criterion was reached, so a checkpoint says what built it.
    ``out_dir/resume.pt`` holds the resume state while training runs (saved every
    ``resume_every`` seconds).
    """
    spec_params, training = inputs.spec, inputs.training
    run = prepare_run(inputs)
    resume = ResumeFile(Path(out_dir) / "resume.pt", run.fingerprint, resume_every)
    outcome = train(
        run.model,
        run.stream,
        run.validation,
        inputs.config,
        seed=inputs.seed,
        device=run.device,
        resume=resume,
    )
    files.write_csv(pd.DataFrame(outcome.history), history_path)
    last = outcome.history[-1]  # the last step is always a validation check
    save_model(
        run.model.cpu(),
        out_dir,
        extra={
            "task": spec_params["task"],
            "task_params": spec_params["task_params"],
            "target_params": spec_params.get("target_params"),
            "training": training,
            "seed": inputs.seed,
            "data_seed": inputs.data_seed,
            "train_length": inputs.train_length,
            "device": str(run.device),
            "backend": run.model.backend,
            "mamba_scan": run.model.mamba_scan,
            "steps": outcome.steps,
            "reached": outcome.reached,
            "train_seconds": last["seconds"],
            "validation_token_accuracy": last["validation_token_accuracy"],
        },
    )
    resume.remove()
    log.info(
        "saved %s after %d of %d steps (validation token accuracy %.4f; criterion %s)",
        out_dir,
        outcome.steps,
        training["max_steps"],
        last["validation_token_accuracy"],
        "reached" if outcome.reached else "not reached",
    )
    return run.model


def train_without_checkpoint(inputs: RunInputs) -> Outcome:
    """Train one run like :func:`train_checkpoint`, but keep nothing (no checkpoint, no
    resume file): the sweep's short runs, read only through their :class:`Outcome`."""
    run = prepare_run(inputs)
    return train(run.model, run.stream, run.validation, inputs.config, seed=inputs.seed, device=run.device)
