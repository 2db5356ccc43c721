"""Conv1D attribution, the comparison: what Mamba's short causal convolution contributes, per task.

Two ablations, both setting every mixer's Conv1D to the identity
(:func:`statelayers.models.tagger.make_conv_identity`, which acts on the weights and hence on
every execution path):

``noconv_trained``
    the ``mamba_noconv`` / ``mamba2_noconv`` variant, trained from scratch with the
    family's settings, seeds and data (the paper's measurement);
``noconv_inference``
    the trained family model with its Conv1D replaced at inference time: how much the
    trained solution relies on it.

For Mamba-2 the convolution runs over the concatenated ``x``, ``B`` and ``C``
projections, so the identity removes the local mixing of the SSM input and of its
input-dependent ``B``/``C`` alike; for Mamba-1 it acts on ``x`` only.

Comparison per (family, task): the difference in token accuracy (percentage points,
mean over evaluation lengths) of each ablation minus the family model, paired by seed;
its mean with a Student-t CI over seeds, a paired t-test over seeds (``scipy.stats.
ttest_rel``), and Holm's correction over every comparison in the table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from statelayers.models.registry import NO_CONV
from statelayers.report.stats import IntervalConfig, mean_ci

VARIANTS = ("conv", "noconv_trained", "noconv_inference")


def conv1d_table(behaviour: pd.DataFrame, inference: pd.DataFrame) -> pd.DataFrame:
    """Long table (family, task, seed, variant, eval_length, token_accuracy, sequence_accuracy)
    from the behaviour table (family models and trained no-conv variants) and the inference ablations."""
    columns = ["task", "seed", "eval_length", "token_accuracy", "sequence_accuracy"]
    families = set(inference["arch"])
    parts = [
        behaviour[behaviour["arch"].isin(families)].assign(family=lambda f: f["arch"], variant="conv"),
        inference.assign(family=lambda f: f["arch"], variant="noconv_inference"),
    ]
    noconv = behaviour[behaviour["arch"].isin(NO_CONV)]
    parts.append(noconv.assign(family=noconv["arch"].map(NO_CONV), variant="noconv_trained"))
    return pd.concat([part[["family", "variant", *columns]] for part in parts], ignore_index=True)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN and is not counted)."""
    p = np.asarray(p_values, dtype=float)
    valid = np.flatnonzero(~np.isnan(p))
    order = valid[np.argsort(p[valid])]
    adjusted = np.full_like(p, np.nan)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, (len(order) - rank) * p[index])
        adjusted[index] = min(1.0, running)
    return adjusted


def per_seed_differences(table: pd.DataFrame) -> pd.DataFrame:
    """Per (family, task, variant, seed): ablation minus the family model, in percentage
    points of token accuracy averaged over evaluation lengths."""
    mean = table.groupby(["family", "task", "variant", "seed"])["token_accuracy"].mean().unstack("variant")
    rows = []
    for variant in VARIANTS[1:]:
        if variant in mean:
            diff = (100 * (mean[variant] - mean["conv"])).dropna().rename("difference_pp")
            rows.append(diff.reset_index().assign(variant=variant))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def conv1d_summary(table: pd.DataFrame, config: IntervalConfig) -> pd.DataFrame:
    """One row per (family, task, variant): mean difference (pp) [95 % CI], paired t-test
    over seeds, Holm-adjusted p-value and ``significant`` (adjusted p < 1 - confidence)."""
    rows = []
    for (family, task, variant), group in per_seed_differences(table).groupby(["family", "task", "variant"]):
        diff = group.sort_values("seed")["difference_pp"].to_numpy()
        mean, low, high = mean_ci(diff, config)
        # ttest_rel(ablated, conv) equals a one-sample t-test of the paired differences.
        p = float(stats.ttest_1samp(diff, 0.0).pvalue) if len(diff) > 1 and np.ptp(diff) > 0 else float("nan")
        rows.append(
            {
                "family": family,
                "task": task,
                "variant": variant,
                "difference_pp": mean,
                "ci_low": low,
                "ci_high": high,
                "n_seeds": len(diff),
                "p_value": p,
            }
        )
    summary = pd.DataFrame(rows)
    if summary.empty:
        return summary
    summary["p_holm"] = holm(summary["p_value"].to_numpy())
    summary["significant"] = summary["p_holm"] < 1 - config.confidence
    return summary
