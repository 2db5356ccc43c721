"""Print every verdict and sub-claim status that differs between two runs' claims checks.

Usage: python tools/compare_claims.py RESULTS_A RESULTS_B
(each a ``results`` directory with ``claims.csv`` and ``subclaims.csv``). Exits 0 and
says "identical" when nothing differs, 1 when something does. Either way it then lists the
sub-claims whose status held but whose mean moved furthest.
"""

import sys
from pathlib import Path

import pandas as pd

from statelayers.report.stability import mean_shifts, subclaim_differences, verdict_differences

if len(sys.argv) != 3:
    sys.exit(__doc__)
first, second = (Path(arg) for arg in sys.argv[1:])
verdicts = verdict_differences(pd.read_csv(first / "claims.csv"), pd.read_csv(second / "claims.csv"))
tables = [pd.read_csv(directory / "subclaims.csv") for directory in (first, second)]
subclaims = subclaim_differences(*tables)
shifts = mean_shifts(*tables)
print(f"A = {first}\nB = {second}")
if verdicts.empty and subclaims.empty:
    print(f"verdicts and sub-claim statuses identical ({len(tables[0])} sub-claims)")
else:
    print(f"\n{len(verdicts)} verdict(s) differ:")
    print(verdicts.to_string(index=False) if not verdicts.empty else "(none)")
    print(f"\n{len(subclaims)} sub-claim status(es) differ:")
    print(subclaims.to_string(index=False) if not subclaims.empty else "(none)")
print("\nlargest shifts of a mean among sub-claims whose status held (B - A):")
print(shifts.to_string(index=False) if not shifts.empty else "(none)")
sys.exit(0 if verdicts.empty and subclaims.empty else 1)
