"""Time one default training job on CPU under several revisions of this repository, and
check that they train the same weights.

Usage: ``python benchmarks/train_step_cpu.py [--arch mamba] [--task dyck] [--seed 0]
[--rounds 3] [--max-steps N] REVISION_OR_DIRECTORY ...``

Each argument is a git revision of this repository (its ``src/`` exported with ``git
archive``) or a directory holding a checkout (``.``: the working tree, uncommitted
changes included; its ``src/`` copied), each into a temporary directory. Every revision
trains the same job: the run ``(arch, task, seed)`` of config/config.yaml as the
workflow gives it (model spec, training settings with the architecture's overrides,
``training.threads``, the Mamba backend and scan, device ``cpu``) on the validation file
the workflow writes, in a fresh process with that revision's ``src/`` first on
``sys.path``. The time is ``train_seconds`` of its ``model.json``: the training loop,
steps and validation checks, without imports and model building. ``--max-steps``
shortens the job (its schedule too), for a quick check of the weights alone.

Round 0 of each revision is untimed: it compiles that copy's numba kernels into its cache.
Then rounds alternate between the revisions and the fastest of each is reported. After
the rounds, every revision's weights (``torch.equal`` on each tensor) and training log
(every column but ``seconds``) are compared with the first revision's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import torch
import yaml

from statelayers import files
from statelayers.models.registry import SSM, base_arch
from statelayers.settings import model_spec, train_settings
from statelayers.tasks.data import make_split

REPO = Path(__file__).resolve().parents[1]
TRAIN = """
import json, sys
job = json.loads(sys.argv[1])
sys.path.insert(0, job["src"])
import statelayers
assert statelayers.__file__.startswith(job["src"]), statelayers.__file__
from statelayers import runtime, training
runtime.start(None, job["threads"])
run = dict(
    spec=job["spec"], training=job["training"], seed=job["seed"], device="cpu", mamba=job["mamba"],
    data_seed=job["data_seed"], train_length=job["train_length"], validation_path=job["validation"],
)
out = dict(out_dir=job["out"], history_path=job["out"] + "/train_log.csv")
if hasattr(training, "RunInputs"):  # a run's inputs as one dataclass
    training.train_checkpoint(training.RunInputs(**run, corpus_path=None), **out)
else:  # revisions before it: the inputs as arguments
    training.train_checkpoint(run.pop("spec"), run.pop("training"), **run, **out)
"""


def source(revision: str, scratch: Path) -> Path:
    """A fresh copy of the ``src/`` of ``revision`` (a checkout directory, or a git revision
    exported with ``git archive``), without compiled files: every revision compiles its
    numba kernels in its warm-up round the same way (a checkout's cache, filled by ``make
    env`` in another process, gave other Mamba weights than a fresh compile)."""
    target = run_directory(scratch, revision, -1)
    if Path(revision).is_dir():
        shutil.copytree(Path(revision) / "src", target / "src", ignore=shutil.ignore_patterns("__pycache__"))
        return target / "src"
    target.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", revision, "src"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target / "src"


def job(config: dict, arch: str, task: str, seed: int, max_steps: int | None, validation: Path) -> dict:
    """What the workflow's ``train`` rule gives the run (workflow/rules/common.smk), as JSON."""
    training = config["training"]
    settings = train_settings(config, arch, task) | ({"max_steps": max_steps} if max_steps else {})
    return {
        "spec": model_spec(config, arch, task),
        "training": settings,
        "seed": seed,
        "threads": training["threads"],
        "mamba": (
            {"backend": training["mamba_backend"], "scan": training["mamba_scan"]}
            if base_arch(arch) in SSM
            else None
        ),
        "data_seed": config["data_seed"],
        "train_length": config["train_length"],
        "validation": str(validation),
    }


def train_seconds(src: Path, settings: dict, out: Path) -> float:
    """Run the job with ``src`` in a fresh process; the seconds its training loop took."""
    result = subprocess.run(
        [sys.executable, "-c", TRAIN, json.dumps(settings | {"src": str(src), "out": str(out)})],
        capture_output=True,
        text=True,
    )
    if result.returncode:
        raise RuntimeError(f"training with {src} failed:\n{result.stderr[-3000:]}")
    return files.read_json(out / "model.json")["train_seconds"]


def run_directory(scratch: Path, revision: str, round_: int) -> Path:
    return scratch / f"{revision.replace('/', '_')}-{round_}"


def same_run(a: Path, b: Path) -> list[str]:
    """What differs between two runs' weights and training logs (nothing: an empty list)."""
    first, second = (torch.load(d / "model.pt", weights_only=True) for d in (a, b))
    differences = [name for name in first if not torch.equal(first[name], second[name])]
    logs = [pd.read_csv(d / "train_log.csv").drop(columns="seconds") for d in (a, b)]
    return differences + ([] if logs[0].equals(logs[1]) else ["train_log.csv"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revisions", nargs="+", help="git revisions or checkout directories")
    parser.add_argument("--arch", default="mamba")
    parser.add_argument("--task", default="dyck")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds after the warm-up round")
    parser.add_argument("--max-steps", type=int, help="shorter job (default: the config's)")
    args = parser.parse_args()
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        validation = scratch / "validation.parquet"
        files.write_parquet(
            make_split(
                args.task,
                "validation",
                config["data"]["validation"],
                config["train_length"],
                config["data_seed"],
                config["task_params"].get(args.task),
            ),
            validation,
        )
        settings = job(config, args.arch, args.task, args.seed, args.max_steps, validation)
        sources = {revision: source(revision, scratch) for revision in args.revisions}
        times: dict[str, list[float]] = {revision: [] for revision in args.revisions}
        for round_ in range(args.rounds + 1):
            for revision, src in sources.items():
                seconds = train_seconds(src, settings, run_directory(scratch, revision, round_))
                if round_:
                    times[revision].append(seconds)
                print(
                    f"round {round_} {revision}: {seconds:.2f} s{'' if round_ else ' (warm-up)'}", flush=True
                )
        steps, threads = settings["training"]["max_steps"], settings["threads"]
        print(f"{args.arch} on {args.task}, seed {args.seed}, at most {steps} steps, {threads} thread(s):")
        reference = args.revisions[0]
        for revision in args.revisions:
            differs = same_run(run_directory(scratch, reference, 0), run_directory(scratch, revision, 0))
            same = (
                f"bit-identical to {reference}" if not differs else f"differs from {reference}: {differs[:5]}"
            )
            if times[revision]:
                best = min(times[revision])
                ratio = best / min(times[reference])
                timing = f"best {best:.2f} s of {len(times[revision])} ({ratio:.3f} x {reference})"
            else:
                timing = "not timed"
            print(f"  {revision}: {timing}; {same}")


if __name__ == "__main__":
    main()
