"""The sweep picks a grid point per (architecture, task) from validation results only."""

import pandas as pd

from statelayers.sweep import sweep_table


def runs(points, task="s3"):
    """Per-run rows: ``points`` maps (lr, batch) to [(steps, reached, accuracy), ...] per seed."""
    return pd.DataFrame(
        [
            {
                "arch": "gru",
                "task": task,
                "seed": seed,
                "lr": lr,
                "batch_size": batch,
                "max_steps": 500,
                "target_accuracy": 0.99,
                "steps": steps,
                "reached": reached,
                "validation_token_accuracy": accuracy,
                "train_seconds": 1.0,
            }
            for (lr, batch), seeds in points.items()
            for seed, (steps, reached, accuracy) in enumerate(seeds)
        ]
    )


def selected(points):
    table = sweep_table(runs(points))
    assert table["selected"].sum() == 1
    row = table[table["selected"]].iloc[0]
    return row["lr"], row["batch_size"]


def test_one_row_per_grid_point_with_seeds_reached_and_means():
    table = sweep_table(runs({(0.001, 32): [(200, True, 0.995), (500, False, 0.6)]}))
    row = table.iloc[0]
    assert len(table) == 1
    assert (row["seeds"], row["reached"], row["steps"]) == (2, 1, 350.0)
    assert row["validation_token_accuracy"] == (0.995 + 0.6) / 2


def test_most_seeds_reaching_the_criterion_wins_over_accuracy():
    both = [(400, True, 0.991), (450, True, 0.992)]
    one = [(100, True, 0.999), (500, False, 0.98)]
    assert selected({(0.001, 32): both, (0.003, 32): one}) == (0.001, 32)


def test_then_the_fewest_steps_then_the_highest_accuracy():
    assert selected({(0.001, 32): [(400, True, 0.999)], (0.003, 32): [(150, True, 0.991)]}) == (0.003, 32)
    never = {(0.0001, 32): [(500, False, 0.40)], (0.0003, 32): [(500, False, 0.70)]}
    assert selected(never) == (0.0003, 32)


def test_an_exact_tie_goes_to_the_smaller_learning_rate_then_batch():
    same = [(200, True, 0.995)]
    assert selected({(0.003, 32): same, (0.001, 64): same, (0.001, 32): same}) == (0.001, 32)


def test_the_chosen_point_of_an_architecture_is_the_best_over_its_tasks_pooled():
    """s3 alone would pick 0.003 and parity alone 0.001; pooled, 0.001 reaches the
    criterion on both tasks and 0.003 on one only."""
    s3 = runs({(0.001, 32): [(400, True, 0.991)], (0.003, 32): [(150, True, 0.999)]}, "s3")
    parity = runs({(0.001, 32): [(500, True, 0.99)], (0.003, 32): [(500, False, 0.995)]}, "parity")
    table = sweep_table(pd.concat([s3, parity], ignore_index=True))
    picked = table[table["selected"]].set_index("task")["lr"].to_dict()
    assert picked == {"s3": 0.003, "parity": 0.001}
    assert set(table.loc[table["chosen"], "lr"]) == {0.001} and table["chosen"].sum() == 2
