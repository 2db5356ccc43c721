"""The hyper-parameter sweep: short runs over a grid, judged on validation accuracy only.

Each grid point (learning rate, batch size) of each (architecture, task) is trained
for ``sweep.max_steps`` steps per sweep seed with the study's training settings
otherwise (criterion included), and summarised by its validation checks
(:func:`statelayers.training.sweep_point`): nothing downstream of training (probes,
erasures, claims) is read. Per (architecture, task) the ``selected`` point is, in order:

1. the one where most seeds reached the criterion;
2. then the fewest steps to get there (mean over seeds; points that never reached it
   all used ``max_steps``);
3. then the highest final validation token accuracy (mean over seeds);
4. then the smaller learning rate, then the smaller batch, so the choice is unique.

The study trains every task of an architecture with the same settings, so the sweep
also marks, per architecture, the ``chosen`` point: the same order applied to the
architecture's tasks pooled (seeds that reached the criterion summed over tasks, steps
and accuracy averaged over them). The defaults in ``config/config.yaml`` are the chosen
points.

Schema of ``tables/sweep.csv``: arch, task, lr, batch_size, seeds, reached (seeds that
reached the criterion), steps (mean), validation_token_accuracy (mean of the final
checks), max_steps, target_accuracy, selected (best for the architecture and task),
chosen (best for the architecture over its tasks).
"""

from __future__ import annotations

import pandas as pd

POINT = ["arch", "task", "lr", "batch_size"]


def sweep_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per grid point from the per-run rows (keys, seed, and
    :func:`statelayers.training.sweep_point`'s columns), with the ``selected`` point marked."""
    table = (
        runs.groupby(POINT, as_index=False)
        .agg(
            seeds=("seed", "nunique"),
            reached=("reached", "sum"),
            steps=("steps", "mean"),
            validation_token_accuracy=("validation_token_accuracy", "mean"),
            max_steps=("max_steps", "first"),
            target_accuracy=("target_accuracy", "first"),
        )
        .astype({"reached": int})
    )
    table["selected"] = table.index.isin(_best(table, ["arch", "task"]).index)
    pooled = table.groupby(["arch", "lr", "batch_size"], as_index=False).agg(
        reached=("reached", "sum"),
        steps=("steps", "mean"),
        validation_token_accuracy=("validation_token_accuracy", "mean"),
    )
    chosen = _best(pooled, ["arch"])[["arch", "lr", "batch_size"]].assign(chosen=True)
    table["chosen"] = (
        table[["arch", "lr", "batch_size"]].merge(chosen, how="left")["chosen"].eq(True).to_numpy()
    )
    return table


def _best(points: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The first point per ``keys`` in the module's order: most reached, fewest steps,
    highest accuracy, smaller learning rate, smaller batch."""
    ranked = points.assign(
        _fewer_reached=-points["reached"], _lower_accuracy=-points["validation_token_accuracy"]
    )
    ranked = ranked.sort_values([*keys, "_fewer_reached", "steps", "_lower_accuracy", "lr", "batch_size"])
    return ranked.groupby(keys).head(1)
