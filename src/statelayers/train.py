"""One training loop for every architecture: cross-entropy over all positions, AdamW.

The learning rate warms up linearly, stays constant, and decays with a cosine to zero
over the last ``decay_fraction`` of the steps (warmup-stable-decay, transformers'
``get_wsd_schedule``; ``decay_fraction = 1 - warmup_fraction`` is the usual cosine).
A long constant phase matters for tasks that are learned in a sudden transition,
such as S3: a cosine that starts decaying at once can end training before it. Batches
are drawn with replacement from the training split by a torch generator seeded from
the run's seed, so a run is reproducible given its inputs.

Resuming: every ``resume_every`` seconds (or 20 times the last save's duration, if
longer, so saving a large model costs at most 5 % of its training) the loop saves
everything it depends on (weights, optimizer, schedule, batch generator, running
averages, history) to a resume file beside the checkpoint, tagged with a fingerprint
of the run's inputs (for a pretrained model, its backbone files too).
A job killed mid-training and started again with the same inputs continues from the
last save and ends with the same weights as an uninterrupted run; a resume file with
another fingerprint is ignored. The file is removed once training finishes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from transformers import get_wsd_schedule

from statelayers import io
from statelayers.behaviour import accuracy
from statelayers.data import to_arrays
from statelayers.models import (
    SequenceTagger,
    build_model,
    count_parameters,
    matched_spec,
    save_model,
)
from statelayers.runtime import resolve_device

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1000
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_fraction: float = 0.05
    decay_fraction: float = 0.2
    grad_clip: float = 1.0
    eval_every: int = 100
    log_every: int = 25
    grad_accumulation: int = 1
    """Micro-batches of ``batch_size`` per optimizer step (the step sees their mean loss)."""
    precision: str = "fp32"
    """``fp32``, or ``bf16``: forward passes under bfloat16 autocast, weights and optimizer in fp32."""


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
        io.write_with(lambda p: torch.save({**state, "fingerprint": self.fingerprint}, p), self.path)

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


def accumulate_gradients(
    model: SequenceTagger,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    config: TrainConfig,
    device: torch.device,
) -> tuple[float, float]:
    """Add the gradient of the mean cross-entropy over ``tokens`` to ``model``'s, in
    micro-batches of ``config.batch_size`` (under bf16 autocast if configured); return
    the mean loss and token accuracy of the micro-batches."""
    loss_sum = acc_sum = 0.0
    micro_batches = tokens.split(config.batch_size)
    for x, y in zip(micro_batches, labels.split(config.batch_size)):
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=config.precision == "bf16"):
            logits = model(x)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        (loss / len(micro_batches)).backward()
        loss_sum += loss.item()
        acc_sum += (logits.argmax(-1) == y).float().mean().item()
    return loss_sum / len(micro_batches), acc_sum / len(micro_batches)


def train(
    model: SequenceTagger,
    train_data: tuple[np.ndarray, np.ndarray],
    validation_data: tuple[np.ndarray, np.ndarray],
    config: TrainConfig,
    seed: int,
    device: torch.device,
    resume: ResumeFile | None = None,
) -> list[dict]:
    """Train in place; return the history rows (step, loss, train/validation accuracy, seconds)."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model.to(device).train()
    tokens = torch.as_tensor(train_data[0])
    labels = torch.as_tensor(train_data[1])
    optimizer = torch.optim.AdamW(parameter_groups(model, config.weight_decay), lr=config.lr)
    warmup = int(config.warmup_fraction * config.steps)
    decay = min(int(config.decay_fraction * config.steps), config.steps - warmup)
    schedule = get_wsd_schedule(optimizer, warmup, decay, num_training_steps=config.steps)
    history: list[dict] = []
    running_loss = running_acc = elapsed = 0.0
    first_step = 1
    saved = resume.load() if resume else None
    if saved:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        schedule.load_state_dict(saved["schedule"])
        generator.set_state(saved["generator"])
        torch.set_rng_state(saved["torch_rng"])
        history, (running_loss, running_acc), elapsed = saved["history"], saved["running"], saved["elapsed"]
        first_step = saved["step"] + 1
        log.info("resuming from step %d (%s)", saved["step"], resume.path)
    start = time.perf_counter() - elapsed
    last_save, save_interval = time.perf_counter(), resume.every_seconds if resume else 0.0
    for step in range(first_step, config.steps + 1):
        index = torch.randint(
            len(tokens), (config.batch_size * config.grad_accumulation,), generator=generator
        )
        optimizer.zero_grad(set_to_none=True)
        loss, acc = accumulate_gradients(model, tokens[index], labels[index], config, device)
        running_loss += loss
        running_acc += acc
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        schedule.step()
        if step % config.log_every == 0 or step == config.steps:
            n = config.log_every if step % config.log_every == 0 else step % config.log_every
            row = {
                "step": step,
                "loss": running_loss / n,
                "train_token_accuracy": running_acc / n,
                "seconds": time.perf_counter() - start,
            }
            running_loss = running_acc = 0.0
            if step % config.eval_every == 0 or step == config.steps:
                row["validation_token_accuracy"], row["validation_sequence_accuracy"] = accuracy(
                    model, *validation_data
                )
                model.train()
            history.append(row)
            log.info(
                "step %d/%d loss %.4f acc %.3f%s (%.0fs)",
                step,
                config.steps,
                row["loss"],
                row["train_token_accuracy"],
                f" val {row['validation_token_accuracy']:.3f}" if "validation_token_accuracy" in row else "",
                row["seconds"],
            )
        if resume and time.perf_counter() - last_save >= save_interval and step < config.steps:
            saving = time.perf_counter()
            resume.save(
                {
                    "step": step,
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(),
                    "generator": generator.get_state(),
                    "torch_rng": torch.get_rng_state(),
                    "history": history,
                    "running": (running_loss, running_acc),
                    "elapsed": time.perf_counter() - start,
                }
            )
            last_save = time.perf_counter()
            save_interval = max(resume.every_seconds, 20 * (last_save - saving))
    model.eval()
    return history


def backbone_files(spec_params: dict) -> list[Path]:
    """A pretrained backbone's files (config, weights, tokenizer), for the resume fingerprint."""
    directory = spec_params.get("pretrained")
    return sorted(p for p in Path(directory).iterdir() if p.is_file()) if directory else []


def train_checkpoint(
    spec_params: dict,
    training: dict,
    seed: int,
    device: str,
    mamba: dict | None,
    train_path: str,
    validation_path: str,
    out_dir: str | Path,
    history_path: str | Path,
    resume_every: float = 60.0,
) -> SequenceTagger:
    """Build the matched model, train it on the data files, save checkpoint and history.

    With ``spec_params["pretrained"]`` (a fetched backbone's directory, plus ``task`` and
    ``task_params``) the model is that backbone with a fresh head, fine-tuned.
    ``mamba`` (``backend``, ``scan``) says how Mamba and Mamba-2 run (see
    :func:`statelayers.models.build_model`). ``model.json`` records the spec, the
    training settings, seed, device and the Mamba backend and scan in use, so a
    checkpoint says what built it. ``out_dir/resume.pt`` holds the resume state
    while training runs (saved every ``resume_every`` seconds).
    """
    resolved = resolve_device(device)
    if "pretrained" in spec_params:
        from statelayers.pretrained import pretrained_spec, pretrained_tagger

        spec = pretrained_spec(**spec_params)
        torch.manual_seed(seed)  # the seed decides the head's initial weights (and added rows)
        model = pretrained_tagger(spec, mamba, device=resolved)
    else:
        spec = matched_spec(**spec_params)  # instantiates trial models: seed only after it
        torch.manual_seed(seed)  # the seed decides the initial weights too
        model = build_model(spec, mamba, device=resolved)
    scan = model.mamba_scan
    log.info(
        "%s on %s: %d parameters (width %s), device %s, Mamba backend %s",
        spec.arch,
        spec_params["task"],
        count_parameters(model),
        spec.width,
        resolved,
        model.backend,
    )
    train_data, validation_data = (to_arrays(io.read_parquet(p)) for p in (train_path, validation_path))
    resume = ResumeFile(
        Path(out_dir) / "resume.pt",
        fingerprint(
            spec_params,
            training,
            seed,
            str(resolved),
            model.backend,
            scan,
            torch.get_num_threads(),
            files=(train_path, validation_path, *backbone_files(spec_params)),
        ),
        resume_every,
    )
    history = train(
        model,
        (train_data["tokens"], train_data["labels"]),
        (validation_data["tokens"], validation_data["labels"]),
        TrainConfig(**training),
        seed=seed,
        device=resolved,
        resume=resume,
    )
    io.write_csv(pd.DataFrame(history), history_path)
    save_model(
        model.cpu(),
        out_dir,
        extra={
            "task": spec_params["task"],
            "task_params": spec_params["task_params"],
            "target_params": spec_params.get("target_params"),
            "training": training,
            "seed": seed,
            "device": str(resolved),
            "backend": model.backend,
            "mamba_scan": scan,
            "train_seconds": history[-1]["seconds"],
            "validation_token_accuracy": history[-1]["validation_token_accuracy"],
        },
    )
    resume.remove()
    log.info("saved %s (validation token accuracy %.4f)", out_dir, history[-1]["validation_token_accuracy"])
    return model
