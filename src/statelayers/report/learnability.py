"""The learnability table: the steps each (architecture, task) pair needed, from the
validation checks of one run per pair (:mod:`statelayers.learnability`).

Schema of ``benchmarks/learnability.csv``: arch, task, cap (the run's step budget:
``training.max_steps`` for a pair whose default run reached the criterion, the
learnability cap for the others), steps_to_95 and steps_to_99 (the first validation
check at or above 0.95, the claims check's learned threshold, here on validation
rather than test accuracy, and at or above 0.99; empty if never), best_val_accuracy
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

from statelayers.report.claims.runs import LEARNED_ACCURACY


def thresholds(criterion: float) -> dict[str, float]:
    """The accuracies the table counts steps to, by column: the learned threshold and the
    stopping ``criterion`` (``training.target_accuracy``)."""
    return {"steps_to_95": LEARNED_ACCURACY, "steps_to_99": criterion}


CRITERION_ACCURACY = 0.99
"""The stopping criterion's validation token accuracy (``training.target_accuracy``)."""
THRESHOLDS = {"steps_to_95": LEARNED_ACCURACY, "steps_to_99": CRITERION_ACCURACY}
COLUMNS = ["arch", "task", "cap", "steps_to_95", "steps_to_99", "best_val_accuracy", "wall_s"]
TABLE_COLUMNS = [*COLUMNS, "default_val_accuracy", "study_max_steps"]
BUDGET_MARGIN = 1.5
"""A pair's study budget is this many times the steps its seed-0 run needed: other seeds
and the study's shorter schedule may need more."""
CURVE_COLUMNS = ["arch", "task", "cap", "step", "validation_token_accuracy", "validation_sequence_accuracy"]


def summary(checks: pd.DataFrame, cap: int) -> dict:
    """The table's numbers of one run from its validation checks (step,
    validation_token_accuracy, seconds), in step order."""
    accuracy = checks["validation_token_accuracy"]
    row: dict = {"cap": cap}
    for column, threshold in THRESHOLDS.items():
        hits = checks.loc[accuracy >= threshold, "step"]
        row[column] = int(hits.iloc[0]) if len(hits) else None
    row["best_val_accuracy"] = float(accuracy.max())
    row["wall_s"] = float(checks["seconds"].iloc[-1])
    return row


def study_budget(row: pd.Series, default_steps: int, eval_every: int) -> int:
    """The ``max_steps`` a pair gets in the study from its learnability row, counted to the
    stopping criterion (0.99), so that a pair ends well above the learned threshold (0.95)
    on seeds and machines the measurement did not see.

    A pair whose default run ended at the criterion (its last validation check,
    ``default_val_accuracy``, at or above 0.99) keeps the default budget: its schedule
    already gets it there. Any other pair gets :data:`BUDGET_MARGIN` times the steps until
    validation first reached the criterion in its long run, rounded up to a validation
    check; where the long run never reached the criterion, the same margin on its steps to
    0.95; where it never reached 0.95 within the cap, the default, since more steps did
    not help. The criterion still ends a run that gets there sooner, so a budget costs
    steps only on seeds that have not reached it.

    .. math:: \\text{max\\_steps} = \\max\\bigl(d,\\ e \\lceil 1.5\\, s / e \\rceil\\bigr),
        \\quad s = s_{0.99} \\text{ if reached, else } s_{0.95}

    with ``d`` the default budget and ``e`` the validation interval."""
    if row["default_val_accuracy"] >= CRITERION_ACCURACY:
        return default_steps
    steps = row["steps_to_99"] if not pd.isna(row["steps_to_99"]) else row["steps_to_95"]
    if pd.isna(steps):
        return default_steps
    return max(default_steps, eval_every * math.ceil(BUDGET_MARGIN * steps / eval_every))


def with_study_budgets(
    table: pd.DataFrame, default_accuracy: pd.DataFrame, default_steps: int, eval_every: int
) -> pd.DataFrame:
    """``table`` with each pair's default run's last validation check
    (``default_accuracy``: arch, task, default_val_accuracy) and its ``study_max_steps``
    (:func:`study_budget`)."""
    table = table.merge(default_accuracy, on=["arch", "task"], how="left", validate="one_to_one")
    budgets = table.apply(study_budget, axis=1, default_steps=default_steps, eval_every=eval_every)
    steps = {column: table[column].astype("Int64") for column in THRESHOLDS}  # whole steps, empty if never
    return table.assign(**steps, study_max_steps=budgets.astype(int))[TABLE_COLUMNS]


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
        hits = within.loc[within["validation_token_accuracy"] >= LEARNED_ACCURACY, "step"]
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
