"""Bootstrap summaries and profile-shape metrics on hand-made tables."""

import math

import numpy as np
import pandas as pd
import pytest

from statelayers.report.stats import PROFILE_GAINS, BootstrapConfig, mean_ci, profile_shapes, summarize


def test_interval_contains_the_mean_and_narrows_with_more_seeds():
    rng = np.random.default_rng(0)
    few, many = rng.normal(0.7, 0.05, 4), rng.normal(0.7, 0.05, 64)
    m1, lo1, hi1 = mean_ci(few)
    m2, lo2, hi2 = mean_ci(many)
    assert lo1 <= m1 <= hi1 and lo2 <= m2 <= hi2
    assert hi2 - lo2 < hi1 - lo1
    assert lo2 < 0.7 < hi2


def test_degenerate_inputs():
    assert mean_ci([0.5])[0] == 0.5 and math.isnan(mean_ci([0.5])[1])
    assert mean_ci([1.0, 1.0, 1.0]) == (1.0, 1.0, 1.0)


def test_two_seeds_give_at_most_their_range():
    mean, low, high = mean_ci([0.6, 0.8], BootstrapConfig(resamples=999))
    assert math.isclose(mean, 0.7) and 0.6 <= low <= high <= 0.8


def probe_rows(arch, task, seed, accuracies):
    return [
        {
            "arch": arch,
            "task": task,
            "seed": seed,
            "target": "labels",
            "split": "probe",
            "layer": layer,
            "probe_accuracy": acc,
        }
        for layer, acc in enumerate(accuracies)
    ]


def test_profile_shapes_tell_a_jump_from_a_gradual_rise():
    frame = pd.DataFrame(
        probe_rows("mamba", "parity", 0, [0.5, 0.55, 0.6, 0.71, 1.0])  # embedding, then blocks 1..4
        + probe_rows("transformer", "parity", 0, [0.5, 0.55, 0.76, 0.98, 1.0])
        + [{**r, "split": "test"} for r in probe_rows("mamba", "parity", 0, [1, 1, 1, 1, 1])]
    )
    shapes = profile_shapes(frame).set_index("arch")
    assert shapes.loc["mamba", "first_layer_95"] == 4
    assert shapes.loc["transformer", "first_layer_95"] == 3
    assert math.isclose(shapes.loc["mamba", "late_concentration"], 1.0 - (0.55 + 0.6 + 0.71) / 3)
    assert shapes.loc["mamba", "late_concentration"] > shapes.loc["transformer", "late_concentration"]
    assert shapes.loc["mamba", "best_block_accuracy"] == 1.0


@pytest.mark.parametrize("gain", PROFILE_GAINS)
def test_profile_shapes_on_a_gain_over_a_baseline(gain):
    """Accuracy saturates at block 1 but only block 4 beats the baseline: the gain
    profile is late-concentrated where the accuracy profile is flat."""
    rows = probe_rows("gru", "dyck", 0, [0.5, 1.0, 1.0, 1.0, 1.0])
    for row, baseline in zip(rows, [0.5, 1.0, 1.0, 0.9, 0.4]):
        row[gain] = row["probe_accuracy"] - baseline
    shapes = profile_shapes(pd.DataFrame(rows)).iloc[0]
    assert shapes["first_layer_95"] == 1 and shapes[f"{gain}_first_layer_95"] == 4
    assert math.isclose(shapes[f"{gain}_late_concentration"], 0.6 - 0.1 / 3)
    blind = pd.DataFrame(probe_rows("gru", "dyck", 0, [0.5] * 5)).assign(**{gain: 0.0})
    assert math.isnan(profile_shapes(blind).iloc[0][f"{gain}_first_layer_95"])


def test_summarize_is_per_key_and_metric():
    frame = pd.DataFrame({"arch": ["a", "a", "b"], "seed": [0, 1, 0], "x": [1.0, 3.0, 5.0]})
    table = summarize(frame, ["arch"], ["x"]).set_index("arch")
    assert table.loc["a", "mean"] == 2.0 and table.loc["a", "n_seeds"] == 2
    assert table.loc["b", "n_seeds"] == 1 and math.isnan(table.loc["b", "ci_low"])
