"""The sweep picks a grid point per (architecture, task) from validation results only."""

import pandas as pd

from statelayers.sweep import schedule_table, selected_settings, sweep_table, variant_names


def runs(points, task="s3", max_steps=500):
    """Per-run rows: ``points`` maps (lr, batch) or (lr, batch, block, start token) to
    [(steps, reached, accuracy), ...] per seed."""
    return pd.DataFrame(
        [
            {
                "arch": "gru",
                "task": task,
                "seed": seed,
                "block": block,
                "start_token": start_token,
                "lr": lr,
                "batch_size": batch,
                "max_steps": max_steps,
                "target_accuracy": 0.99,
                "steps": steps,
                "reached": reached,
                "validation_token_accuracy": accuracy,
                "train_seconds": 1.0,
            }
            for (lr, batch, block, start_token), seeds in map(_point, points.items())
            for seed, (steps, reached, accuracy) in enumerate(seeds)
        ]
    )


def _point(item):
    key, seeds = item
    return (key + ("default", False) if len(key) == 2 else key), seeds


def selected(points, columns=("lr", "batch_size")):
    table = sweep_table(runs(points))
    assert table["selected"].sum() == 1
    row = table[table["selected"]].iloc[0]
    return tuple(row[column] for column in columns)


def test_one_row_per_grid_point_with_seeds_reached_and_means():
    table = sweep_table(runs({(0.001, 32): [(200, True, 0.995), (500, False, 0.6)]}))
    row = table.iloc[0]
    assert len(table) == 1
    assert (row["seeds"], row["reached"], row["steps"], row["sequences"]) == (2, 1, 350.0, 350.0 * 32)
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


def test_fewer_sequences_win_whatever_the_steps_so_batch_sizes_compete_fairly():
    """Batch 64 at 100 steps saw 6400 sequences; batch 32 at 150 steps saw 4800."""
    assert selected({(0.001, 64): [(100, True, 0.995)], (0.001, 32): [(150, True, 0.995)]}) == (0.001, 32)


def test_the_block_and_the_start_token_are_grid_dimensions_like_the_learning_rate():
    points = {
        (0.001, 32, "default", False): [(500, False, 0.80)],
        (0.001, 32, "default", True): [(500, False, 0.85)],
        (0.001, 32, "sequential", True): [(300, True, 0.99)],
        (0.003, 32, "sequential", False): [(500, False, 0.79)],
    }
    assert selected(points, ("block", "start_token", "lr")) == ("sequential", True, 0.001)
    assert len(sweep_table(runs(points))) == 4


def test_the_selected_points_become_config_keys_per_pair_and_a_plain_point_adds_no_model_option():
    blocks = {"gru": {"default": {}, "wide": {"hidden_size": 99}}}
    parity = sweep_table(
        runs(
            {
                (0.003, 64, "wide", True): [(200, True, 0.99)],
                (0.001, 32, "default", False): [(600, False, 0.9)],
            },
            "parity",
        )
    )
    s3 = sweep_table(runs({(0.001, 32, "default", False): [(300, True, 0.99)]}, "s3"))
    settings = selected_settings(pd.concat([parity, s3]), blocks)
    assert settings["training"]["overrides"] == {
        "gru/parity": {"lr": 0.003, "batch_size": 64},
        "gru/s3": {"lr": 0.001, "batch_size": 32},
    }
    assert settings["model"]["options"] == {"gru/parity": {"hidden_size": 99, "start_token": True}}


def schedule(max_steps, decay, seeds):
    """One sweep of the (0.001, 32) point under a schedule, as :func:`schedule_table` reads it."""
    return sweep_table(runs({(0.001, 32): seeds}, "parity", max_steps)).assign(decay_fraction=decay)


def test_a_schedule_sweep_takes_the_shorter_budget_only_where_as_many_seeds_reach_the_criterion():
    short = schedule(1200, 0.5, [(1100, True, 0.99), (1200, False, 0.985), (900, True, 0.99)])
    long = schedule(3000, 0.2, [(2500, True, 0.99), (2200, True, 0.99), (2900, True, 0.99)])
    table = schedule_table([short, long])
    assert len(table) == 2 and table["selected"].sum() == 1 and table["chosen"].sum() == 1
    assert table.loc[table["selected"], ["max_steps", "decay_fraction"]].values.tolist() == [[3000, 0.2]]
    every_seed = schedule(2400, 0.5, [(2000, True, 0.99), (1900, True, 0.99), (2350, True, 0.99)])
    table = schedule_table([every_seed, long])
    assert table.loc[table["selected"], ["max_steps", "decay_fraction"]].values.tolist() == [[2400, 0.5]]
    assert sorted(variant_names(table)) == ["2400 steps, decay 0.5", "3000 steps, decay 0.2"]


def test_a_schedule_sweeps_point_sets_the_pairs_budget_and_decay_besides_its_learning_rate():
    table = schedule_table(
        [
            schedule(2400, 0.5, [(2000, True, 0.99), (1900, True, 0.99), (2350, True, 0.99)]),
            schedule(3000, 0.5, [(2100, True, 0.99), (2200, True, 0.99), (2400, True, 0.99)]),
        ]
    )
    settings = selected_settings(table, {})
    assert settings["training"] == {
        "overrides": {"gru/parity": {"lr": 0.001, "batch_size": 32, "decay_fraction": 0.5}},
        "pair_budgets": {"gru/parity": 2400},
    }
    assert (
        "pair_budgets"
        not in selected_settings(sweep_table(runs({(0.001, 32): [(300, True, 0.99)]})), {})["training"]
    )


def test_a_schedule_that_leaves_a_seed_short_of_the_criterion_replaces_no_budget():
    table = schedule_table(
        [schedule(3000, 0.5, [(2800, True, 0.99), (2600, True, 0.99), (3000, False, 0.981)])]
    )
    assert table["selected"].all()
    settings = selected_settings(table, {})
    assert settings["training"] == {"overrides": {"gru/parity": {"lr": 0.001, "batch_size": 32}}}
