"""Seed-level summaries: means with Student-t confidence intervals, and layer-profile shapes.

Every comparison in this study is over training seeds, so the unit of the interval is
the seed: a table row per (configuration, seed) is reduced to the mean over seeds and
its Student-t interval (a paired difference is a per-seed difference, so the same
interval). For ``n`` per-seed values with mean ``m`` and standard deviation ``s``::

    m ± t_{n-1, (1+c)/2} · s / √n

What it guarantees: coverage of the true mean at the nominal level ``c`` whenever the
per-seed values are independent draws from a normal distribution, at every ``n >= 2``
(at n = 3 the multiplier is 4.30). Under skew it under-covers, mildly at moderate skew
(``benchmarks/interval_coverage.csv``, 20 000 draws, 95 % nominal, n = 3 / 5):
skewness 2/3 94.5 / 94.2 %, beta(8, 2) (skewness -0.83, like accuracies near a ceiling)
93.4 / 92.8 %, skewness 1 93.9 / 93.1 %, skewness 1.75 92.1 / 91.1 %, skewness 2
88.5 / 88.2 %. A percentile
bootstrap covers 75 / 84 % of normal draws: with few seeds it cannot reach outside the
seeds' range.

Discrete quantities: a value known only on a grid of step ``h`` (a layer position,
``h = 1``) that shows zero spread at three seeds is not certain. It is read as a
continuous quantity rounded to the grid, so its standard deviation is floored at the
rounding error's, ``h / √12`` for one rounded value and ``h / √6`` for the difference of
two (:func:`rounding_sd`). Three seeds that agree on one position give ``± 0.72``, five
``± 0.36``: agreement decides a half-block margin from four seeds on, as an exact sign
test would (3 of 3 agreeing has probability 1/8 by chance, 5 of 5 1/32). Three seeds
that agree on a one-block difference of two positions give ``1 ± 1.01``; that needs
six seeds (``1 ± 0.43``).

Layer profiles are read over the blocks (layer >= 1; layer 0 is the embedding), so block
``i`` here is the paper's ``L{i-1}``. With ``a_0`` the embedding's accuracy, ``a_1 .. a_B``
the blocks', ``best = max_{b >= 1} a_b`` and the level ``t = 0.95 · best``:

``crossing_95``
    where the profile first reaches ``t``, interpolated linearly between the first block
    ``b`` with ``a_b >= t`` and the layer before it::

        crossing_95 = (b - 1) + (t - a_{b-1}) / (a_b - a_{b-1})

    (``0`` when the embedding already reaches ``t``). A continuous position in ``[0, B]``
    that rounds up to ``first_layer_95``: a jump at the last block gives ``(B - 1, B]``,
    a gradual rise a value inside the profile, early saturation one below 1. It is what
    the layer-position sub-claims decide on, so their intervals reflect the spread of
    the seeds, not the rounding of a whole-block position.
``first_layer_95``
    the first block whose probe accuracy reaches ``t`` (whole blocks; reported only).
``late_concentration``
    last block's accuracy minus the mean of the earlier blocks: large when the state
    becomes readable only at the end (a "jump"), near zero when it is readable early.

A peak's position (the best probe block, the most necessary block) is continuous too:
:func:`peak_position` fits a parabola through the largest value and its two neighbours.

The same two shapes are computed on every per-layer baseline difference the probe table
has (:data:`PROFILE_GAINS`), prefixed with its name: e.g. ``gain_over_untrained_first_layer_95``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats


@dataclass(frozen=True)
class IntervalConfig:
    """How intervals are drawn: ``statistics`` of config/config.yaml is the one source of
    these values, so nothing here has a default."""

    confidence: float


INTERVAL_KIND = "Student t"
"""How :func:`mean_ci` builds its interval, as reported beside every verdict."""


def rounding_sd(step: float, terms: int = 1) -> float:
    """Standard deviation of the rounding error of a sum or difference of ``terms`` values
    rounded to a grid of ``step`` (independent uniform errors of variance ``step² / 12``)."""
    return step * math.sqrt(terms / 12)


def mean_ci(
    values: Sequence[float], config: IntervalConfig, sd_floor: float = 0.0
) -> tuple[float, float, float]:
    """(mean, low, high): Student-t interval of the mean; NaN bounds for one value.

    ``sd_floor``: the smallest standard deviation the values are taken to have (for
    values on a grid, :func:`rounding_sd`).
    """
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    n = len(values)
    if n < 2:
        return mean, float("nan"), float("nan")
    sd = max(float(values.std(ddof=1)), sd_floor)
    half = float(stats.t.ppf((1 + config.confidence) / 2, n - 1)) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def seeds_to_decide(
    distance: float, sd: float, config: IntervalConfig, smallest: int, largest: int = 1000
) -> int | None:
    """A planning figure: the fewest seeds ``n >= smallest`` at which an interval of the
    observed ``sd`` around a mean ``distance`` from a sub-claim's edge would no longer
    reach the edge, ``t_{n-1} · sd / √n < |distance|``; None where it takes more than
    ``largest`` (or the mean lies on the edge). It assumes the mean and sd stay as
    observed, which further seeds need not do."""
    if distance == 0:
        return None
    for n in range(max(smallest, 2), largest + 1):
        if float(stats.t.ppf((1 + config.confidence) / 2, n - 1)) * sd / math.sqrt(n) < abs(distance):
            return n
    return None


def flip_confidence(distance: float, sd: float, n: int) -> float:
    """The confidence level at which a Student-t interval of ``n`` values with this ``sd``,
    centred ``distance`` from an edge, just touches that edge: below it the interval stays
    on its side, above it the interval reaches across. A sub-claim changes status there
    (1 when the values do not vary, 0 on the edge, NaN below two values)."""
    if n < 2:
        return float("nan")
    if distance == 0:
        return 0.0
    if sd == 0:
        return 1.0
    return float(2 * stats.t.cdf(abs(distance) / (sd / math.sqrt(n)), n - 1) - 1)


def sd_floor_of(metric: str) -> float:
    """The standard-deviation floor of a per-seed metric: layer positions are whole blocks."""
    return rounding_sd(1.0) if metric.endswith("first_layer_95") else 0.0


def summarize(
    frame: pd.DataFrame, keys: list[str], values: list[str], config: IntervalConfig
) -> pd.DataFrame:
    """Long table: one row per (keys, value column) with mean, ci_low, ci_high and n_seeds."""
    rows = []
    for key, group in frame.groupby(keys, sort=True):
        for value in values:
            mean, low, high = mean_ci(group[value].dropna().to_numpy(), config, sd_floor_of(value))
            rows.append(
                {
                    **dict(zip(keys, key)),
                    "metric": value,
                    "mean": mean,
                    "ci_low": low,
                    "ci_high": high,
                    "n_seeds": int(group["seed"].nunique()),
                }
            )
    return pd.DataFrame(rows)


PROFILE_GAINS = ("selectivity", "gain_over_untrained", "gain_over_token")
"""Per-layer differences to a baseline (:mod:`statelayers.measure.probes`) whose profiles get shapes too."""


def profile_shapes(probes: pd.DataFrame) -> pd.DataFrame:
    """Per (arch, task, seed, target), over the blocks (layers >= 1) at the fit length:

    - ``crossing_95``: where the profile first reaches 95 % of the best block's accuracy,
      between whole layers (:func:`crossing`; the embedding is its starting point);
    - ``first_layer_95``: the first block whose probe accuracy reaches 95 % of the best block's;
    - ``late_concentration``: last block's accuracy minus the mean of the earlier blocks;
    - ``best_block_accuracy``, ``last_block_accuracy``;
    - the same two shapes on each of :data:`PROFILE_GAINS` the table has (e.g.
      ``gain_over_untrained_first_layer_95``, NaN when no block gains, and
      ``gain_over_untrained_late_concentration``).
    """
    fitted = probes[probes["split"] == "probe"]
    rows = []
    for (arch, task, seed, target), run in fitted.groupby(["arch", "task", "seed", "target"]):
        run = run.set_index("layer").sort_index()
        accuracy = run["probe_accuracy"]
        blocks = accuracy[accuracy.index >= 1]
        row = {"arch": arch, "task": task, "seed": seed, "target": target, **_shape(accuracy)}
        row |= {"best_block_accuracy": float(blocks.max()), "last_block_accuracy": float(blocks.iloc[-1])}
        for gain in (g for g in PROFILE_GAINS if g in run):
            row |= {f"{gain}_{name}": value for name, value in _shape(run[gain]).items()}
        rows.append(row)
    return pd.DataFrame(rows)


def _shape(by_layer: pd.Series) -> dict[str, float]:
    """The shapes of one profile indexed by layer (0, the embedding, where the table has it)."""
    blocks = by_layer[by_layer.index >= 1]
    best = blocks.max()
    if not best > 0:
        nan = float("nan")
        return {"crossing_95": nan, "first_layer_95": nan, "late_concentration": nan}
    return {
        "crossing_95": crossing(by_layer, LEVEL * best),
        "first_layer_95": int(blocks.index[np.argmax(blocks.to_numpy() >= LEVEL * best)]),
        "late_concentration": float(blocks.iloc[-1] - blocks.iloc[:-1].mean()),
    }


LEVEL = 0.95
"""The fraction of the best block's accuracy that :func:`crossing` and ``first_layer_95`` look for."""


def crossing(by_layer: pd.Series, level: float) -> float:
    """Where a profile (indexed by layer, 0 the embedding) first reaches ``level`` over its
    blocks, interpolated linearly from the layer before (module docstring); 0 when the
    embedding already reaches it, NaN when no block does."""
    values = by_layer.sort_index()
    layers, accuracy = values.index.to_numpy(), values.to_numpy(dtype=float)
    reached = np.flatnonzero((layers >= 1) & (accuracy >= level))
    if not len(reached):
        return float("nan")
    i = reached[0]
    if i == 0:  # no layer before the first block to interpolate from
        return float(layers[i])
    if accuracy[i - 1] >= level:  # the embedding already reads it
        return float(layers[i - 1])
    below, above = accuracy[i - 1], accuracy[i]
    return float(layers[i - 1] + (layers[i] - layers[i - 1]) * (level - below) / (above - below))


def peak_position(by_layer: pd.Series) -> float:
    """The position of a profile's largest value between whole layers: the vertex of the
    parabola through the largest value ``y_k`` and its neighbours,
    ``k + (y_{k-1} - y_{k+1}) / (2 (y_{k-1} - 2 y_k + y_{k+1}))``, which lies within half a
    layer of ``k``; ``k`` itself at either end of the profile or on a flat top."""
    values = by_layer.sort_index()
    y = values.to_numpy(dtype=float)
    k = int(np.argmax(y))
    layer = float(values.index[k])
    if k == 0 or k == len(y) - 1:
        return layer
    curvature = y[k - 1] - 2 * y[k] + y[k + 1]
    if curvature >= 0:
        return layer
    return layer + 0.5 * (y[k - 1] - y[k + 1]) / curvature


def summary_tables(
    behaviour: pd.DataFrame, probes: pd.DataFrame, config: IntervalConfig
) -> dict[str, pd.DataFrame]:
    """The seed-level summaries the workflow writes: behaviour, probes, profile shapes."""
    shapes = profile_shapes(probes)
    return {
        "behaviour": summarize(
            behaviour, ["arch", "task", "eval_length"], ["token_accuracy", "sequence_accuracy"], config
        ),
        "probes": summarize(
            probes,
            ["arch", "task", "target", "split", "eval_length", "layer"],
            [
                c
                for c in (
                    "probe_accuracy",
                    "majority_baseline",
                    "token_baseline",
                    "untrained_accuracy",
                    *PROFILE_GAINS,
                )
                if c in probes
            ],
            config,
        ),
        "profile_shapes": summarize(
            shapes,
            ["arch", "task", "target"],
            [c for c in shapes.columns if c not in ("arch", "task", "seed", "target")],
            config,
        ),
    }
