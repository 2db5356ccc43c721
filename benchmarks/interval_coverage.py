"""Coverage of the claims check's interval at the study's seed counts, by skewness.

Draws ``--draws`` sets of n per-seed values from each distribution and counts how often
the 95 % interval covers the true mean: Student t (:func:`statelayers.report.stats.mean_ci`,
vectorised here) and the percentile bootstrap of the mean that the claims used before.
The suite asserts t's coverage at skewness 0 and 2/3 (tests/test_stats.py); this table
says where it stops holding.

    python benchmarks/interval_coverage.py --csv benchmarks/interval_coverage.csv
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy import stats

DISTRIBUTIONS = {  # name: (skewness, sampler, true mean)
    "normal": (0.0, lambda rng, shape: rng.normal(0.0, 1.0, shape), 0.0),
    "gamma(9)": (2 / 3, lambda rng, shape: rng.gamma(9.0, 1.0, shape), 9.0),
    "beta(8, 2)": (
        -0.83,
        lambda rng, shape: rng.beta(8.0, 2.0, shape),
        0.8,
    ),  # like accuracies near a ceiling
    "gamma(4)": (1.0, lambda rng, shape: rng.gamma(4.0, 1.0, shape), 4.0),
    "lognormal(0, 0.5)": (1.75, lambda rng, shape: rng.lognormal(0.0, 0.5, shape), float(np.exp(0.125))),
    "exponential": (2.0, lambda rng, shape: rng.exponential(1.0, shape), 1.0),
}


def coverages(
    values: np.ndarray, true_mean: float, confidence: float, resamples: int, rng
) -> tuple[float, float]:
    n = values.shape[1]
    mean, sd = values.mean(axis=1), values.std(axis=1, ddof=1)
    half = stats.t.ppf((1 + confidence) / 2, n - 1) * sd / np.sqrt(n)
    t_cover = np.mean(np.abs(mean - true_mean) <= half)
    means = values[:, rng.integers(0, n, (resamples, n))].mean(axis=2)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, tail, axis=1), np.quantile(means, 1 - tail, axis=1)
    return float(t_cover), float(np.mean((low <= true_mean) & (true_mean <= high)))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--draws", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--resamples", type=int, default=999)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--csv", help="write the table here")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for name, (skewness, sampler, true_mean) in DISTRIBUTIONS.items():
        for n in args.seeds:
            values = sampler(rng, (args.draws, n))
            t_cover, bootstrap_cover = coverages(values, true_mean, args.confidence, args.resamples, rng)
            rows.append(
                {
                    "distribution": name,
                    "skewness": round(skewness, 2),
                    "n_seeds": n,
                    "draws": args.draws,
                    "t_coverage": round(t_cover, 4),
                    "percentile_bootstrap_coverage": round(bootstrap_cover, 4),
                }
            )
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    if args.csv:
        table.to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
