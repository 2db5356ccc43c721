"""The hyper-parameter sweep: short runs over a grid, judged on validation accuracy only.

A grid point is a model block (a named option set of the family, ``sweep.blocks``),
with or without a start token, a learning rate and a batch size. Each point of each
(architecture, task) is trained per sweep seed with the pair's training settings
otherwise (criterion included) on as many training sequences as every other point
(:func:`point_training`), and summarised by its validation checks
(:func:`point_row`): nothing downstream of training (probes,
erasures, claims) is read. Per (architecture, task) the ``selected`` point is, in order:

1. the one where most seeds reached the criterion;
2. then the fewest training sequences to get there (steps x batch size, mean over
   seeds; points that never reached it all used the sweep's budget of sequences);
3. then the highest final validation token accuracy (mean over seeds);
4. then the smaller learning rate, the smaller batch, the block's name, and no start
   token before one, so the choice is unique.

The study can train each pair with its own settings (``training.overrides`` and
``model.options`` take ``arch/task`` keys), and ``config/config.yaml`` takes the selected
points (:func:`selected_settings`, printed by ``tools/selected_points.py``). The sweep
also marks, per architecture, the ``chosen`` point: the same order applied to the architecture's tasks pooled (seeds that reached the criterion summed over
tasks, sequences and accuracy averaged over them), the best setting shared by its tasks.

Schema of ``tables/sweep.csv``: arch, task, block, start_token, lr, batch_size, seeds,
reached (seeds that reached the criterion), steps (mean), sequences (mean steps x
batch size), validation_token_accuracy (mean of the final checks), max_steps,
target_accuracy, selected (best for the architecture and task), chosen (best for the
architecture over its tasks).

A *schedule sweep* compares step budgets and learning-rate schedules, which one sweep
holds fixed: the same grid swept once per schedule, each in its own directory and
config, joined by :func:`schedule_table` with a ``decay_fraction`` column and selected
across schedules in the same order. A selected point that got every seed to the
criterion also sets the pair's ``training.pair_budgets`` and ``decay_fraction``
(:func:`selected_settings`). Where a config trains a pair away from its selected point,
:func:`configured_point` and :func:`config_overrides` say so (docs/results.md marks it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from statelayers.models.registry import base_arch
from statelayers.pairs import pair_keys, resolve

if TYPE_CHECKING:  # the Snakefile reads this module at parse time: no torch here
    from statelayers.training import Outcome

DEFAULT_BLOCK = "default"
"""The sweep's name for a family's own options, where ``sweep.blocks`` lists none for it."""


def sweep_blocks(config: Mapping, arch: str) -> dict[str, dict]:
    """The sweep's named model-option sets of ``arch``'s family (merged onto the study's
    options), or the study's options alone."""
    return config["sweep"]["blocks"].get(base_arch(arch), {DEFAULT_BLOCK: {}})


SWEEP_GRID = ("lr", "batch_size", "start_token", "max_steps")
"""The sweep's grid settings that ``sweep.pairs`` may change for a pair."""


def sweep_grid(config: Mapping, arch: str, task: str) -> dict | None:
    """One pair's sweep grid: ``sweep``'s learning rates, batch sizes, start tokens and step
    budget, changed by ``sweep.pairs`` for it (the more specific key winning, as in
    :func:`statelayers.pairs.resolve`); ``None`` where ``sweep.pairs`` lists pairs and none of its keys
    names this one (the pair is not swept)."""
    sweep = config["sweep"]
    grid = {key: sweep[key] for key in SWEEP_GRID}
    pairs = sweep.get("pairs")
    if pairs is None:
        return grid
    if not any(key in pairs for key in pair_keys(arch, task)):
        return None
    return grid | resolve(pairs, arch, task)


def sweep_points(config: Mapping) -> list[dict]:
    """Every run of the sweep: each swept (architecture, task) pair of the study at each
    point of its grid (its family's blocks, with and without a start token, learning rate,
    batch size) and sweep seed."""
    points = []
    for arch in config["architectures"]:
        blocks = sweep_blocks(config, arch)
        for task in config["tasks"]:
            grid = sweep_grid(config, arch, task)
            if grid is None:
                continue
            points += [
                {
                    "arch": arch,
                    "task": task,
                    "block": block,
                    "start_token": start_token,
                    "lr": lr,
                    "batch_size": batch_size,
                    "seed": seed,
                }
                for block in blocks
                for start_token in grid["start_token"]
                for lr in grid["lr"]
                for batch_size in grid["batch_size"]
                for seed in config["sweep"]["seeds"]
            ]
    return points


def point_options(config: Mapping, arch: str, block: str, start_token: bool) -> dict:
    """The model options a sweep run adds to the study's (``options`` of
    :func:`statelayers.settings.model_spec`): its block's, and its start token."""
    return sweep_blocks(config, arch)[block] | {"start_token": start_token}


def point_training(
    config: Mapping, arch: str, task: str, training: Mapping, lr: float, batch_size: int
) -> dict:
    """A sweep run's training settings: the pair's own (``training``, as
    :func:`statelayers.settings.train_settings` resolves them) with the grid point's
    learning rate and batch size, on as many sequences as every other point of the pair's
    grid (:func:`sweep_grid`). Its ``max_steps`` counts steps at the grid's smallest batch
    size; a batch ``k`` times larger trains ``1/k`` of the steps and checks validation
    every ``1/k`` of the steps, so every point is judged after the same sequences, and a
    faster point is one that needs fewer sequences."""
    grid = sweep_grid(config, arch, task)
    if grid is None:
        raise ValueError(f"config: sweep.pairs does not list {arch}/{task}")
    smallest = min(grid["batch_size"])

    def at_equal_sequences(steps: int) -> int:
        return max(1, steps * smallest // batch_size)

    return dict(training) | {
        "lr": lr,
        "batch_size": batch_size,
        "max_steps": at_equal_sequences(grid["max_steps"]),
        "eval_every": at_equal_sequences(training["eval_every"]),
    }


def point_row(training: Mapping, outcome: Outcome) -> dict:
    """One sweep run's row: its grid point's training settings and what its run did
    (:func:`statelayers.training.train_without_checkpoint`), judged by the last
    validation check only."""
    return {
        "lr": training["lr"],
        "batch_size": training["batch_size"],
        "max_steps": training["max_steps"],
        "target_accuracy": training["target_accuracy"],
        "steps": outcome.steps,
        "reached": outcome.reached,
        "validation_token_accuracy": outcome.history[-1]["validation_token_accuracy"],
        "train_seconds": outcome.history[-1]["seconds"],
    }


SETTING = ["block", "start_token", "lr", "batch_size"]
"""What the sweep chooses for a pair: the grid point's coordinates."""
POINT = ["arch", "task", *SETTING]
SCHEDULE = ["max_steps", "decay_fraction"]
"""What a schedule sweep chooses besides: the step budget (the schedule spans it) and the
fraction of it over which the learning rate decays (:mod:`statelayers.training`)."""


def sweep_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per grid point from the per-run rows (keys, seed, and :func:`point_row`'s
    columns), with the ``selected`` point marked."""
    table = (
        runs.assign(sequences=runs["steps"] * runs["batch_size"])
        .groupby(POINT, as_index=False)
        .agg(
            seeds=("seed", "nunique"),
            reached=("reached", "sum"),
            steps=("steps", "mean"),
            sequences=("sequences", "mean"),
            validation_token_accuracy=("validation_token_accuracy", "mean"),
            max_steps=("max_steps", "first"),
            target_accuracy=("target_accuracy", "first"),
        )
        .astype({"reached": int})
    )
    return with_best_marked(table, SETTING)


def schedule_table(sweeps: list[pd.DataFrame]) -> pd.DataFrame:
    """Sweep tables of one grid under different schedules (each with its runs'
    ``decay_fraction``) as one table, the ``selected`` and ``chosen`` points marked across
    schedules: most seeds at the criterion, then the fewest sequences, so a shorter budget
    wins only where it gets as many seeds there."""
    joined = pd.concat(sweeps, ignore_index=True).drop(columns=["selected", "chosen"])
    return with_best_marked(joined, [*SETTING, *SCHEDULE])


def with_best_marked(table: pd.DataFrame, setting: list[str]) -> pd.DataFrame:
    """``table`` with the ``selected`` point per (architecture, task) and the ``chosen``
    ``setting`` per architecture, its tasks pooled (the module's order, :func:`best_points`)."""
    table = table.assign(selected=table.index.isin(best_points(table, ["arch", "task"]).index))
    pooled = table.groupby(["arch", *setting], as_index=False).agg(
        reached=("reached", "sum"),
        sequences=("sequences", "mean"),
        validation_token_accuracy=("validation_token_accuracy", "mean"),
    )
    chosen = best_points(pooled, ["arch"])[["arch", *setting]].assign(chosen=True)
    table["chosen"] = table[["arch", *setting]].merge(chosen, how="left")["chosen"].eq(True).to_numpy()
    return table


def best_points(points: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The first point per ``keys`` in the module's order: most reached, fewest sequences,
    highest accuracy, then smaller learning rate, smaller batch, block name, no start token."""
    ranked = points.assign(
        _fewer_reached=-points["reached"], _lower_accuracy=-points["validation_token_accuracy"]
    )
    order = [
        *keys,
        "_fewer_reached",
        "sequences",
        "_lower_accuracy",
        "lr",
        "batch_size",
        "block",
        "start_token",
        *[column for column in SCHEDULE if column in points],
    ]
    return ranked.sort_values(order).groupby(keys).head(1).drop(columns=["_fewer_reached", "_lower_accuracy"])


VARIANT = ["block", "start_token", "batch_size"]
"""A grid point without its learning rate: what a figure's line or a README column shows."""


def variant_names(table: pd.DataFrame) -> pd.Series:
    """Each row's variant in words, naming only the dimensions the sweep varied
    (``""`` where it varied the learning rate alone)."""
    parts = []
    if table["block"].nunique() > 1:
        parts.append(table["block"].astype(str))
    if table["start_token"].nunique() > 1:
        parts.append(table["start_token"].map({True: "start token", False: "no start token"}))
    if table["batch_size"].nunique() > 1:
        parts.append("batch " + table["batch_size"].astype(str))
    if "decay_fraction" in table:  # a schedule sweep: its budgets and decays
        parts.append(table["max_steps"].astype(int).astype(str) + " steps")
        parts.append("decay " + table["decay_fraction"].map("{:g}".format))
    if not parts:
        return pd.Series("", index=table.index)
    names = parts[0]
    for part in parts[1:]:
        names = names + ", " + part
    return names


def selected_settings(table: pd.DataFrame, blocks: Mapping[str, Mapping[str, dict]]) -> dict:
    """The config keys that train each swept pair at its ``selected`` point, as nested
    config sections: ``training.overrides`` (lr, batch_size) and ``model.options`` (the
    block's options, and ``start_token: true`` where chosen) under ``arch/task`` keys.
    ``blocks`` is ``sweep.blocks``. A default block without a start token adds no model
    option, so a pair built as before keeps its parameters and reruns nothing. A schedule
    sweep's point (:func:`schedule_table`) where every seed reached the criterion adds its
    ``decay_fraction`` to the overrides and its ``max_steps`` as ``training.pair_budgets``;
    a schedule that left a seed short of it replaces no budget."""
    overrides: dict[str, dict] = {}
    options: dict[str, dict] = {}
    budgets: dict[str, int] = {}
    for row in table[table["selected"]].sort_values(["arch", "task"]).itertuples():
        pair = f"{row.arch}/{row.task}"
        overrides[pair] = {"lr": float(row.lr), "batch_size": int(row.batch_size)}
        if "decay_fraction" in table and row.reached == row.seeds:
            overrides[pair]["decay_fraction"] = float(row.decay_fraction)
            budgets[pair] = int(row.max_steps)
        block = dict(blocks.get(base_arch(row.arch), {}).get(row.block, {}))
        if row.start_token:
            block["start_token"] = True
        if block:
            options[f"{base_arch(row.arch)}/{row.task}"] = block
    training = {"overrides": overrides} | ({"pair_budgets": budgets} if budgets else {})
    return {"training": training, "model": {"options": options}}


def _true(value: object) -> bool:
    """A table's boolean as written to CSV and read back (``True``, ``"True"``)."""
    return str(value).strip().lower() == "true"


def configured_point(options: dict, training: dict, blocks: dict[str, dict]) -> dict:
    """The sweep coordinates at which a config trains one pair, from the pair's resolved
    model options and training settings and its family's ``sweep.blocks``: the first block
    whose every option the pair's options share (``None`` where none does), the start
    token, the learning rate and the batch size."""
    block = next(
        (
            name
            for name, set_options in blocks.items()
            if all(options.get(k) == v for k, v in set_options.items())
        ),
        None,
    )
    return {
        "block": block,
        "start_token": bool(options.get("start_token", False)),
        "lr": float(training["lr"]),
        "batch_size": int(training["batch_size"]),
    }


def _differs(row: pd.Series, point: dict, blocks: dict[str, dict]) -> dict[str, tuple]:
    """Setting -> (the sweep's value, the config's) where they differ. A block name the
    config's ``sweep.blocks`` does not know is not compared."""
    found = {}
    if row["block"] in blocks and point["block"] != row["block"]:
        found["block"] = (row["block"], point["block"])
    if bool(row["start_token"]) != point["start_token"]:
        found["start_token"] = (bool(row["start_token"]), point["start_token"])
    if abs(float(row["lr"]) - point["lr"]) > 1e-12 * max(1.0, point["lr"]):
        found["lr"] = (float(row["lr"]), point["lr"])
    if int(row["batch_size"]) != point["batch_size"]:
        found["batch_size"] = (int(row["batch_size"]), point["batch_size"])
    return found


def _at_point(sweep: pd.DataFrame, arch: str, task: str, point: dict) -> pd.DataFrame:
    rows = sweep[(sweep["arch"] == arch) & (sweep["task"] == task)]
    same = (rows["start_token"].astype(bool) == point["start_token"]) & (
        rows["batch_size"] == point["batch_size"]
    )
    same &= (rows["lr"].astype(float) - point["lr"]).abs() <= 1e-12 * max(1.0, point["lr"])
    if point["block"] is not None:
        same &= rows["block"] == point["block"]
    return rows[same]


def config_overrides(
    sweeps: dict[str, pd.DataFrame],
    configured: dict[tuple[str, str], dict],
    blocks: dict[str, dict[str, dict]],
) -> dict[str, list[dict]]:
    """Per sweep table (name -> table), every selected point the config does not train:
    ``configured`` maps (arch, task) to :func:`configured_point`, ``blocks`` an
    architecture to its family's ``sweep.blocks``. Each entry: arch, task, ``differs``
    (setting -> (selected, configured)), ``at_config`` (the table's row at the config's
    point, or None) and ``selected_by`` (the other tables whose selected point for the
    pair is the config's)."""
    found: dict[str, list[dict]] = {}
    for name, sweep in sweeps.items():
        for _, row in sweep[sweep["selected"].map(_true)].iterrows():
            key = (row["arch"], row["task"])
            if key not in configured:
                continue
            point = configured[key]
            differs = _differs(row, point, blocks.get(row["arch"], {}))
            if not differs:
                continue
            at_config = _at_point(sweep, *key, point)
            selected_by = [
                other
                for other, table in sweeps.items()
                if other != name
                and not (picked := _at_point(table, *key, point)).empty
                and _true(picked["selected"].iloc[0])
            ]
            found.setdefault(name, []).append(
                {
                    "arch": key[0],
                    "task": key[1],
                    "differs": differs,
                    "at_config": None if at_config.empty else at_config.iloc[0],
                    "selected_by": selected_by,
                }
            )
    return found
