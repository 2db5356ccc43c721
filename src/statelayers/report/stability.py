"""Verdict stability: which sub-claims two runs of the claims check decide differently.

Two runs that differ only in floating-point summation order (threads, BLAS, CPU) should
reach the same verdicts; where they do not, the sub-claims that moved are the ones a
reader should not lean on. Inputs are two ``subclaims.csv`` tables
(:class:`statelayers.report.claims.ClaimsCheck`) and their ``claims.csv`` verdicts.
"""

from __future__ import annotations

import pandas as pd

KEYS = ["finding", "reading", "subclaim"]


def _interval(row: pd.Series, suffix: str) -> str:
    mean, low, high = (row.get(f"{c}{suffix}") for c in ("mean", "ci_low", "ci_high"))
    return "" if pd.isna(mean) else f"{mean:+.3f} [{low:+.3f}, {high:+.3f}] n={int(row[f'n{suffix}'])}"


def _listed(rows: pd.DataFrame, **columns: pd.Series) -> pd.DataFrame:
    """``rows`` of a merged pair as the keys, ``columns``, then each run's interval."""
    return pd.DataFrame(
        {
            **{key: rows[key] for key in KEYS},
            **columns,
            "interval_a": rows.apply(_interval, axis=1, suffix="_a"),
            "interval_b": rows.apply(_interval, axis=1, suffix="_b"),
        }
    ).reset_index(drop=True)


def subclaim_differences(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """One row per sub-claim whose status differs (or that only one run has: status
    ``absent``): its keys, each run's status and interval."""
    merged = first.merge(second, on=KEYS, how="outer", suffixes=("_a", "_b"), indicator=True)
    merged[["status_a", "status_b"]] = merged[["status_a", "status_b"]].fillna("absent")
    moved = merged[merged["status_a"] != merged["status_b"]]
    return _listed(moved, status_a=moved["status_a"], status_b=moved["status_b"])


def mean_shifts(first: pd.DataFrame, second: pd.DataFrame, most: int = 5) -> pd.DataFrame:
    """The ``most`` sub-claims whose status held but whose mean moved furthest between the
    runs (``shift`` = mean_b - mean_a, never 0): how close the held statuses came to moving."""
    merged = first.merge(second, on=KEYS, suffixes=("_a", "_b"))
    held = merged[
        (merged["status_a"] == merged["status_b"]) & merged["mean_a"].notna() & merged["mean_b"].notna()
    ]
    held = held.assign(shift=held["mean_b"] - held["mean_a"]).query("shift != 0")
    held = held.reindex(held["shift"].abs().sort_values(ascending=False).index).head(most)
    return _listed(held, status=held["status_a"], shift=held["shift"].round(4))


def verdict_differences(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """finding, verdict_a, verdict_b for every finding whose verdict differs."""
    merged = first[["finding", "verdict"]].merge(
        second[["finding", "verdict"]], on="finding", how="outer", suffixes=("_a", "_b")
    )
    return merged[merged["verdict_a"] != merged["verdict_b"]].reset_index(drop=True)
