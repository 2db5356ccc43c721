"""The learnability measurement reads one run's validation checks per pair, and trains
again only the pairs whose default run missed the criterion."""

from pathlib import Path

import pandas as pd
import yaml
from study_config import CONFIG

from statelayers.learnability import pair_checks, validation_checks
from statelayers.report.learnability import COLUMNS, TABLE_COLUMNS, study_budget, summary, with_study_budgets
from statelayers.settings import overlaid, train_settings
from statelayers.sweep import selected_settings

REPO = Path(__file__).resolve().parents[1]
BUDGET_TABLES = ["learnability", "learnability_mamba_parity", "learnability_mamba2_parity"]
"""The committed tables config.yaml's pair budgets come from, in order: a later table's row
replaces an earlier one's (the same pair measured again with its study block)."""
SCHEDULE_SWEEPS = [
    path
    for path in sorted((REPO / "benchmarks").glob("sweep*.csv"))
    if "decay_fraction" in pd.read_csv(path, nrows=0)
]
"""Committed schedule sweeps (statelayers.sweep.schedule_table): a selected budget and
schedule that got every seed to the criterion replaces the rule's for its pair."""


def measured_under(name: str) -> dict:
    """The config a committed learnability table was measured under: the overlay that names
    it (``learnability.name``), else config.yaml without its pair budgets, which the table
    itself gave (config/default_budget.yaml)."""
    for path in sorted((REPO / "config").glob("*.yaml")):
        overlay = yaml.safe_load(path.read_text()) or {}
        if overlay.get("learnability", {}).get("name") == name and path.name != "config.yaml":
            return overlaid(CONFIG, overlay)
    return overlaid(CONFIG, yaml.safe_load((REPO / "config" / "default_budget.yaml").read_text()))


def history(accuracies, every=50):
    """``train_log.csv`` rows: a logged step between checks (no validation columns), then a check."""
    rows = []
    for i, accuracy in enumerate(accuracies, start=1):
        rows.append({"step": every * i - every // 2, "loss": 1.0, "seconds": 2.0 * i - 1})
        rows.append(
            {
                "step": every * i,
                "loss": 1.0,
                "seconds": 2.0 * i,
                "validation_token_accuracy": accuracy,
                "validation_sequence_accuracy": accuracy / 2,
            }
        )
    return pd.DataFrame(rows)


def test_the_first_checks_at_the_thresholds_the_best_check_and_the_wall_time():
    checks = validation_checks(history([0.5, 0.96, 0.94, 0.991, 0.995]))
    assert list(checks["step"]) == [50, 100, 150, 200, 250]
    row = summary(checks, cap=6000, criterion=0.99)
    assert row == {
        "cap": 6000,
        "steps_to_95": 100,
        "steps_to_99": 200,
        "best_val_accuracy": 0.995,
        "wall_s": 10.0,
    }
    assert set(row) | {"arch", "task"} == set(COLUMNS)


def test_a_threshold_never_reached_is_left_empty():
    row = summary(validation_checks(history([0.3, 0.6, 0.93])), cap=600, criterion=0.99)
    assert row["steps_to_95"] is None and row["steps_to_99"] is None and row["best_val_accuracy"] == 0.93


def test_a_pair_that_reached_the_criterion_keeps_its_default_run_and_is_not_trained_again():
    meta = {"reached": True, "steps": 250, "training": {"max_steps": 600}}
    default = history([0.5, 0.96, 0.94, 0.991, 0.995])
    # No run inputs at all: a pair that needs no training never builds a model.
    checks, cap = pair_checks(meta, default, inputs=None, resume_path="none.pt")
    assert cap == 600
    pd.testing.assert_frame_equal(checks, validation_checks(default))


def test_a_pair_short_of_the_criterion_by_default_gets_one_and_a_half_times_its_steps_to_the_criterion():
    def budget(steps_to_95, steps_to_99, default_val_accuracy=0.90):
        row = pd.Series(
            {
                "steps_to_95": steps_to_95,
                "steps_to_99": steps_to_99,
                "default_val_accuracy": default_val_accuracy,
            }
        )
        return study_budget(row, default_steps=600, eval_every=50, criterion=0.99)

    assert budget(3050, 5450) == 8200  # 1.5 x 5450 = 8175 to the criterion, rounded up to the next check
    assert budget(2100, None) == 3150  # the criterion never reached: 1.5 x the steps to 0.95
    assert budget(100, 250) == 600  # never below the default
    assert budget(None, None) == 600  # never learned within the cap: more steps did not help
    # Learned but short of the criterion by the end of its default run: counted to the
    # criterion, so it ends above 0.95 with room.
    assert budget(1450, 2550, default_val_accuracy=0.968) == 3850
    # At the criterion by the end of its default run (its own schedule): keeps the default,
    # even where the long run's constant rate took longer.
    assert budget(1450, 2550, default_val_accuracy=0.991) == 600


def test_the_table_gains_each_default_runs_last_check_and_the_study_budget():
    table = pd.DataFrame(
        [("mamba2", "parity", 6000, 3050, 5450, 0.99, 1.0), ("gru", "s3", 600, 350, 400, 1.0, 1.0)],
        columns=COLUMNS,
    )
    trained = {"max_steps": 600, "eval_every": 50, "target_accuracy": 0.99}
    defaults = pd.DataFrame(
        [
            {"arch": "gru", "task": "s3", "default_val_accuracy": 1.0} | trained,
            {"arch": "mamba2", "task": "parity", "default_val_accuracy": 0.91} | trained,
        ]
    )
    out = with_study_budgets(table, defaults)
    assert list(out.columns) == TABLE_COLUMNS
    assert list(out["study_max_steps"]) == [8200, 600] and list(out["default_val_accuracy"]) == [0.91, 1.0]


def test_each_pair_is_budgeted_from_its_own_default_training():
    """A pair's default run may train longer than the shared budget (a pair budget) or stop
    at another criterion (an override): its study budget starts from its own settings."""
    table = pd.DataFrame([("gru", "s3", 6000, 900, None, 0.97, 1.0)], columns=COLUMNS)
    own = {"arch": "gru", "task": "s3", "max_steps": 1000, "eval_every": 100}
    reached = with_study_budgets(
        table, pd.DataFrame([own | {"default_val_accuracy": 0.97, "target_accuracy": 0.95}])
    )
    missed = with_study_budgets(
        table, pd.DataFrame([own | {"default_val_accuracy": 0.97, "target_accuracy": 0.99}])
    )
    assert list(reached["study_max_steps"]) == [1000]  # at its own criterion: its own budget
    assert list(missed["study_max_steps"]) == [1400]  # 1.5 x 900 steps to 0.95, to the next check


def test_the_committed_tables_budgets_follow_the_rule_and_config_takes_them():
    training = CONFIG["training"]
    budgets = {}
    for path in sorted((REPO / "benchmarks").glob("learnability*.csv")):
        if path.stem.endswith("_curves"):
            continue
        table = pd.read_csv(path)
        measured = measured_under(path.stem)
        own = [
            {
                key: train_settings(measured, arch, task)[key]
                for key in ("max_steps", "eval_every", "target_accuracy")
            }
            for arch, task in zip(table["arch"], table["task"])
        ]
        rule = with_study_budgets(
            table[COLUMNS], table[["arch", "task", "default_val_accuracy"]].join(pd.DataFrame(own))
        )
        assert list(rule["study_max_steps"]) == list(table["study_max_steps"]), path.name
        if path.stem in BUDGET_TABLES:
            budgets[path.stem] = {f"{r.arch}/{r.task}": r.study_max_steps for r in table.itertuples()}
    assert set(budgets) == set(BUDGET_TABLES)  # every table named is committed
    governing = {}
    for name in BUDGET_TABLES:
        governing.update(budgets[name])
    for path in SCHEDULE_SWEEPS:  # a three-seed schedule sweep's point replaces the rule's budget
        table = pd.read_csv(path)
        assert (table["seeds"] >= 3).all(), path.name
        point = selected_settings(table, {})["training"]
        governing.update(point.get("pair_budgets", {}))
        for pair, override in point["overrides"].items():
            arch, task = pair.split("/")
            trained = train_settings(CONFIG, arch, task)
            assert {key: trained[key] for key in override} == override, pair
    above_default = {pair: steps for pair, steps in governing.items() if steps > training["max_steps"]}
    assert training["pair_budgets"] == above_default
