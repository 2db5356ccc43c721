"""The learnability table: the steps each (architecture, task) pair needed, from the
validation checks of one run per pair (:mod:`statelayers.learnability`).

Schema of ``benchmarks/learnability.csv``: arch, task, cap (the run's step budget:
``training.max_steps`` for a pair whose default run reached the criterion, the
learnability cap for the others), steps_to_95 and steps_to_99 (the first validation
check at or above 0.95, the claims check's learned threshold, here on validation
rather than test accuracy, and at or above 0.99; empty if never), best_val_accuracy
(the best check), wall_s (the run's training seconds). ``benchmarks/learnability_curves.csv``:
arch, task, cap, step, validation_token_accuracy, validation_sequence_accuracy, a row
per check.
"""

from __future__ import annotations

import pandas as pd

from statelayers.report.claims import LEARNED_ACCURACY

THRESHOLDS = {"steps_to_95": LEARNED_ACCURACY, "steps_to_99": 0.99}
COLUMNS = ["arch", "task", "cap", "steps_to_95", "steps_to_99", "best_val_accuracy", "wall_s"]
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
