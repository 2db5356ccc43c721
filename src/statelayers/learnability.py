"""The budget each (architecture, task) pair needs: how many steps until it learns.

The default study trains every pair to ``training.max_steps``; a pair that has not
reached the criterion by then cannot answer the findings about it. This measurement
takes seed 0 of every pair: a pair whose default run reached the criterion keeps that
run (it needs no more, and training it again would repeat it step for step); any
other pair is trained again with its own settings to a cap of
``learnability.max_steps``, the schedule spanning the cap. Either way the result is the validation checks of one run,
which :mod:`statelayers.report.learnability` summarises.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from statelayers.training import ResumeFile, RunInputs, prepare_run, train

log = logging.getLogger(__name__)


def validation_checks(history: pd.DataFrame) -> pd.DataFrame:
    """The validation checks of a training history (``train_log.csv`` rows), by step."""
    checks = history.dropna(subset=["validation_token_accuracy"]).sort_values("step")
    return checks[["step", "validation_token_accuracy", "validation_sequence_accuracy", "seconds"]]


def pair_checks(
    default_meta: dict, default_history: pd.DataFrame, inputs: RunInputs, resume_path: str | Path
) -> tuple[pd.DataFrame, int]:
    """The validation checks of the pair's run and its step budget: the default run's own
    where it reached the criterion, else a new run of ``inputs`` (the pair's settings at
    the cap; resumable from ``resume_path``, removed once it finishes)."""
    if default_meta["reached"]:
        log.info(
            "reached the criterion at step %d of the default run: not trained again", default_meta["steps"]
        )
        return validation_checks(default_history), int(default_meta["training"]["max_steps"])
    run = prepare_run(inputs)
    resume = ResumeFile(Path(resume_path), run.fingerprint)
    outcome = train(
        run.model, run.stream, run.validation, inputs.config, inputs.seed, run.device, resume=resume
    )
    resume.remove()
    cap = int(inputs.training["max_steps"])
    log.info(
        "trained %d of at most %d steps (criterion %s)",
        outcome.steps,
        cap,
        "reached" if outcome.reached else "not reached",
    )
    return validation_checks(pd.DataFrame(outcome.history)), cap
