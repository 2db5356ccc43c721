"""Replace README.md's results section with the latest complete run in this directory.

The run is the Snakemake log (``.snakemake/log``) with the most jobs among those that
finished, the newest on ties: the full run, not a later partial rerun.
Usage: python tools/readme_results.py [README.md]
"""

import sys
from datetime import datetime
from pathlib import Path

import pandas as pd

from statelayers.readme import complete_run, replace_section, results_section

readme = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
runs = []
for log in sorted(Path(".snakemake/log").glob("*.snakemake.log")):
    found = complete_run(log.read_text(errors="ignore"))
    if found:
        runs.append((found[0], log.name, found[1]))
if not runs:
    sys.exit("no complete Snakemake run found under .snakemake/log")
jobs, name, elapsed = max(runs)
started = datetime.strptime(name[:17], "%Y-%m-%dT%H%M%S")
section = results_section(
    pd.read_csv("results/claims.csv"),
    pd.read_csv("results/tables/behaviour_summary.csv"),
    date=started.strftime("%Y-%m-%d"),
    run_time=f"{jobs} jobs, Snakemake wall time {elapsed} (h:mm:ss)",
)
readme.write_text(replace_section(readme.read_text(), section))
print(f"README results section from the run started {started} ({jobs} jobs, {elapsed})")
