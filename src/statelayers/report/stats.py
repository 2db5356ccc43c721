"""Seed-level summaries: means with bootstrap confidence intervals, and layer-profile shapes.

Every comparison in this study is over training seeds, so the unit of resampling is the
seed: a table row per (configuration, seed) is reduced to the mean over seeds and a
percentile bootstrap interval (``scipy.stats.bootstrap``). With few seeds the interval
is wide by construction (two seeds give at most their range): that is the honest
uncertainty of such a run, not a defect to tune away.

Layer profiles use the blocks only (layer >= 1; layer 0 is the embedding), so block
``i`` here is the paper's ``L{i-1}``:

``first_layer_95``
    the first block whose probe accuracy reaches 95 % of the run's best block.
``late_concentration``
    last block's accuracy minus the mean of the earlier blocks: large when the state
    becomes readable only at the end (a "jump"), near zero when it is readable early.

The same two shapes are computed on every per-layer baseline difference the probe table
has (:data:`PROFILE_GAINS`), prefixed with its name: e.g. ``gain_over_untrained_first_layer_95``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats


@dataclass(frozen=True)
class BootstrapConfig:
    confidence: float = 0.95
    resamples: int = 9999
    seed: int = 0


def mean_ci(
    values: Sequence[float], config: BootstrapConfig = BootstrapConfig()
) -> tuple[float, float, float]:
    """(mean, low, high): percentile bootstrap interval of the mean; NaN bounds for one value."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    if len(values) < 2:
        return mean, float("nan"), float("nan")
    if np.ptp(values) == 0:
        return mean, mean, mean
    result = stats.bootstrap(
        (values,),
        np.mean,
        confidence_level=config.confidence,
        n_resamples=config.resamples,
        method="percentile",
        rng=np.random.default_rng(config.seed),
    )
    return mean, float(result.confidence_interval.low), float(result.confidence_interval.high)


def summarize(
    frame: pd.DataFrame, keys: list[str], values: list[str], config: BootstrapConfig = BootstrapConfig()
) -> pd.DataFrame:
    """Long table: one row per (keys, value column) with mean, ci_low, ci_high and n_seeds."""
    rows = []
    for key, group in frame.groupby(keys, sort=True):
        for value in values:
            mean, low, high = mean_ci(group[value].dropna().to_numpy(), config)
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

    - ``first_layer_95``: the first block whose probe accuracy reaches 95 % of the best block's;
    - ``late_concentration``: last block's accuracy minus the mean of the earlier blocks;
    - ``best_block_accuracy``, ``last_block_accuracy``;
    - the same two shapes on each of :data:`PROFILE_GAINS` the table has (e.g.
      ``gain_over_untrained_first_layer_95``, NaN when no block gains, and
      ``gain_over_untrained_late_concentration``).
    """
    blocks = probes[(probes["split"] == "probe") & (probes["layer"] >= 1)]
    rows = []
    for (arch, task, seed, target), run in blocks.groupby(["arch", "task", "seed", "target"]):
        run = run.set_index("layer").sort_index()
        accuracy = run["probe_accuracy"]
        row = {"arch": arch, "task": task, "seed": seed, "target": target, **_shape(accuracy)}
        row |= {"best_block_accuracy": float(accuracy.max()), "last_block_accuracy": float(accuracy.iloc[-1])}
        for gain in (g for g in PROFILE_GAINS if g in run):
            row |= {f"{gain}_{name}": value for name, value in _shape(run[gain]).items()}
        rows.append(row)
    return pd.DataFrame(rows)


def _shape(by_layer: pd.Series) -> dict[str, float]:
    best = by_layer.max()
    reached = by_layer.to_numpy() >= 0.95 * best
    return {
        "first_layer_95": int(by_layer.index[np.argmax(reached)]) if best > 0 else float("nan"),
        "late_concentration": float(by_layer.iloc[-1] - by_layer.iloc[:-1].mean()),
    }


def summary_tables(
    behaviour: pd.DataFrame, probes: pd.DataFrame, config: BootstrapConfig
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
