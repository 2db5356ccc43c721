"""Means over seeds with Student-t intervals, and the shape of every layer profile."""

import pandas as pd

from statelayers import console, files
from statelayers.report.stats import IntervalConfig, summary_tables

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
tables = summary_tables(
    pd.read_csv(sm.input.behaviour), pd.read_csv(sm.input.probes), IntervalConfig(**sm.params.statistics)
)
for name, table in tables.items():
    files.write_csv(table, sm.output[name])
