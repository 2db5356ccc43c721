"""The learnability table: the steps each (architecture, task) pair needed, from the
validation checks of one run per pair (:mod:`statelayers.learnability`).

Schema of ``benchmarks/learnability.csv``: arch, task, cap (the run's step budget:
``training.max_steps`` for a pair whose default run reached the criterion, the
learnability cap for the others), steps_to_95 and steps_to_99 (the first validation
check at or above the claims check's learned threshold, here on validation rather than
test accuracy, and at or above the stopping criterion, the pair's
``training.target_accuracy``; empty if never), best_val_accuracy
(the best check), wall_s (the run's training seconds), default_val_accuracy (the last
validation check of the pair's default run at seed 0), study_max_steps (the budget the
rule of :func:`study_budget` gives the pair in the study). ``benchmarks/learnability_curves.csv``:
arch, task, cap, step, validation_token_accuracy, validation_sequence_accuracy, a row
per check.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd



STEPS_TO_95_ACCURACY = 0.95
"""The validation accuracy the ``steps_to_95`` column counts steps to, as its name says."""

def thresholds(criterion: float) -> dict[str, float]:
    """The accuracies the table counts steps to, by column: the learned threshold and the
    stopping ``criterion`` (``training.target_accuracy``)."""
    return {"steps_to_95": STEPS_TO_95_ACCURACY, "steps_to_99": criterion}


COLUMNS = ["arch", "task", "cap", "steps_to_95", "steps_to_99", "best_val_accuracy", "wall_s"]
TABLE_COLUMNS = [*COLUMNS, "default_val_accuracy", "study_max_steps"]
BUDGET_MARGIN = 1.5
"""A pair's study budget is this many times the steps its seed-0 run needed: other seeds
and the study's shorter schedule may need more."""
CURVE_COLUMNS = ["arch", "task", "cap", "step", "validation_token_accuracy", "validation_sequence_accuracy"]


def summary(checks: pd.DataFrame, cap: int, criterion: float) -> dict:
    """The table's numbers of one run from its validation checks (step,
    validation_token_accuracy, seconds), in step order; ``criterion`` is the run's
    ``target_accuracy``."""
    accuracy = checks["validation_token_accuracy"]
    row: dict = {"cap": cap}
    for column, threshold in thresholds(criterion).items():
        hits = checks.loc[accuracy >= threshold, "step"]
        row[column] = int(hits.iloc[0]) if len(hits) else None
    row["best_val_accuracy"] = float(accuracy.max())
    row["wall_s"] = float(checks["seconds"].iloc[-1])
    return row


def study_budget(row: pd.Series, default_steps: int, eval_every: int, criterion: float) -> int:
    """The ``max_steps`` a pair gets in the study from its learnability row, counted to the
    stopping ``criterion`` (its ``target_accuracy``), so that a pair ends well above the
    learned threshold on seeds and machines the measurement did not see.

    A pair whose default run ended at the criterion (its last validation check,
    ``default_val_accuracy``, at or above it) keeps the default budget: its schedule
    already gets it there. Any other pair gets :data:`BUDGET_MARGIN` times the steps until
    validation first reached the criterion in its long run, rounded up to a validation
    check; where the long run never reached the criterion, the same margin on its steps to
    the learned threshold; where it never reached that within the cap, the default, since
    more steps did not help. The criterion still ends a run that gets there sooner, so a
    budget costs steps only on seeds that have not reached it.

    .. math:: \\text{max\\_steps} = \\max\\bigl(d,\\ e \\lceil m\\, s / e \\rceil\\bigr),
        \\quad s = s_{\\text{criterion}} \\text{ if reached, else } s_{\\text{learned}}

    with ``d`` the default budget, ``e`` the validation interval and ``m``
    :data:`BUDGET_MARGIN`."""
    if row["default_val_accuracy"] >= criterion:
        return default_steps
    steps = row["steps_to_99"] if not pd.isna(row["steps_to_99"]) else row["steps_to_95"]
    if pd.isna(steps):
        return default_steps
    return max(default_steps, eval_every * math.ceil(BUDGET_MARGIN * steps / eval_every))


DEFAULTS_COLUMNS = ["arch", "task", "default_val_accuracy", "max_steps", "eval_every", "target_accuracy"]
"""What :func:`with_study_budgets` needs of each pair's default run: its last validation
check and the training settings it ran with (the pair's own, overrides and budgets
applied)."""


def with_study_budgets(table: pd.DataFrame, defaults: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each pair's default run's last validation check and its
    ``study_max_steps`` (:func:`study_budget` of the pair's own ``defaults``, columns
    :data:`DEFAULTS_COLUMNS`)."""
    table = table.merge(defaults[DEFAULTS_COLUMNS], on=["arch", "task"], how="left", validate="one_to_one")
    budgets = [
        study_budget(row, int(row["max_steps"]), int(row["eval_every"]), float(row["target_accuracy"]))
        for _, row in table.iterrows()
    ]
    steps = {
        column: table[column].astype("Int64") for column in ("steps_to_95", "steps_to_99")
    }  # empty if never
    return table.assign(**steps, study_max_steps=pd.Series(budgets, index=table.index, dtype=int))[
        TABLE_COLUMNS
    ]


SLOPE_WINDOW = 2000
"""Steps over which :func:`late_slope` fits the validation curve's trend."""


def late_slope(curve: pd.DataFrame, window: int = SLOPE_WINDOW) -> float:
    """Validation token accuracy gained per 1 000 steps over the last ``window`` steps of a
    pair's curve (``learnability_curves.csv`` rows: step, validation_token_accuracy): the
    least-squares slope, so one noisy check does not set it."""
    last = curve[curve["step"] >= curve["step"].max() - window]
    if len(last) < 2:
        return float("nan")
    slope = np.polyfit(last["step"].to_numpy(float), last["validation_token_accuracy"].to_numpy(float), 1)[0]
    return float(slope * 1000)


def budget_outcomes(table: pd.DataFrame, curves: pd.DataFrame, steps: int) -> pd.DataFrame:
    """For each pair of ``table`` whose run was capped at ``steps`` or more: whether seed 0
    reached the learned threshold within ``steps`` (``reached``, at ``steps_to_95``), and
    otherwise its best validation accuracy and :func:`late_slope`. arch, task, cap,
    reached, steps_to_95, best_val_accuracy, slope_per_1000."""
    rows = []
    for row in table[table["cap"] >= steps].itertuples():
        curve = curves[
            (curves["arch"] == row.arch) & (curves["task"] == row.task) & (curves["cap"] == row.cap)
        ]
        within = curve[curve["step"] <= steps]
        hits = within.loc[within["validation_token_accuracy"] >= STEPS_TO_95_ACCURACY, "step"]
        rows.append(
            {
                "arch": row.arch,
                "task": row.task,
                "cap": int(row.cap),
                "reached": bool(len(hits)),
                "steps_to_95": int(hits.iloc[0]) if len(hits) else None,
                "best_val_accuracy": float(within["validation_token_accuracy"].max()),
                "slope_per_1000": late_slope(within),
            }
        )
    return pd.DataFrame(rows)
