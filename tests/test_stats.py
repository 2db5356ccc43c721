"""Seed-level intervals (their coverage at the study's seed counts) and profile-shape metrics."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from statelayers.report.stats import (
    PROFILE_GAINS,
    IntervalConfig,
    crossing,
    flip_confidence,
    mean_ci,
    peak_position,
    profile_shapes,
    rounding_sd,
    seeds_to_decide,
    summarize,
)
from study_config import interval_config

STATISTICS = interval_config()


def test_interval_contains_the_mean_and_narrows_with_more_seeds():
    rng = np.random.default_rng(0)
    few, many = rng.normal(0.7, 0.05, 4), rng.normal(0.7, 0.05, 64)
    m1, lo1, hi1 = mean_ci(few, STATISTICS)
    m2, lo2, hi2 = mean_ci(many, STATISTICS)
    assert lo1 <= m1 <= hi1 and lo2 <= m2 <= hi2
    assert hi2 - lo2 < hi1 - lo1
    assert lo2 < 0.7 < hi2


def test_one_value_has_no_interval_and_a_continuous_constant_has_zero_width():
    assert mean_ci([0.5], STATISTICS)[0] == 0.5 and math.isnan(mean_ci([0.5], STATISTICS)[1])
    assert mean_ci([1.0, 1.0, 1.0], STATISTICS) == (1.0, 1.0, 1.0)


def test_the_interval_is_students_t():
    values = [0.6, 0.7, 0.8]
    mean, low, high = mean_ci(values, STATISTICS)
    half = stats.t.ppf(0.975, 2) * np.std(values, ddof=1) / math.sqrt(3)
    assert math.isclose(mean, 0.7) and math.isclose(high - mean, half) and math.isclose(mean - low, half)


def test_zero_spread_on_a_grid_is_not_certainty():
    """Three seeds agreeing on one block: sd floored at a rounding error's, 1/sqrt(12)."""
    assert math.isclose(rounding_sd(1.0), 1 / math.sqrt(12))
    assert math.isclose(rounding_sd(1.0, terms=2), 1 / math.sqrt(6))
    mean, low, high = mean_ci([1, 1, 1], STATISTICS, sd_floor=rounding_sd(1.0))
    half = stats.t.ppf(0.975, 2) / math.sqrt(12) / math.sqrt(3)
    assert mean == 1 and math.isclose(high - 1, half) and 0.25 < low < 0.5
    five = mean_ci([1] * 5, STATISTICS, sd_floor=rounding_sd(1.0))
    assert 0.5 < five[1] < 1 < five[2] < 1.5
    spread = [0, 1, 2]  # a real spread larger than the floor is used as it is
    assert mean_ci(spread, STATISTICS, sd_floor=rounding_sd(1.0)) == mean_ci(spread, STATISTICS)


def test_summary_intervals_of_layer_positions_carry_the_rounding_floor():
    frame = pd.DataFrame({"arch": ["a"] * 3, "seed": [0, 1, 2], "first_layer_95": [4, 4, 4], "x": [4, 4, 4]})
    table = summarize(frame, ["arch"], ["first_layer_95", "x"], STATISTICS).set_index("metric")
    assert table.loc["first_layer_95", "ci_low"] < 4 < table.loc["first_layer_95", "ci_high"]
    assert table.loc["x", "ci_low"] == table.loc["x", "ci_high"] == 4


DRAWS = 2000
DISTRIBUTIONS = {  # name: (sampler, true mean)
    "normal": (lambda rng, shape: rng.normal(0.7, 0.05, shape), 0.7),
    "gamma(9), skewness 2/3": (lambda rng, shape: rng.gamma(9.0, 0.01, shape), 0.09),
}


def coverage(values, true_mean, interval):
    lows, highs = interval(values)
    return float(np.mean((lows <= true_mean) & (true_mean <= highs)))


def t_interval(values):
    rows = [mean_ci(row, STATISTICS) for row in values]
    return np.array([r[1] for r in rows]), np.array([r[2] for r in rows])


def percentile_bootstrap(values, resamples=999, seed=0):
    """The interval the claims used before: percentile bootstrap of the mean over seeds."""
    index = np.random.default_rng(seed).integers(0, values.shape[1], (resamples, values.shape[1]))
    means = values[:, index].mean(axis=2)
    return np.quantile(means, 0.025, axis=1), np.quantile(means, 0.975, axis=1)


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_the_interval_covers_the_true_mean_at_the_studys_seed_counts(distribution, n):
    """95 % nominal: the t interval covers >= 93 % of 2000 draws of n seeds; the
    percentile bootstrap on the same draws covers under 90 % (75-84 % measured).
    Elsewhere t's coverage is at or under 93 % (benchmarks/interval_coverage.csv:
    beta(8, 2), skewness -0.83, 93.4 / 92.8 %; skewness 1, 93.9 / 93.1 %; 1.75, 92.1 /
    91.1 %), too close to the line for a 2000-draw test to decide."""
    sampler, true_mean = DISTRIBUTIONS[distribution]
    values = sampler(np.random.default_rng(n), (DRAWS, n))
    t_coverage = coverage(values, true_mean, t_interval)
    bootstrap_coverage = coverage(values, true_mean, percentile_bootstrap)
    print(f"{distribution}, n={n}: t {t_coverage:.3f}, percentile bootstrap {bootstrap_coverage:.3f}")
    assert t_coverage >= 0.93
    assert bootstrap_coverage < 0.90


def test_the_interval_under_covers_strong_skew_as_documented():
    """Exponential seeds (skewness 2): t covers about 88 %, still above the bootstrap."""
    values = np.random.default_rng(0).exponential(1.0, (DRAWS, 3))
    t_coverage, bootstrap_coverage = (coverage(values, 1.0, f) for f in (t_interval, percentile_bootstrap))
    assert 0.85 < t_coverage < 0.92 and bootstrap_coverage < t_coverage


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


PAPER_SHAPES = {  # embedding, then blocks 1..4: the shapes the paper's words describe
    "jump at the last block": [0.5, 0.55, 0.60, 0.71, 1.0],  # Mamba on Parity
    "gradual rise": [0.5, 0.55, 0.76, 0.98, 1.0],  # Transformer on Parity
    "early saturation": [0.5, 1.0, 1.0, 1.0, 1.0],  # Transformer on Dyck
}


def test_the_95_crossing_orders_the_papers_three_shapes_as_its_words_do():
    """A jump lies in the last block, a gradual rise inside the profile, early saturation
    before block 1 ends; each crossing rounds up to the whole block that first reaches 95 %."""
    frame = pd.DataFrame(
        [
            row
            for i, profile in enumerate(PAPER_SHAPES.values())
            for row in probe_rows(f"a{i}", "t", 0, profile)
        ]
    )
    shapes = profile_shapes(frame).set_index("arch")["crossing_95"]
    jump, gradual, early = shapes["a0"], shapes["a1"], shapes["a2"]
    assert 3.5 < jump <= 4 and 2 < gradual < 3 and 0 < early <= 1
    assert jump > gradual + 0.5 and gradual > early + 0.5  # apart by more than the half-block margin
    assert math.isclose(jump, 3 + (0.95 - 0.71) / (1.0 - 0.71))
    assert math.isclose(gradual, 2 + (0.95 - 0.76) / (0.98 - 0.76))
    assert math.isclose(early, (0.95 - 0.5) / (1.0 - 0.5))
    first = profile_shapes(frame).set_index("arch")["first_layer_95"]
    assert (np.ceil(shapes) == first).all()


def test_the_crossing_is_at_the_embedding_when_the_embedding_already_reads_the_state():
    by_layer = pd.Series([0.96, 0.97, 1.0, 1.0], index=[0, 1, 2, 3])
    assert crossing(by_layer, 0.95) == 0.0
    assert math.isnan(crossing(pd.Series([0.5, 0.6], index=[0, 1]), 0.95))


def test_a_peak_between_blocks_leans_towards_its_larger_neighbour():
    assert peak_position(pd.Series([0.1, 0.5, 0.9, 0.5, 0.1], index=range(1, 6))) == 3.0
    leaning = peak_position(pd.Series([0.1, 0.5, 0.9, 0.8, 0.1], index=range(1, 6)))
    assert 3.0 < leaning < 3.5
    assert peak_position(pd.Series([0.1, 0.2, 0.9], index=[1, 2, 3])) == 3.0  # at the end
    assert peak_position(pd.Series([0.5, 0.5, 0.5], index=[1, 2, 3])) == 1.0  # flat: the first


def test_the_flip_confidence_is_where_the_interval_touches_the_edge():
    values = np.array([0.031, 0.036, 0.040, 0.029])
    edge = 0.01
    sd, n = values.std(ddof=1), len(values)
    flip = flip_confidence(values.mean() - edge, sd, n)
    below, above = IntervalConfig(flip - 1e-6), IntervalConfig(flip + 1e-6)
    assert mean_ci(values, below)[1] > edge > mean_ci(values, above)[1]
    assert flip_confidence(0.0, sd, n) == 0.0 and flip_confidence(0.1, 0.0, n) == 1.0


def test_the_planning_figure_is_the_fewest_seeds_whose_interval_clears_the_edge():
    config = STATISTICS
    distance, sd = 0.02, 0.03
    n = seeds_to_decide(distance, sd, config, smallest=3)
    half = lambda k: stats.t.ppf(0.975, k - 1) * sd / math.sqrt(k)  # noqa: E731
    assert half(n) < distance <= half(n - 1)
    assert seeds_to_decide(distance, 0.0, config, smallest=3) == 3
    assert seeds_to_decide(0.0, sd, config, smallest=3) is None
    assert seeds_to_decide(1e-4, 1.0, config, smallest=3, largest=50) is None


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
    table = summarize(frame, ["arch"], ["x"], STATISTICS).set_index("arch")
    assert table.loc["a", "mean"] == 2.0 and table.loc["a", "n_seeds"] == 2
    assert table.loc["b", "n_seeds"] == 1 and math.isnan(table.loc["b", "ci_low"])
