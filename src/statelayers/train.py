"""One training loop for every architecture: cross-entropy over all positions, AdamW.

The learning rate warms up linearly and decays with a cosine (transformers'
scheduler). Batches are drawn with replacement from the training split by a torch
generator seeded from the run's seed, so a run is reproducible given its inputs.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from transformers import get_cosine_schedule_with_warmup

from statelayers import io
from statelayers.runtime import resolve_device
from statelayers.behaviour import accuracy
from statelayers.data import to_arrays
from statelayers.models import SequenceTagger, build_model, count_parameters, matched_spec, save_model

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1000
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_fraction: float = 0.05
    grad_clip: float = 1.0
    eval_every: int = 100
    log_every: int = 25


def train(
    model: SequenceTagger,
    train_data: tuple[np.ndarray, np.ndarray],
    validation_data: tuple[np.ndarray, np.ndarray],
    config: TrainConfig,
    seed: int,
    device: torch.device,
) -> list[dict]:
    """Train in place; return the history rows (step, loss, train/validation accuracy, seconds)."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model.to(device).train()
    tokens = torch.as_tensor(train_data[0])
    labels = torch.as_tensor(train_data[1])
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    schedule = get_cosine_schedule_with_warmup(
        optimizer, int(config.warmup_fraction * config.steps), config.steps
    )
    history: list[dict] = []
    start = time.perf_counter()
    running_loss = running_acc = 0.0
    for step in range(1, config.steps + 1):
        index = torch.randint(len(tokens), (config.batch_size,), generator=generator)
        x, y = tokens[index].to(device), labels[index].to(device)
        logits = model(x)
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        schedule.step()
        running_loss += loss.item()
        running_acc += (logits.argmax(-1) == y).float().mean().item()
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
    model.eval()
    return history


def train_checkpoint(
    spec_params: dict,
    training: dict,
    seed: int,
    device: str,
    mamba_scan: str | None,
    train_path: str,
    validation_path: str,
    out_dir: str | Path,
    history_path: str | Path,
) -> SequenceTagger:
    """Build the matched model, train it on the data files, save checkpoint and history.

    ``model.json`` records the spec, the training settings, seed, device and Mamba scan,
    so a checkpoint says what built it.
    """
    spec = matched_spec(**spec_params)
    scan = mamba_scan or "fast"
    model = build_model(spec, mamba_scan=scan)
    resolved = resolve_device(device)
    log.info(
        "%s on %s: %d parameters (width %s), device %s",
        spec.arch, spec_params["task"], count_parameters(model), spec.width, resolved,
    )
    train_data, validation_data = (to_arrays(io.read_parquet(p)) for p in (train_path, validation_path))
    history = train(
        model,
        (train_data["tokens"], train_data["labels"]),
        (validation_data["tokens"], validation_data["labels"]),
        TrainConfig(**training),
        seed=seed,
        device=resolved,
    )
    io.write_csv(pd.DataFrame(history), history_path)
    save_model(
        model.cpu(),
        out_dir,
        extra={
            "task": spec_params["task"],
            "task_params": spec_params["task_params"],
            "target_params": spec_params["target_params"],
            "training": training,
            "seed": seed,
            "device": str(resolved),
            "mamba_scan": scan if spec.arch == "mamba" else None,
            "train_seconds": history[-1]["seconds"],
            "validation_token_accuracy": history[-1]["validation_token_accuracy"],
        },
    )
    log.info("saved %s (validation token accuracy %.4f)", out_dir, history[-1]["validation_token_accuracy"])
    return model
