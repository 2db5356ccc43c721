"""Time one training step of the workflow's models on a GPU, and the paper's scale from it.

Usage: ``python benchmarks/gpu_step.py [--device cuda] [--steps 30] [--warmup 3] [--csv PATH]``

The step is the workflow's (:func:`statelayers.training.training_step`: gradients,
clipping, AdamW from :func:`statelayers.training.make_optimizer`) with config/paper.yaml's
training settings (batch 64) laid over config/config.yaml, on the workflow's models
(d_model 128, 4 layers, each width matched to 830K parameters, the config's options per
architecture) and random tokens of ``train_length`` 40 with parity's vocabulary, drawn
on the host as the jobs' batches are (the step copies them over from pinned memory).
Rows: Mamba and Mamba-2 under the ``torch`` and ``cuda`` backends
(:mod:`statelayers.models.backends`), then the Transformer, LSTM and GRU. Warm-up steps
come first (the allocator, cuDNN, and Triton compiling Mamba-2's kernels on their first
call, one configuration per kernel under the jobs' ``MAMBA_DETERMINISTIC=1``, see
:data:`statelayers.runtime.KERNEL_ENVIRONMENT`), and ``torch.cuda.synchronize`` brackets
the timed steps. tools/gpu_check.sh runs this before gpu_throughput.py, so that Triton's
cache holds the study's kernels before 16 processes start. A backend that cannot run
here (the kernels missing, or ``--device cpu``) is reported as unavailable and the
other rows are still timed; a row that raises is reported as failed, the other rows are
still timed, and the exit status is 1 (also when no row was timed at all).

Paper scale: every architecture of config/paper.yaml trains ``tasks x seeds`` jobs of
at most ``training.max_steps`` steps (a ``*_noconv`` variant at its family's speed); their
steps divided by the measured steps per second and summed are the hours of training on
one GPU, one job at a time, with Mamba and Mamba-2 under each backend: an upper bound,
since a run that reaches ``training.target_accuracy`` stops early. Evaluation, probes,
erasures and the pretrained stage are not in it.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import torch
import yaml

from statelayers.models.backends import resolve_backend
from statelayers.models.registry import FAMILIES, SSM, base_arch
from statelayers.settings import overlaid
from statelayers.models.tagger import SequenceTagger, build_model, count_parameters, matched_spec
from statelayers.training import TrainConfig, make_optimizer, training_step

CONFIG = Path(__file__).resolve().parents[1] / "config"
ROWS = (
    *((family, backend) for family in SSM for backend in ("torch", "cuda")),
    *((family, None) for family in FAMILIES if family not in SSM),
)
"""(architecture, Mamba backend); ``None`` where the architecture has no backend."""
TASK = "parity"


def paper_config() -> dict:
    """config/config.yaml with the config/paper.yaml overlay."""
    default, paper = (yaml.safe_load((CONFIG / name).read_text()) for name in ("config.yaml", "paper.yaml"))
    return overlaid(default, paper)


def train_config(config: Mapping) -> TrainConfig:
    """The workflow's training settings as :class:`TrainConfig` (the keys it has)."""
    names = {field.name for field in dataclasses.fields(TrainConfig)}
    return TrainConfig(**{k: v for k, v in config["training"].items() if k in names})


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def paper_model(arch: str, backend: str | None, config: Mapping, device: torch.device) -> SequenceTagger:
    """The workflow's ``arch`` at ``config``'s size (parity's vocabulary), in train mode on
    ``device``, Mamba and Mamba-2 under ``backend``."""
    model_config = config["model"]
    spec = matched_spec(
        arch,
        TASK,
        config["task_params"].get(TASK),
        model_config["d_model"],
        model_config["n_layers"],
        model_config["options"].get(arch, {}),
        model_config["target_params"],
    )
    mamba = {"backend": backend, "scan": config["training"]["mamba_scan"]} if backend else None
    return build_model(spec, mamba, device=device).to(device).train()


def step_seconds(
    arch: str, backend: str | None, config: Mapping, device: torch.device, steps: int, warmup: int
) -> tuple[int, float]:
    """Parameter count of the model and mean seconds per training step."""
    torch.manual_seed(0)
    model = paper_model(arch, backend, config, device)
    settings = train_config(config)
    optimizer = make_optimizer(model, settings, device)
    shape = (settings.batch_size * settings.grad_accumulation, config["train_length"])
    tokens = torch.randint(0, model.spec.vocab_size, shape)  # on the host, as a job's batches
    labels = torch.randint(0, model.spec.num_classes, shape)

    def step() -> None:  # statelayers.training.train's step, without the schedule
        training_step(model, optimizer, tokens, labels, settings, device)

    for _ in range(warmup):
        step()
    synchronize(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    synchronize(device)
    return count_parameters(model), (time.perf_counter() - start) / steps


def paper_hours(config: Mapping, seconds_per_step: Mapping[str, float]) -> float:
    """Hours of training for every job of ``config`` at ``seconds_per_step`` (by family)."""
    jobs = len(config["tasks"]) * len(config["seeds"])
    training = config["training"]
    total = 0.0
    for arch in config["architectures"]:
        family = base_arch(arch)
        steps = {**training, **training["overrides"].get(family, {}), **training["overrides"].get(arch, {})}
        total += jobs * steps["max_steps"] * seconds_per_step[family]
    return total / 3600


def measure_row(
    arch: str, backend: str | None, config: Mapping, device: torch.device, steps: int, warmup: int
) -> dict:
    """One row: the parameter count and step time of ``arch`` under ``backend``, with its
    status: ``ok``, ``unavailable: ...`` (the backend cannot run here) or ``failed: ...``."""
    row = {"arch": arch, "backend": backend or "", "params": "", "ms_per_step": "", "steps_per_s": ""}
    try:
        if backend:
            resolve_backend(backend, device)
    except RuntimeError as error:
        return row | {"status": f"unavailable: {error}"}
    try:
        params, seconds = step_seconds(arch, backend, config, device, steps, warmup)
    except Exception as error:  # one broken row must not hide the others' timings
        return row | {"status": f"failed: {type(error).__name__}: {error}"}
    return row | {"params": params, "ms_per_step": seconds * 1e3, "steps_per_s": 1 / seconds, "status": "ok"}


def main(argv: list[str] | None = None) -> int:
    """Time every row; exit status 1 if a row failed or none was timed, else 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda, or cpu to try the script without a GPU")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per row")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps before them")
    parser.add_argument("--csv", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    config = paper_config()
    settings = train_config(config)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(
        f"{name}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
        f"MAMBA_DETERMINISTIC={os.environ.get('MAMBA_DETERMINISTIC', 'unset')}; "
        f"batch {settings.batch_size} x length {config['train_length']}; "
        f"{args.steps} timed steps after {args.warmup} warm-up"
    )
    rows = []
    for arch, backend in ROWS:
        row = measure_row(arch, backend, config, device, args.steps, args.warmup)
        rows.append(row)
        timed = row["status"] == "ok"
        figures = f"{row['params']:>9,} {row['ms_per_step']:9.2f} {row['steps_per_s']:9.1f}" if timed else ""
        print(f"{arch:12s} {backend or '':6s} {figures or row['status']}", flush=True)
    if args.csv:
        with args.csv.open("w", newline="") as stream:
            writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    seconds = {(r["arch"], r["backend"]): r["ms_per_step"] / 1e3 for r in rows if r["status"] == "ok"}
    for family in SSM:
        if (family, "torch") in seconds and (family, "cuda") in seconds:
            ratio = seconds[family, "cuda"] / seconds[family, "torch"]
            print(f"{family}: cuda/torch time ratio {ratio:.3f} ({1 / ratio:.1f}x faster on the kernels)")
    sizes = [len(config[key]) for key in ("architectures", "tasks", "seeds")]
    print(
        f"paper scale (config/paper.yaml): {sizes[0] * sizes[1] * sizes[2]} training jobs "
        f"({' x '.join(map(str, sizes))} architectures, tasks, seeds) "
        f"of at most {config['training']['max_steps']} steps:"
    )
    for backend in ("cuda", "torch"):
        by_family = {arch: s for (arch, b), s in seconds.items() if b in (backend, "")}
        try:
            print(f"  {paper_hours(config, by_family):.1f} h on one GPU with Mamba and Mamba-2 on {backend}")
        except KeyError as missing:
            print(f"  Mamba and Mamba-2 on {backend}: not estimated, {missing.args[0]} was not timed")
    failed = [f"{r['arch']} {r['backend']}".strip() for r in rows if r["status"].startswith("failed")]
    if failed or not seconds:
        print(f"FAILED: {', '.join(failed) or 'no row was timed'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
