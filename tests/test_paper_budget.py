"""Whether the paper's step budget gets a slow pair to the learned threshold, from its
learnability curve: the step it got there, or its best accuracy and late slope."""

import math

import numpy as np
import pandas as pd

from statelayers.report.learnability import budget_outcomes, late_slope


def curve(arch, accuracy, cap=20000, every=500):
    steps = np.arange(every, cap + 1, every)
    return pd.DataFrame(
        {"arch": arch, "task": "s3", "cap": cap, "step": steps, "validation_token_accuracy": accuracy(steps)}
    )


def test_the_late_slope_is_the_least_squares_trend_of_the_last_2000_steps_per_1000():
    rising = curve("mamba", lambda s: 0.3 + 0.02 * s / 1000)
    assert math.isclose(late_slope(rising), 0.02, rel_tol=1e-9)
    noisy = rising.assign(
        validation_token_accuracy=rising["validation_token_accuracy"] + 0.01 * (-1) ** rising["step"]
    )
    assert abs(late_slope(noisy) - 0.02) < 0.01  # one noisy check does not set it
    flat_late = curve("mamba", lambda s: np.minimum(0.3 + 0.02 * s / 1000, 0.6))
    assert abs(late_slope(flat_late)) < 1e-12


def test_a_pair_reaching_the_threshold_within_the_budget_says_where_and_one_that_does_not_its_best():
    table = pd.DataFrame(
        [
            {"arch": "mamba", "task": "s3", "cap": 20000},
            {"arch": "transformer", "task": "s3", "cap": 20000},
            {"arch": "lstm", "task": "s3", "cap": 600},  # a short run says nothing of the budget
        ]
    )
    curves = pd.concat(
        [
            curve("mamba", lambda s: np.minimum(0.3 + 0.05 * s / 1000, 1.0)),  # 0.95 at step 13 000
            curve("transformer", lambda s: 0.3 + 0.01 * s / 1000),
        ]
    )
    outcomes = budget_outcomes(table, curves, 20000).set_index("arch")
    assert list(outcomes.index) == ["mamba", "transformer"]
    assert outcomes.loc["mamba", "reached"] and outcomes.loc["mamba", "steps_to_95"] == 13000
    assert not outcomes.loc["transformer", "reached"]
    assert math.isclose(outcomes.loc["transformer", "best_val_accuracy"], 0.5)
    assert math.isclose(outcomes.loc["transformer", "slope_per_1000"], 0.01, rel_tol=1e-9)
    # Within a smaller budget the same curves say the Mamba run had not got there yet.
    assert not budget_outcomes(table, curves, 10000).set_index("arch").loc["mamba", "reached"]
