"""The flip confidence (statelayers.report.stats.flip_confidence) of every gated sub-claim of
finding 1 in the kept claims checks, recovered from their means, intervals and n: how far
each sat from changing status, under the fragile band the claims check now applies.

Usage: ``python benchmarks/stability/fragility.py [FOLDER ...]`` (default: every folder here).
Finding 1's sub-claims are unchanged by the later rules, so its verdict is read the same way.
"""

import math
import sys
from pathlib import Path

import pandas as pd
from scipy import stats

from statelayers.report.claims.engine import FRAGILE_BAND
from statelayers.report.stats import flip_confidence

HERE = Path(__file__).resolve().parent


def finding_1(folder: Path) -> pd.DataFrame:
    subclaims = pd.read_csv(folder / "subclaims.csv")
    rows = subclaims[(subclaims["reading"] == "gated") & (subclaims["finding"] == 1)].copy()
    multiplier = stats.t.ppf(0.975, rows["n"] - 1)
    rows["sd"] = (rows["ci_high"] - rows["mean"]) * rows["n"].map(math.sqrt) / multiplier
    edge = rows["bound"] - rows["margin"].where(rows["kind"] == "at_least", -rows["margin"])
    rows["flip_confidence"] = [
        flip_confidence(m - e, sd, n) for m, e, sd, n in zip(rows["mean"], edge, rows["sd"], rows["n"])
    ]
    low, high = FRAGILE_BAND
    rows["fragile"] = rows["flip_confidence"].between(low, high, inclusive="right")
    return rows[["subclaim", "mean", "ci_low", "ci_high", "status", "flip_confidence", "fragile"]]


for folder in [Path(p) for p in sys.argv[1:]] or sorted(p for p in HERE.iterdir() if p.is_dir()):
    print(f"{folder.name}:")
    print(finding_1(folder).to_string(index=False, float_format=lambda v: f"{v:+.4f}"))
