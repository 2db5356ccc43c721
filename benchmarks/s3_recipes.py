"""Pilot of two protocol changes peers use for S3, against the logged baseline curves.

Usage: ``python benchmarks/s3_recipes.py [--steps 3000] [--deadline HH:MM] [ARM/TASK ...]``
(default: every arm on s3, then on parity); ``--table-only`` rebuilds the table from the
curves already written.

Arms (seed 0, each at its pair's own settings of config/config.yaml, ``max_steps`` set to
``--steps``, the learning-rate schedule spanning them):

- ``mamba_signed``, ``mamba2_signed``: Mamba and Mamba-2 with signed transitions
  ``2 exp(dt A) - 1`` (:func:`statelayers.models.mamba_scan.transitions`), built and
  trained like their families;
- ``transformer_curriculum``: the Transformer with a position curriculum
  (:data:`CURRICULUM`, :mod:`statelayers.tasks.curriculum`).

Every validation check of every arm is appended to ``benchmarks/s3_recipes_curves.csv``
as it happens (read from the training log), so an arm stopped at ``--deadline`` keeps the
checks it reached; a run is keyed by its arm, task and ``max_steps``, so an arm continued
to 10 000 steps (``--steps 10000``, a fresh run whose schedule spans them) keeps its
3000-step run. ``benchmarks/s3_recipes.csv`` then holds, per run, the validation
token accuracy at steps 1000, 2000, 3000 and 10 000, the baseline family's at the same steps from
its logged learnability curve (:data:`BASELINES`; empty where that curve has no check at
the step, e.g. after it stopped at the criterion), and the difference. Validation
accuracy only: nothing here reads probes or verdicts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from statelayers import settings  # noqa: E402
from statelayers.tasks.data import make_split  # noqa: E402
from statelayers.training import RunInputs, prepare_run, train  # noqa: E402

CURRICULUM = {"start": 4, "step": 4, "threshold": 0.95}
"""The Transformer arm's curriculum: 4 positions first, 4 more whenever a step's training
token accuracy on the covered ones reaches 0.95 (fixed before the pilot ran)."""
ARMS = {  # arm -> (architecture it trains, the baseline family, extra training settings)
    "mamba_signed": ("mamba_signed", "mamba", {}),
    "mamba2_signed": ("mamba2_signed", "mamba2", {}),
    "transformer_curriculum": ("transformer", "transformer", {"curriculum": CURRICULUM}),
}
BASELINES = {  # (family, task) -> the learnability curve of the family's own settings
    ("mamba", "s3"): "learnability_s3_curves.csv",
    ("mamba2", "s3"): "learnability_s3_curves.csv",
    ("transformer", "s3"): "learnability_s3_curves.csv",
    ("mamba", "parity"): "learnability_mamba_parity_curves.csv",
    ("mamba2", "parity"): "learnability_mamba2_parity_curves.csv",
    ("transformer", "parity"): "learnability_curves.csv",
}
DEFAULT_RUNS = [f"{arm}/{task}" for task in ("s3", "parity") for arm in ARMS]
AT_STEPS = (1000, 2000, 3000, 10_000)
PILOT_STEPS = 3000
"""Every arm's budget (``--steps``); a continued run's is larger."""
CURVES = ROOT / "benchmarks" / "s3_recipes_curves.csv"
TABLE = ROOT / "benchmarks" / "s3_recipes.csv"
SEED = 0


class Deadline(Exception):
    """The wall-clock deadline passed: the arm stops where it is."""


class CheckRecorder(logging.Handler):
    """Appends each validation check of the training log to :data:`CURVES`, and raises
    :class:`Deadline` at the first log row past ``deadline``."""

    def __init__(self, arm: str, task: str, max_steps: int, deadline: dt.datetime | None):
        super().__init__()
        self.arm, self.task, self.max_steps, self.deadline = arm, task, max_steps, deadline

    def emit(self, record: logging.LogRecord) -> None:
        if not record.msg.startswith("step %d/%d") or not record.args[4]:
            return
        step, accuracy, seconds = record.args[0], float(record.args[4].split()[-1]), record.args[5]
        row = {"arm": self.arm, "task": self.task, "seed": SEED, "step": step}
        row |= {"validation_token_accuracy": accuracy, "seconds": round(seconds, 1)}
        row["max_steps"] = self.max_steps
        pd.DataFrame([row]).to_csv(CURVES, mode="a", header=not CURVES.exists(), index=False)

    def check_deadline(self) -> None:
        if self.deadline and dt.datetime.now(dt.UTC) > self.deadline:
            raise Deadline


def run_arm(config: dict, arm: str, task: str, steps: int, deadline: dt.datetime | None, tmp: Path) -> None:
    """Train one arm on one task for ``steps``; its checks go to :data:`CURVES` as they
    happen, replacing those of an earlier run of the arm at that budget (a run starts over
    from step 0)."""
    arch, _, extra = ARMS[arm]
    if CURVES.exists():
        curves = pd.read_csv(CURVES)
        same = (curves["arm"] == arm) & (curves["task"] == task) & (curves["max_steps"] == steps)
        curves[~same].to_csv(CURVES, index=False)
    validation = tmp / f"{task}_validation.parquet"
    pq.write_table(
        make_split(task, "validation", config["data"]["validation"], config["train_length"],
                   config["data_seed"], config["task_params"].get(task, {})),
        validation,
    )  # fmt: skip
    training = settings.train_settings(config, arch, task) | {"max_steps": steps} | extra
    inputs = RunInputs(
        spec=settings.model_spec(config, arch, task),
        training=training,
        seed=SEED,
        data_seed=config["data_seed"],
        train_length=config["train_length"],
        device="cpu",
        mamba={"backend": config["training"]["mamba_backend"], "scan": config["training"]["mamba_scan"]},
        validation_path=str(validation),
        corpus_path=None,
    )
    run = prepare_run(inputs)
    recorder = CheckRecorder(arm, task, steps, deadline)
    log = logging.getLogger("statelayers.training")
    log.addHandler(recorder)
    draw = run.stream.draw

    def draw_until_deadline(n: int):
        recorder.check_deadline()
        return draw(n)

    run.stream.draw = draw_until_deadline
    try:
        train(run.model, run.stream, run.validation, inputs.config, SEED, run.device)
    except Deadline:
        logging.getLogger(__name__).warning("%s/%s stopped at the deadline", arm, task)
    finally:
        log.removeHandler(recorder)


def baseline_at(family: str, task: str, step: int) -> float | None:
    """The family's logged validation token accuracy at ``step``; ``None`` where not logged."""
    curve = pd.read_csv(ROOT / "benchmarks" / BASELINES[family, task])
    at = curve[(curve["arch"] == family) & (curve["task"] == task) & (curve["step"] == step)]
    return float(at["validation_token_accuracy"].iloc[0]) if len(at) else None


def table() -> pd.DataFrame:
    """One row per run (arm, task and ``max_steps``): its accuracy at :data:`AT_STEPS` and
    at its last check (``steps``: an arm stops at the criterion or the deadline), the
    baseline's at the same steps, and the differences."""
    curves = pd.read_csv(CURVES)
    rows = []
    for (arm, task, max_steps), checks in curves.groupby(["arm", "task", "max_steps"], sort=False):
        steps = int(checks["step"].max())
        row = {"arm": arm, "task": task, "seed": SEED, "max_steps": max_steps, "steps": steps}
        for step, name in [(step, str(step)) for step in AT_STEPS] + [(steps, "last")]:
            at = checks[checks["step"] == step]["validation_token_accuracy"]
            ours = float(at.iloc[-1]) if len(at) else None
            base = baseline_at(ARMS[arm][1], task, step)
            row[f"val_{name}"] = ours
            row[f"baseline_{name}"] = base
            row[f"diff_{name}"] = None if ours is None or base is None else round(ours - base, 4)
        row["best_val"] = float(checks["validation_token_accuracy"].max())
        rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="*", default=DEFAULT_RUNS, help="ARM/TASK, run in this order")
    parser.add_argument("--steps", type=int, default=PILOT_STEPS)
    parser.add_argument("--deadline", help="UTC HH:MM: stop the arm running then, and skip the rest")
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if not args.table_only:
        torch.set_num_threads(1)
        config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
        deadline = None
        if args.deadline:
            hour, minute = map(int, args.deadline.split(":"))
            deadline = dt.datetime.now(dt.UTC).replace(hour=hour, minute=minute, second=0, microsecond=0)
        with tempfile.TemporaryDirectory() as tmp:
            for run in args.runs:
                if deadline and dt.datetime.now(dt.UTC) > deadline:
                    break
                arm, task = run.split("/")
                run_arm(config, arm, task, args.steps, deadline, Path(tmp))
                table().to_csv(TABLE, index=False)
    table().to_csv(TABLE, index=False)
    print(pd.read_csv(TABLE).to_string(index=False))


if __name__ == "__main__":
    main()
