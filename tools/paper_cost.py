"""Price config/paper.yaml from what a finished run and the learnability curves measured.

Usage: ``python tools/paper_cost.py [--run results] [--cores 64] [--gpu-jobs 4]
[--gpu-throughput .gpu/out/gpu_throughput.csv] [--curves CSV ...] [--base config/config.yaml]
[--paper config/paper.yaml] [--threads T]``

Why: the paper's scale (docs/cost.md) is too large to run to find out what it costs, and
its step budget (20 000 steps) is an upper bound that most pairs never use, since a run
stops at its criterion. This tool multiplies what was measured by how much of it the
paper asks for, and labels every figure *measured* (read from a file) or *estimated* (a
measurement carried to the paper's scale by the model below).

The model:

1. Steps per run of a pair: its learnability curve (validation token accuracy by step,
   seed 0; the longest curve of the pair among ``--curves``) carried to the paper's
   stopping rule: ``s`` is the first step of the first :data:`CONSECUTIVE_CHECKS`
   consecutive checks at or above the pair's ``target_accuracy``; the paper's run stops
   at its first validation check at or after ``s`` plus the checks after it that the rule
   needs, at most ``max_steps``. A pair whose curve never meets the rule, or that has no
   curve (in the committed curves: Code-Depth and the no-conv variants), costs ``max_steps``. Every seed is assumed to
   need seed 0's steps, and the paper's larger batch no fewer steps than the curve's.
2. Seconds per step of a family: the run's ``train_seconds / steps`` summed over its
   ``model.json`` files (validation checks included, as the run made them), times the run's
   ``training.threads`` (``--base`` is the run's config; core-seconds), times the
   ratio of tokens per step (batch x accumulation x length) and of parameters
   (``model.target_params``), paper over run, where they differ. A no-conv variant trains
   at its family's speed.
3. After-training stages: each job's wall seconds from the run's Snakemake benchmarks
   (``results/benchmarks/<stage>/<arch>/<task>/seedN.tsv``) times the cores the rule takes,
   its family's mean, times the paper's jobs of the stage, times the ratio (paper over
   run) of the one config key that counts the sequences the stage reads
   (:data:`STAGE_SIZE`). A stage the run did not run is not priced, nor the pretrained
   models (GPU jobs; nothing measures them).
4. A CPU partition of N cores: total core-hours / N, bounded below by the longest job on
   its ``--threads`` cores (paper.yaml's ``training.threads``), assuming perfect packing and
   a job's work divided evenly over its threads: a lower bound on wall time.
5. One GPU with K jobs: training only, each job's steps times its family's ms per step per
   process at K from ``benchmarks/gpu_throughput.py --csv`` (the GPU check writes it),
   summed and divided by K, bounded below by the longest job. Without that file the GPU is
   not priced: the repository holds no GPU throughput measurement.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from statelayers.models.registry import NO_CONV, base_arch
from statelayers.settings import overlaid, train_settings
from statelayers.stopping import CONSECUTIVE_CHECKS

STAGE_SIZE = {
    "evaluate": ("data", "test"),
    "untrained": ("data", "test"),
    "probes": ("data", "probe"),
    "probes (untrained)": ("data", "probe"),
    "erasures": ("erasures", "sequences"),
    "patching": ("patching", "pairs"),
    "conv1d": ("data", "test"),
}
"""Per after-training stage, the config key whose count of sequences its job time is taken
to be proportional to (the stage's rule in workflow/rules reads those sequences)."""
ONE_THREAD = ("probes", "probes (untrained)")
"""Stages whose rule takes one thread; the others take ``training.threads``."""


def read_yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def read_curves(paths: Sequence[Path]) -> dict[tuple[str, str], pd.DataFrame]:
    """Each pair's longest curve (the largest ``cap``) among ``paths``: step, accuracy."""
    frames = pd.concat([pd.read_csv(path) for path in paths], ignore_index=True)
    curves = {}
    for (arch, task), frame in frames.groupby(["arch", "task"]):
        longest = frame[frame["cap"] == frame["cap"].max()].sort_values("step")
        curves[(arch, task)] = longest[["step", "validation_token_accuracy"]].reset_index(drop=True)
    return curves


def learned_at(curve: pd.DataFrame, target: float) -> int | None:
    """The first step of the first :data:`CONSECUTIVE_CHECKS` consecutive checks at or
    above ``target``; ``None`` if the curve has none."""
    hits = (curve["validation_token_accuracy"] >= target).to_numpy()
    for index in range(len(hits) - CONSECUTIVE_CHECKS + 1):
        if hits[index : index + CONSECUTIVE_CHECKS].all():
            return int(curve["step"].iloc[index])
    return None


def paper_steps(curve: pd.DataFrame | None, training: Mapping) -> tuple[int, str]:
    """Steps one run of the pair takes under ``training`` (its resolved settings), and why."""
    max_steps, every, target = training["max_steps"], training["eval_every"], training["target_accuracy"]
    if curve is None:
        return max_steps, "no curve: max_steps"
    step = learned_at(curve, target)
    if step is None:
        return max_steps, f"curve to {int(curve['step'].max())} never meets the rule: max_steps"
    stop = every * (math.ceil(step / every) + CONSECUTIVE_CHECKS - 1)
    return min(stop, max_steps), f"curve meets {target} at {step}"


@dataclass(frozen=True)
class Measured:
    """One family's training speed in the run: core-seconds per step at its scale."""

    core_s_per_step: float
    runs: int
    tokens_per_step: int
    target_params: int | None


def measured_speed(run: Path, run_threads: int) -> dict[str, Measured]:
    """Per family, from the run's ``models/<arch>/<task>/seedN/model.json`` files (not the
    untrained twins, nor runs without training seconds)."""
    totals: dict[str, list] = {}
    for path in sorted((run / "models").glob("*/*/seed*/model.json")):
        meta = json.loads(path.read_text())
        if not meta.get("steps") or meta.get("train_seconds") is None:
            continue
        training = meta["training"]
        tokens = training["batch_size"] * training.get("grad_accumulation", 1) * meta["train_length"]
        entry = totals.setdefault(base_arch(path.parts[-4]), [0.0, 0, 0, set(), set()])
        entry[0] += meta["train_seconds"]
        entry[1] += meta["steps"]
        entry[2] += 1
        entry[3].add(tokens)
        entry[4].add(meta.get("target_params"))
    speeds = {}
    for family, (seconds, steps, runs, tokens, params) in totals.items():
        if len(tokens) > 1 or len(params) > 1:
            raise SystemExit(
                f"{run}: {family}'s runs differ in tokens per step or parameters; price one scale"
            )
        speeds[family] = Measured(run_threads * seconds / steps, runs, tokens.pop(), params.pop())
    return speeds


def scale(speed: Measured, settings: Mapping, paper: Mapping) -> tuple[float, str]:
    """How many times the run's step a paper step of a pair costs (its resolved training
    ``settings``): tokens per step times parameters, paper over run; and what changed."""
    tokens = settings["batch_size"] * settings["grad_accumulation"] * paper["train_length"]
    params = paper["model"]["target_params"]
    factor = tokens / speed.tokens_per_step * (params / speed.target_params if speed.target_params else 1)
    if factor == 1:
        return 1.0, ""
    changed = (
        [f"{speed.tokens_per_step} -> {tokens} tokens per step"] if tokens != speed.tokens_per_step else []
    )
    if speed.target_params and params != speed.target_params:
        changed.append(f"{speed.target_params} -> {params} parameters")
    return factor, f"{', '.join(changed)}: x {factor:.3g}"


def stage_jobs(run: Path, base: Mapping) -> pd.DataFrame:
    """Every after-training job of the run: stage, family, core-seconds (wall x threads)."""
    rows = []
    for stage in STAGE_SIZE:
        name, _, twin = stage.partition(" (")
        folder = run / "benchmarks" / name / ("untrained" if twin else "")
        for path in sorted(folder.glob("*/*/seed*.tsv")):
            arch = path.parts[-3]
            if arch == "untrained":
                continue
            threads = 1 if stage in ONE_THREAD else base["training"]["threads"]
            wall = float(pd.read_csv(path, sep="\t").iloc[-1]["s"])  # the last attempt
            rows.append({"stage": stage, "family": base_arch(arch), "core_s": wall * threads})
    return pd.DataFrame(rows, columns=["stage", "family", "core_s"])


def get(config: Mapping, keys: tuple[str, ...]):
    for key in keys:
        config = config[key]
    return config


def paper_runs(paper: Mapping, stage: str) -> list[tuple[str, str, int]]:
    """(arch, task, seed) of every job of ``stage`` in the paper's study (workflow/rules)."""
    archs, tasks, seeds = paper["architectures"], paper["tasks"], paper["seeds"]
    if stage == "patching":
        tasks = [t for t in tasks if t != "codedepth"] if paper["patching"]["enabled"] else []
    if stage == "conv1d":
        archs = [a for a in archs if a in NO_CONV and NO_CONV[a] in archs]
        archs = [NO_CONV[a] for a in archs]
    return [(arch, task, seed) for arch in archs for task in tasks for seed in seeds]


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=Path("results"), help="a finished run's results")
    parser.add_argument("--base", type=Path, default=Path("config/config.yaml"), help="the run's config")
    parser.add_argument("--paper", type=Path, default=Path("config/paper.yaml"), help="the overlay to price")
    parser.add_argument(
        "--curves",
        type=Path,
        nargs="+",
        default=[Path("benchmarks/learnability_curves.csv"), Path("benchmarks/learnability_s3_curves.csv")],
    )
    parser.add_argument("--cores", type=int, default=64, help="cores of the CPU partition")
    parser.add_argument("--threads", type=int, help="cores per job (default: paper's training.threads)")
    parser.add_argument("--gpu-jobs", type=int, default=4, help="K: jobs at once on one GPU")
    parser.add_argument("--gpu-throughput", type=Path, help="benchmarks/gpu_throughput.py's CSV")
    args = parser.parse_args(argv)

    base = read_yaml(args.base)
    paper = overlaid(base, read_yaml(args.paper))
    threads = args.threads or paper["training"]["threads"]
    if threads > args.cores:
        raise SystemExit(f"--cores {args.cores} is fewer than the {threads} cores a job takes")
    speeds = measured_speed(args.run, base["training"]["threads"])
    if not speeds:
        raise SystemExit(
            f"{args.run}: no model.json with steps and train_seconds under {args.run / 'models'}: "
            "price after a finished run (make run)"
        )
    curves = read_curves(args.curves)
    print(f"# {args.paper} over {args.base}, priced\n")
    print(
        f"Inputs: {sum(m.runs for m in speeds.values())} trained runs of {args.run} (measured); "
        f"curves {', '.join(map(str, args.curves))} (measured, seed 0); "
        f"GPU: {args.gpu_throughput or 'none'}.\n"
    )

    # Training: steps per pair from the curves, seconds per step from the run.
    missing = {base_arch(a) for a in paper["architectures"]} - set(speeds)
    if missing:
        raise SystemExit(
            f"{args.run}: no trained run of {sorted(missing)}; price after a run that trains them"
        )
    notes: dict[str, int] = {}  # what scaled the run's step: pairs it scaled
    print("## Training per pair\n")
    print("| arch | task | steps per run | why | seeds | core-s per step | core-hours | label |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    train_jobs = []
    for arch in paper["architectures"]:
        family = base_arch(arch)
        for task in paper["tasks"]:
            settings = train_settings(paper, arch, task)
            steps, why = paper_steps(curves.get((arch, task)), settings)
            factor, note = scale(speeds[family], settings, paper)
            if note:
                notes[note] = notes.get(note, 0) + 1
            per_step = speeds[family].core_s_per_step * factor
            train_jobs += [steps * per_step] * len(paper["seeds"])
            label = "estimated: steps from a seed-0 curve" if "curve meets" in why else "estimated: max_steps"
            label += ", core-s per step measured" + (" and scaled" if factor != 1 else "")
            print(
                f"| {arch} | {task} | {steps} | {why} | {len(paper['seeds'])} | {per_step:.4g} | "
                f"{hours(steps * per_step * len(paper['seeds']))} | {label} |"
            )
    if notes:
        scaled = "; ".join(f"{note} ({count} pairs)" for note, count in notes.items())
        print(f"\nScaled from the run's step (estimated, proportional to tokens x parameters): {scaled}.")

    # Job hours per stage.
    jobs = stage_jobs(args.run, base)
    print("\n## Job hours per stage\n")
    print("| stage | jobs | core-hours | job hours at paper threads | label |")
    print("| --- | --- | --- | --- | --- |")
    train_core = sum(train_jobs)
    print(
        f"| train | {len(train_jobs)} | {hours(train_core)} | {hours(train_core / threads)} | "
        "estimated: steps from the curves x core-s per step measured in the run (table above) |"
    )
    all_jobs = [(c, threads) for c in train_jobs]
    for stage, keys in STAGE_SIZE.items():
        runs = paper_runs(paper, stage)
        if not runs:
            continue
        measured = jobs[jobs["stage"] == stage]
        if measured.empty:
            print(f"| {stage} | {len(runs)} | - | - | not priced: the run has no {stage} job |")
            continue
        ratio = get(paper, keys) / get(base, keys)
        per_family = measured.groupby("family")["core_s"].mean()
        costs = [per_family.get(base_arch(a), measured["core_s"].mean()) * ratio for a, _, _ in runs]
        stage_threads = 1 if stage in ONE_THREAD else threads
        all_jobs += [(c, stage_threads) for c in costs]
        print(
            f"| {stage} | {len(runs)} | {hours(sum(costs))} | {hours(sum(costs) / stage_threads)} | "
            f"estimated: per-run cost measured at default scale ({len(measured)} jobs, mean per family) "
            f"x {ratio:.3g} ({'.'.join(keys)} {get(base, keys)} -> {get(paper, keys)}) |"
        )
    if paper["pretrained"]["enabled"]:
        models = len(paper["pretrained"]["models"]) * len(paper["tasks"]) * len(paper["pretrained"]["seeds"])
        print(f"| pretrained | {models} fine-tunings | - | - | not priced: no measurement (GPU jobs) |")
    total = sum(c for c, _ in all_jobs)
    print(f"| all priced | {len(all_jobs)} | {hours(total)} | - | estimated |")

    # Wall time: a CPU partition, one GPU.
    longest = max(c / t for c, t in all_jobs)
    cpu = max(total / args.cores, longest)
    print("\n## Wall time\n")
    print(
        f"- CPU partition of {args.cores} cores, {threads} per model job: **{hours(cpu)} h** (estimated: "
        f"{hours(total)} core-hours / {args.cores} = {hours(total / args.cores)} h, at least the longest job, "
        f"{hours(longest)} h; perfect packing, a job's work split evenly over its threads)"
    )
    if args.gpu_throughput is None:
        print(
            f"- One GPU, {args.gpu_jobs} jobs at once: not priced (no GPU throughput measurement in the repository; "
            "run tools/gpu_check.sh and pass --gpu-throughput .gpu/out/gpu_throughput.csv)"
        )
        return 0
    table = pd.read_csv(args.gpu_throughput)
    row = table[table["k"] == args.gpu_jobs]
    if row.empty:
        raise SystemExit(f"{args.gpu_throughput}: no row for K = {args.gpu_jobs} (K: {list(table['k'])})")
    row = row.iloc[0]
    gpu_jobs = []
    for arch in paper["architectures"]:
        column = f"ms_{base_arch(arch)}"
        if column not in row:
            raise SystemExit(f"{args.gpu_throughput}: no {column} column")
        for task in paper["tasks"]:
            steps, _ = paper_steps(curves.get((arch, task)), train_settings(paper, arch, task))
            gpu_jobs += [steps * row[column] / 1e3] * len(paper["seeds"])
    gpu = max(sum(gpu_jobs) / args.gpu_jobs, max(gpu_jobs))
    print(
        f"- One GPU, {args.gpu_jobs} jobs at once, training only: **{hours(gpu)} h** (estimated: steps from the "
        f"curves x ms per step per process at K = {args.gpu_jobs} measured in {args.gpu_throughput}, / K, "
        f"at least the longest job, {hours(max(gpu_jobs))} h); the other stages as core-hours above"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
