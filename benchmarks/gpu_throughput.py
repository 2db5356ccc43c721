"""Train K models at once on one GPU, one process each, and config/paper.yaml's training hours at the best K.

Usage: ``python benchmarks/gpu_throughput.py [--device cuda] [--ks 1 2 4 8 12 16]
[--threads 1] [--seconds 5] [--block 10] [--warmup 3] [--families ...] [--csv PATH]``

This is what ``snakemake --resources gpu=K`` does with the model jobs of config/paper.yaml:
K training processes share one device, each a CUDA context of its own (without MPS the
GPU time-slices between them; with MPS their kernels overlap). Every process holds the
paper's models (:func:`gpu_step.paper_model`, one per family of its architectures, a
``*_noconv`` variant at its family's speed; Mamba under the config's backend) and runs the
real training step, :func:`statelayers.training.training_step` on a fresh batch of
parity sequences drawn on the host (``TrainingStream``), leaving out only the
schedule's host-side update and the two running sums. It trains ``--block`` steps of
one family, waits for the GPU, and moves on to the next family; process ``i`` starts at
family ``i``, so at any moment the K processes train a mix of architectures, as the
workflow's jobs do.

The processes are started once (``max K`` of them, ``--threads`` CPU threads each, as
many as the cores allow), build their models and run ``--warmup`` steps of each (the
allocator, cuBLAS and cuDNN, Triton compiling Mamba-2's kernels); then, for each K,
K of them start together and train for ``--seconds`` (and at least one block of every
family), while the others wait. Per K: aggregate steps per second, mean step time per
process, each family's step time per process, peak host memory (RSS) and GPU memory
(the allocator's, and the device's used memory over the live processes, CUDA
contexts included; each process holds every family's model, so these bound a job's).

Paper scale: every architecture of config/paper.yaml trains ``tasks x seeds`` jobs of at
most ``training.max_steps`` steps; at K, their steps times the family's step time per
process, summed and divided by K, are the hours of training on one GPU with K jobs at a
time (:func:`gpu_step.paper_hours`). An upper bound in steps, since a run that reaches
the criterion stops early; it leaves out validation checks, evaluation, probes and the
pretrained stage, and it counts K jobs running all the time, to the end. The best K is
the one with the fewest hours. ``--csv`` writes a row per K, rewritten after each K.

A process that raises (or dies) ends the benchmark: its traceback is printed, the other
processes are stopped, the rows measured so far stay in the CSV, and the exit status is
1, so a check that runs this cannot read a broken benchmark as a result. Each process
compiles the Triton kernels it has not found in Triton's cache (tools/gpu_check.sh runs
gpu_step.py first, in one process, to fill it).
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing
import os
import resource
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np
import torch
from gpu_step import TASK, paper_config, paper_hours, paper_model, synchronize, train_config

from statelayers import runtime
from statelayers.models.registry import SSM, base_arch
from statelayers.tasks.data import TrainingStream
from statelayers.training import TrainConfig, make_optimizer, training_step

KS = (1, 2, 4, 8, 12, 16)


@dataclass
class Trainee:
    """One family's model of a benchmark process, with its optimizer and its stream of batches."""

    family: str
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    stream: TrainingStream
    settings: TrainConfig
    device: torch.device

    @classmethod
    def build(cls, family: str, config: Mapping, device: torch.device, seed: int) -> Trainee:
        torch.manual_seed(seed)
        backend = config["training"]["mamba_backend"] if family in SSM else None
        model = paper_model(family, backend, config, device)
        settings = train_config(config)
        stream = TrainingStream(TASK, config["train_length"], np.random.default_rng(seed), {})
        return cls(family, model, make_optimizer(model, settings, device), stream, settings, device)

    def step(self) -> None:
        batch = self.stream.draw(self.settings.batch_size * self.settings.grad_accumulation)
        tokens, labels = torch.as_tensor(batch["tokens"]), torch.as_tensor(batch["labels"])
        training_step(self.model, self.optimizer, tokens, labels, self.settings, self.device)


def window(trainees: Sequence[Trainee], offset: int, seconds: float, block: int) -> dict:
    """Train ``block`` steps of one family after another, from family ``offset`` on, for
    ``seconds`` and at least one block of each; steps and seconds per family."""
    device = trainees[0].device
    steps = {t.family: 0 for t in trainees}
    spent = {t.family: 0.0 for t in trainees}
    start = time.perf_counter()
    blocks = 0
    while blocks < len(trainees) or time.perf_counter() - start < seconds:
        trainee = trainees[(offset + blocks) % len(trainees)]
        begin = time.perf_counter()
        for _ in range(block):
            trainee.step()
        synchronize(device)
        steps[trainee.family] += block
        spent[trainee.family] += time.perf_counter() - begin
        blocks += 1
    memory = {"rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        memory |= {
            "gpu_reserved_mib": torch.cuda.max_memory_reserved(device) / 2**20,
            "device_used_mib": (total - free) / 2**20,
        }
    return {"steps": steps, "spent": spent, "elapsed": time.perf_counter() - start, **memory}


class WorkerFailed(RuntimeError):
    """A benchmark process raised or died; the message says which and why."""


def work(
    index: int, connection: Connection, device: str, threads: int, families: list[str], warmup: int
) -> None:
    """A benchmark process: build the models, warm them up, report the device and the
    models' Mamba backends, then run a timed :func:`window` for each ``(start time,
    seconds, block)`` received, until ``None``. Every message is ``("ok", payload)``, or
    ``("failed", traceback)`` once, after which the process ends."""
    try:
        runtime.start(threads=threads)
        resolved = torch.device(device)
        config = paper_config()
        trainees = [Trainee.build(family, config, resolved, seed=index) for family in families]
        for trainee in trainees:
            for _ in range(warmup):
                trainee.step()
        synchronize(resolved)
        name = torch.cuda.get_device_name(resolved) if resolved.type == "cuda" else "CPU"
        connection.send(("ok", (name, {t.family: t.model.backend for t in trainees})))
        while True:
            try:
                order = connection.recv()
            except EOFError:  # the main process has gone: nothing to report to
                return
            if order is None:
                return
            start_at, seconds, block = order
            time.sleep(max(0.0, start_at - time.time()))
            connection.send(("ok", window(trainees, index, seconds, block)))
    except BaseException:
        try:
            connection.send(("failed", traceback.format_exc()))
        except OSError:  # the main process has gone
            pass


def receive(index: int, connection: Connection):
    """Process ``index``'s next payload; :class:`WorkerFailed` if it raised or died."""
    try:
        status, payload = connection.recv()
    except EOFError:
        raise WorkerFailed(f"process {index} died without a word (killed, or out of memory?)") from None
    if status != "ok":
        raise WorkerFailed(f"process {index} failed:\n{payload}")
    return payload


def stop(connections: list[Connection], processes: list) -> None:
    """End every process: ``None`` to those still listening, then terminate stragglers."""
    for connection in connections:
        try:
            connection.send(None)
        except (BrokenPipeError, OSError):
            pass
    for process in processes:
        process.join(timeout=10)
        if process.is_alive():
            process.terminate()
            process.join()


def summary(k: int, results: list[dict], config: Mapping, families: list[str], workers: int) -> dict:
    """One CSV row: K's aggregate and per-process rates, per-family step times, memory, hours."""
    steps = sum(sum(r["steps"].values()) for r in results)
    ms = {
        f: 1e3 * sum(r["spent"][f] for r in results) / sum(r["steps"][f] for r in results) for f in families
    }
    measured = {**config, "architectures": [a for a in config["architectures"] if base_arch(a) in families]}
    row = {
        "k": k,
        "steps": steps,
        "seconds": sum(r["elapsed"] for r in results) / k,
        "steps_per_s": sum(sum(r["steps"].values()) / r["elapsed"] for r in results),
        "ms_per_step": 1e3 * sum(r["elapsed"] / sum(r["steps"].values()) for r in results) / k,
        **{f"ms_{family}": value for family, value in ms.items()},
        "paper_hours": paper_hours(measured, {f: value / 1e3 for f, value in ms.items()}) / k,
        "rss_mib": max(r["rss_mib"] for r in results),
    }
    if "gpu_reserved_mib" in results[0]:
        row["gpu_reserved_mib"] = max(r["gpu_reserved_mib"] for r in results)
        row["device_used_mib_per_process"] = max(r["device_used_mib"] for r in results) / workers
    return row


def write_csv(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    """Measure every K; exit status 1 if a process failed (or no K fits the cores), else 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda, or cpu to try the script without a GPU")
    parser.add_argument("--ks", type=int, nargs="+", default=list(KS), help="processes at once")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads per process")
    parser.add_argument("--seconds", type=float, default=5.0, help="timed window per K")
    parser.add_argument("--block", type=int, default=10, help="steps of one family between GPU waits")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per family first")
    parser.add_argument("--families", nargs="+", help="a subset of the paper's architecture families")
    parser.add_argument("--csv", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    config = paper_config()
    families = args.families or list(dict.fromkeys(base_arch(a) for a in config["architectures"]))
    cores = len(os.sched_getaffinity(0))
    ks = [k for k in args.ks if k * args.threads <= cores]
    settings = train_config(config)
    skipped = sorted(set(args.ks) - set(ks))
    print(
        f"{cores} cores, torch {torch.__version__}; K in {ks}, {args.threads} thread(s) each"
        f"{f' (not {skipped}: too few cores)' if skipped else ''}; batch {settings.batch_size} x length "
        f"{config['train_length']}; {args.seconds} s per K, {args.block}-step blocks",
        flush=True,
    )
    if not ks:
        print(
            f"FAILED: no K of {args.ks} fits {cores} cores at {args.threads} thread(s) each", file=sys.stderr
        )
        return 1
    context = multiprocessing.get_context("spawn")  # CUDA cannot be used in a forked process;
    # this one never initialises CUDA, so the device holds the workers' contexts alone
    connections, processes = [], []
    for index in range(max(ks)):
        mine, theirs = context.Pipe()
        process = context.Process(
            target=work, args=(index, theirs, args.device, args.threads, families, args.warmup)
        )
        process.start()
        theirs.close()  # a worker that dies leaves EOF here, not a hang
        connections.append(mine)
        processes.append(process)
    rows = []
    try:
        name, backends = [receive(i, connection) for i, connection in enumerate(connections)][0]
        print(
            f"{name}; families (Mamba backend): "
            + ", ".join(f"{f} ({b})" if b else f for f, b in backends.items())
        )
        header = f"{'K':>3s} {'steps/s':>9s} {'ms/step':>8s} " + " ".join(f"{f:>11s}" for f in families)
        print(header + f" {'hours':>7s}", flush=True)
        for k in ks:
            start_at = time.time() + 0.5
            for connection in connections[:k]:
                connection.send((start_at, args.seconds, args.block))
            results = [receive(i, c) for i, c in enumerate(connections[:k])]
            row = summary(k, results, config, families, len(connections))
            rows.append(row)
            if args.csv:
                write_csv(rows, args.csv)
            per_family = "".join(f" {row[f'ms_{f}']:11.2f}" for f in families)
            rates = f"{row['steps_per_s']:9.1f} {row['ms_per_step']:8.2f}"
            print(f"{k:3d} {rates}{per_family} {row['paper_hours']:7.2f}", flush=True)
    except WorkerFailed as failure:
        measured = f"K = {[row['k'] for row in rows]} measured" if rows else "no K measured"
        print(f"FAILED ({measured}): {failure}", file=sys.stderr)
        return 1
    finally:
        stop(connections, processes)
    best = min(rows, key=lambda row: row["paper_hours"])
    archs = sum(base_arch(a) in families for a in config["architectures"])
    jobs, steps = archs * len(config["tasks"]) * len(config["seeds"]), config["training"]["max_steps"]
    print(
        f"best K = {best['k']}: {best['steps_per_s']:.1f} steps/s in all, {best['ms_per_step']:.2f} ms per "
        f"step per process; config/paper.yaml's training ({jobs} jobs of at most {steps} steps): "
        f"{best['paper_hours']:.2f} h on this device at K = {best['k']} (upper bound: runs that reach the "
        f"criterion stop early); at K = {rows[0]['k']}: {rows[0]['paper_hours']:.2f} h"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
