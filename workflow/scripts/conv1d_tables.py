"""Conv1D attribution table and its paired summary (rules: statelayers.report.conv1d)."""

import pandas as pd

from statelayers import console, files
from statelayers.report.conv1d import conv1d_summary, conv1d_table
from statelayers.report.stats import IntervalConfig

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
inference = pd.concat([pd.read_csv(path) for path in sm.input.inference], ignore_index=True)
table = conv1d_table(pd.read_csv(sm.input.behaviour), inference)
files.write_csv(table, sm.output.table)
files.write_csv(conv1d_summary(table, IntervalConfig(**sm.params.statistics)), sm.output.summary)
